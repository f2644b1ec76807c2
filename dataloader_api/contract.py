"""The backend contract: the one module a backend author reads.

The common API decides *what* is loaded (the epoch plan: which indices form
which batch, in which order), wraps the user's dataset and collate function
into plain callables and owns every argument check and error message. A
backend decides only *how* those callables run on its threads.

A backend is an object with a ``create_pool`` method and its declared
capabilities (:class:`Backend`), registered under the entry-point group
``dataloader_api.backends``. The loader creates one :class:`WorkerPool` per
loader (``persistent_workers=True``) or per epoch from a :class:`PoolSpec`, and
asks it for one :class:`BatchStream` per epoch through
:meth:`WorkerPool.map_batches` (map-style datasets, the work as a
:class:`MapWork`) or :meth:`WorkerPool.stream_batches` (iterable datasets, an
:class:`IterWork`), each with the epoch's :class:`StreamSpec` (window,
ordering, timeout). Everything crosses the contract as these frozen values:
nothing is read from attributes hung on callables.

``dataloader_api.kit`` holds what Python backends share (exit registry,
waiting, the Python window and iterable streams, a thread pool); a backend may
use it or not, but never imports another backend.

Duties of every backend (the conformance suite checks each of them):

Bounded window
    At most ``StreamSpec.window`` batches of one stream are *started but not yet
    consumed* at any time: a job may start only while fewer than ``window``
    of the stream's batches have been started and not yet returned by
    ``__next__``. This holds behind a slow batch too: in ordered mode the
    batches finished after it wait in a reorder buffer and count against the
    window. For :meth:`WorkerPool.stream_batches` the window is split evenly:
    each of the ``n = IterWork.num_streams`` streams has at most
    ``max(1, window // n)`` batches started but not consumed.

Ordering
    ``StreamSpec.in_order=True``: batches come out in plan order
    (``BatchJob.position``), each job exactly once. ``in_order=False``: in
    completion order, same multiset, a slow batch does not hold back the others.

Errors
    An exception raised by ``fetch``, ``collate`` or a stream is raised by
    ``__next__`` for the batch it belongs to, as the same exception object (so
    its type, message and ``__traceback__`` with the user's frame survive).
    The stream stays usable: the next ``__next__`` returns the next batch (a
    failed iterable stream counts as exhausted). An exception raised by
    ``PoolSpec.thread_init`` is raised by ``create_pool`` or, at the latest,
    by the first ``__next__`` of every stream of that pool, before any batch;
    a thread whose ``thread_init`` raised runs no job.

Timeout
    With ``StreamSpec.timeout`` set, a ``__next__`` that waited ``timeout``
    seconds without its batch arriving raises the exception returned by
    ``StreamSpec.on_timeout(position)`` and closes the stream.

Waiting
    The consumer waits in slices short enough that ``KeyboardInterrupt`` and
    other signals are raised promptly (``threading`` waits do this in Python;
    native waits must release the interpreter and check signals between
    slices). A ``KeyboardInterrupt`` raised while waiting leaves the stream
    closable.

Shutdown
    ``BatchStream.close()`` and ``WorkerPool.close()`` are idempotent and
    return promptly (tens of milliseconds), whatever the jobs are doing: they
    never wait for a thread busy in user code. After they return no job of
    theirs *starts*; a job already running finishes on its own, and
    ``WorkerPool.close()`` ends each pool thread once it is idle.
    ``WorkerPool.join(timeout)`` is the explicit wait: it returns True once
    every thread of the pool has ended, False if some are still running after
    ``timeout`` seconds (``None``: no limit), waiting in slices so that
    ``KeyboardInterrupt`` is raised promptly. At
    interpreter exit, before finalization, every pool whose threads may still
    run is closed and its running jobs get up to ``DATALOADER_EXIT_TIMEOUT``
    seconds to return (a job inside native code must not take the interpreter
    back during finalization); then no pool thread enters the interpreter
    again. The process keeps its own exit code. A consumer on a
    non-main thread whose pool was closed that way waits until the process
    ends (as a daemon thread would), never raising into user code or ending
    its loop while the interpreter shuts down. Nothing a backend
    creates may keep the loader or the user's iterator alive (worker threads
    must not reference the :class:`BatchStream` object the user holds), so
    dropping the iterator frees it and closes it. Raise a delivered
    exception so that no frame of the backend keeps a reference to it
    (``try: raise error finally: del error``), and let idle pool threads run
    now and then (a wait with a timeout): on free-threaded builds an object a
    worker created (an exception) is freed by that worker once others drop it.

Attach once
    Each pool thread runs ``PoolSpec.thread_init(worker_id)`` once, on itself,
    before any job, and keeps one Python thread state for its whole life:
    a ``threading.local()`` set by a job is seen by later jobs on that thread.

Fork
    A process forked from the one that made a pool has none of its threads.
    The loader never calls a pool, stream or event loop there: the child's next
    batch of an inherited epoch raises ``RuntimeError``, and closing it does not
    reach the backend. A backend that frees its objects on its own (``__del__``,
    ``Drop``) must not wait for the parent's threads when that runs in a child;
    :func:`process_id` tells which process it is in, without a system call.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "Backend",
    "BatchJob",
    "BatchStream",
    "ImageWork",
    "IterWork",
    "MapWork",
    "PoolClosedError",
    "PoolSpec",
    "StatsSink",
    "StreamSpec",
    "WorkerPool",
    "process_id",
    "python_thread_stack_size",
]

_process_id = os.getpid()


def _after_fork_in_child() -> None:
    global _process_id
    _process_id = os.getpid()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class PoolClosedError(RuntimeError):
    """Every backend's error for a stream started or read after its pool closed."""


def process_id() -> int:
    """``os.getpid()``, kept up to date by ``os.register_at_fork`` (cheap per batch)."""
    return _process_id


@dataclass(frozen=True, slots=True)
class BatchJob:
    """One unit of work of the epoch plan.

    ``position`` is the batch's 0-based place in the epoch (plan order).
    ``indices`` is what ``fetch`` receives: a list of dataset indices when
    batching is on, a single index when ``batch_size=None``.
    """

    position: int
    indices: Any


@dataclass(frozen=True, slots=True)
class PoolSpec:
    """What a pool is built from.

    ``thread_init(worker_id)`` must run once on each pool thread, with
    ``worker_id`` in ``range(num_threads)``, before that thread runs any job:
    it installs what ``get_worker_info()`` returns on the thread and calls the
    user's ``worker_init_fn``.

    ``items_in_parallel`` above 1 is only ever passed to a backend whose
    ``Backend.supports_items_in_parallel`` is true (the loader rejects it for
    others); see ``MapWork.getitem``.

    ``stack_size``: bytes of stack each pool thread gets, by default what a
    ``threading.Thread`` started now would get (:func:`python_thread_stack_size`).
    A backend that starts its own threads must give them this: user items
    (NumPy's LU, deep recursion) need what they get on Python's threads.
    """

    num_threads: int
    thread_init: Callable[[int], None]
    name: str = "dataloader"
    items_in_parallel: int = 1
    stack_size: int = field(default_factory=lambda: python_thread_stack_size())

    def __post_init__(self) -> None:
        for name, value, least in (
            ("num_threads", self.num_threads, 1),
            ("items_in_parallel", self.items_in_parallel, 1),
            ("stack_size", self.stack_size, MIN_STACK_SIZE),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"PoolSpec.{name} must be an int >= {least}, got {value!r}")


# Rust's own default for its threads: a pool thread never gets less.
MIN_STACK_SIZE = 2 * 1024 * 1024
# glibc gives new threads RLIMIT_STACK's soft limit; where that is unlimited (or
# unknown) this is what our threads get instead of the platform's fallback.
UNLIMITED_STACK_SIZE = 8 * 1024 * 1024


def python_thread_stack_size() -> int:
    """The stack of a ``threading.Thread`` started now: ``threading.stack_size()``
    when the user set one, else the platform's default for new threads (on Linux,
    RLIMIT_STACK's soft limit, ``UNLIMITED_STACK_SIZE`` when unlimited); never less
    than ``MIN_STACK_SIZE``."""
    chosen = threading.stack_size()
    if not chosen:
        try:
            import resource
        except ImportError:  # not on Windows
            chosen = UNLIMITED_STACK_SIZE
        else:
            soft = resource.getrlimit(resource.RLIMIT_STACK)[0]
            chosen = UNLIMITED_STACK_SIZE if soft in (resource.RLIM_INFINITY, -1) else soft
    return max(int(chosen), MIN_STACK_SIZE)


def _timed_out(position: int) -> BaseException:
    return TimeoutError(f"timed out waiting for batch {position}")


@dataclass(frozen=True, slots=True)
class StreamSpec:
    """How one epoch's batches flow: the same for map-style and iterable epochs.

    ``window``: batches started but not yet consumed, at most (``num_workers *
    prefetch_factor`` for the loader). ``in_order``: plan order, else completion
    order. ``timeout``: seconds one ``__next__`` waits for its batch, ``None``
    for ever; past it, ``on_timeout(position)`` is the exception to raise.
    """

    window: int
    in_order: bool = True
    timeout: float | None = None
    on_timeout: Callable[[int], BaseException] = _timed_out

    def __post_init__(self) -> None:
        if isinstance(self.window, bool) or not isinstance(self.window, int) or self.window < 1:
            raise ValueError(f"StreamSpec.window must be an int >= 1, got {self.window!r}")
        if self.timeout is not None and not self.timeout > 0:
            raise ValueError(f"StreamSpec.timeout must be > 0 or None, got {self.timeout!r}")


@runtime_checkable
class StatsSink(Protocol):
    """Where a backend reports work it did natively instead of calling the loader's
    timed ``fetch``/``collate`` (``MapWork.stats``)."""

    def record_fetch(self, seconds: float, items: int) -> None: ...

    def record_collate(self, seconds: float) -> None: ...


@dataclass(frozen=True, slots=True)
class MapWork:
    """One map-style epoch: run ``collate(fetch(job.indices))`` for each job.

    ``jobs`` is consumed lazily on the consumer's thread, as the window frees
    up (it may be a user's sampler). When the batch sampler is the library's,
    it is an ``index_batches.IndexBatches``: iterable like any plan, or read as
    int64 chunks that the backend cuts into the same batches itself.
    ``fetch`` and ``collate`` are the loader's own callables; a backend calls
    them as they are, except where a field below lets it do the same work
    itself:

    - ``collate_is_default``: ``collate`` is the library's
      ``default_collate`` (timed, with ``stats``); a backend may collate
      natively instead when the result is identical.
    - ``getitem``: set only with ``PoolSpec.items_in_parallel > 1``: the
      dataset's ``__getitem__``; the backend may call it for the items of one
      batch on up to that many threads (returning them in index order) instead
      of calling ``fetch``.
    - ``stats``: set when the loader collects stats; ``fetch`` and ``collate``
      then time themselves, and a backend that replaces one of them reports
      through ``stats.record_fetch(seconds, items)`` or
      ``stats.record_collate(seconds)``.
    - ``images``: set when ``transform=`` is a ``transforms.Compose`` (and
      batches are lists of items, without ``getitem``): ``fetch`` applies the
      pipeline with the reference; a backend may instead call
      ``images.fetch`` and run the pipeline itself (see ``ImageWork``).
    """

    jobs: Iterable[BatchJob]
    fetch: Callable[[Any], Any]
    collate: Callable[[Any], Any]
    collate_is_default: bool = False
    getitem: Callable[[Any], Any] | None = None
    stats: StatsSink | None = None
    images: ImageWork | None = None


@dataclass(frozen=True, slots=True)
class ImageWork:
    """A ``transforms`` pipeline a backend may run natively (``MapWork.images``).

    ``fetch(indices)`` gives a job's items before the pipeline; ``pipeline`` is
    ``Compose.to_dict()`` (plain data); each item's random ops draw from
    ``transforms.ItemRandom(epoch_seed, index)``. ``image_of(item, index)`` is the
    image in an item (its error names the index) and ``put(item, image)`` the
    item with the result.
    ``apply(index, item)`` is the reference for one item: a backend hands it
    every item it does not reproduce exactly and every item whose pipeline
    fails, so results and errors are the reference's (within
    ``transforms.TOLERANCES``, as the conformance suite checks).

    ``stack`` is set when ``MapWork.collate`` is a ``transforms.ImageCollate``
    for the same place in the items (and no stats are taken): a backend that
    transformed every item of a job natively into images of one shape and
    dtype may lay them out in one array itself and return
    ``stack(items, array)`` (``items`` as ``fetch`` gave them) instead of
    calling ``collate``.
    """

    fetch: Callable[[Any], Any]
    pipeline: dict[str, Any]
    epoch_seed: int
    image_of: Callable[[Any], Any]
    put: Callable[[Any, Any], Any]
    apply: Callable[[Any, Any], Any]
    stack: Callable[[list[Any], Any], Any] | None = None


@dataclass(frozen=True, slots=True)
class IterWork:
    """One iterable-dataset epoch: ``num_streams`` iterators of ready batches.

    ``open_stream(i)`` returns stream ``i``'s iterator; each stream is opened
    and advanced by one thread at a time. ``StreamSpec.in_order=True``
    delivers round-robin over the streams, skipping exhausted ones (PyTorch's
    order); ``in_order=False`` in completion order.
    """

    open_stream: Callable[[int], Iterator[Any]]
    num_streams: int

    def __post_init__(self) -> None:
        if (
            isinstance(self.num_streams, bool)
            or not isinstance(self.num_streams, int)
            or self.num_streams < 1
        ):
            raise ValueError(f"IterWork.num_streams must be an int >= 1, got {self.num_streams!r}")


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

    Optional: ``open_reader(spec, concurrency)`` reads the items of the
    ``dataloader_api.io`` datasets natively. ``spec`` is a dataset's
    ``reader_spec()`` (plain data: ``kind`` "files", "http" or "s3" and its
    options); ``concurrency`` is the loader's ``max_concurrency`` (reads in
    flight at most, over all threads). The reader it returns has
    ``start(locations, cancel)``, which starts a job's reads at once and
    returns a handle whose ``wait()`` gives each location's ``bytes`` or a
    failure record ``(kind, message, status, attempts, errno)`` that the
    dataset raises as the reference would (a location: ``bytes`` for a file's
    path, else ``str``); ``new_cancel()`` (a handle whose ``cancel()`` ends the
    reads in progress of one epoch); and ``counters()`` ((requests, retries,
    bytes, redirects) so far; the last may be left out). The loader starts a job's reads when
    the backend takes the job, so its ``jobs`` hold started reads, and
    ``fetch`` waits for them. A backend without it runs the reference.

    Optional: ``pool_settings()`` returns what ``create_pool`` reads besides
    its spec (an environment variable, say), as a hashable value. The loader
    keeps the pools of finished epochs idle for later loaders of the same
    backend and thread count; it gives one only to a loader for which
    ``pool_settings()`` returns an equal value (none: always equal). The
    pool's threads then run jobs of a later loader's epochs, after the
    ``thread_init`` of the loader that made it.
    """

    name: str
    supports_items_in_parallel: bool

    def create_pool(self, spec: PoolSpec) -> WorkerPool: ...
