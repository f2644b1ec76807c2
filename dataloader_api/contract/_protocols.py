"""What a backend implements: ``Backend``, its ``WorkerPool`` and ``BatchStream``,
and its optional capabilities (the ``StatsSink`` it reports to is in ``_values``,
beside the ``MapWork.stats`` that holds it)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ._values import IterWork, MapWork, PoolSpec, StreamSpec

__all__ = [
    "CAPABILITIES",
    "Backend",
    "BatchStream",
    "Describes",
    "HasPoolSettings",
    "ReadsNatively",
    "WorkerPool",
]


@runtime_checkable
class BatchStream(Protocol):
    """The batches of one epoch, as an iterator that can be closed."""

    def __iter__(self) -> Iterator[Any]: ...

    def __next__(self) -> Any:
        """Return the next batch, raise its exception, or StopIteration at the end."""
        ...

    def close(self) -> None:
        """Stop starting jobs of this stream and drop its buffered batches."""
        ...


@runtime_checkable
class WorkerPool(Protocol):
    """A set of ``PoolSpec.num_threads`` worker threads that runs batch streams."""

    def map_batches(self, work: MapWork, stream: StreamSpec) -> BatchStream:
        """The batches of ``work``, run on the pool's threads as ``stream`` says."""
        ...

    def stream_batches(self, work: IterWork, stream: StreamSpec) -> BatchStream:
        """The batches of ``work``'s streams, drained on the pool's threads."""
        ...

    def close(self) -> None:
        """Start no job any more and end the threads once idle; idempotent, prompt,
        never waiting for a thread busy in user code. A stream started or read
        after it raises ``PoolClosedError``."""
        ...

    def join(self, timeout: float | None = None) -> bool:
        """Wait until every thread of the pool has ended (``timeout`` seconds at
        most, ``None`` for no limit); True if none is left."""
        ...


@runtime_checkable
class Backend(Protocol):
    """An execution engine, found through the ``dataloader_api.backends`` entry points.

    ``supports_items_in_parallel``: the backend honours
    ``PoolSpec.items_in_parallel > 1`` (``MapWork.getitem``); the loader
    rejects that option for a backend that declares False.

    Optional capabilities are the protocols below (``ReadsNatively``,
    ``HasPoolSettings``); the registry lists which ones a backend has, and the
    loader checks for them with ``isinstance``, never by probing attributes.
    """

    name: str
    supports_items_in_parallel: bool

    def create_pool(self, spec: PoolSpec) -> WorkerPool: ...


@runtime_checkable
class ReadsNatively(Protocol):
    """Optional: the backend reads the items of the ``dataloader_api.io`` datasets
    natively.

    ``open_reader(spec, concurrency)``: ``spec`` is a dataset's ``reader_spec()``
    (plain data: ``kind`` "files", "http" or "s3" and its options);
    ``concurrency`` is the loader's ``max_concurrency`` (reads in flight at
    most, over all threads). The reader it returns has ``start(locations,
    cancel)``, which starts a job's reads at once and returns a handle whose
    ``wait()`` gives each location's ``bytes`` or a failure record ``(kind,
    message, status, attempts, errno)`` that the dataset raises as the
    reference would (a location: ``bytes`` for a file's path, else ``str``);
    ``new_cancel()`` (a handle whose ``cancel()`` ends the reads in progress of
    one epoch); and ``counters()`` ((requests, retries, bytes, redirects,
    connections opened) so far; the last two may be left out). The loader
    starts a job's reads when the backend takes the job (``BatchJob.started``),
    and ``fetch`` waits for them.
    A reader that also has ``stream(location, size, cancel, expected)`` streams
    remote tar shards: one object of ``size`` bytes indexed with validator
    ``expected`` (its strong ETag or Last-Modified, or None); the handle's
    ``take(start, end)`` gives those bytes once they are there, or the failure
    record with the object's size now appended, where kind ``"changed"`` is
    another size and ``"replaced"`` (the message: the validator now) a first
    reply with another validator. A backend without it runs the reference.
    """

    def open_reader(self, spec: dict[str, Any], concurrency: int | None) -> Any: ...


@runtime_checkable
class HasPoolSettings(Protocol):
    """Optional: ``pool_settings()`` returns what ``create_pool`` reads besides its
    spec (an environment variable, say), as a hashable value.

    The loader keeps the pools of finished epochs idle for later loaders of the
    same backend and thread count; it gives one only to a loader for which
    ``pool_settings()`` returns an equal value (a backend without it: always
    equal). The pool's threads then run jobs of a later loader's epochs, after
    the ``thread_init`` of the loader that made it.
    """

    def pool_settings(self) -> Any: ...


#: The optional capabilities, by the name ``backends()`` reports them under.
@runtime_checkable
class Describes(Protocol):
    """Optional: ``describe()`` returns what a user should know about this
    build of the backend, as short strings by topic (``{"jpeg_decoding": ...}``);
    ``dataloader_api.backends(details=True)`` shows it. A build that is slower
    than it should be (a native part compiled without its fast path) says so
    here, with the fix."""

    def describe(self) -> Mapping[str, str]: ...


CAPABILITIES: dict[str, type] = {
    "describe": Describes,
    "open_reader": ReadsNatively,
    "pool_settings": HasPoolSettings,
}
