"""The frozen values that cross the contract: a pool's spec, an epoch's work and
how its batches flow; ``StatsSink``, the type of ``MapWork.stats``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ._process import MIN_STACK_SIZE, python_thread_stack_size

__all__ = [
    "BatchJob",
    "ImageWork",
    "IterWork",
    "MapWork",
    "PoolSpec",
    "StatsSink",
    "StreamSpec",
]


@runtime_checkable
class StatsSink(Protocol):
    """Where a backend reports work it did natively instead of calling the loader's
    timed ``fetch``/``collate`` (``MapWork.stats``)."""

    def record_fetch(self, seconds: float, items: int) -> None: ...

    def record_collate(self, seconds: float) -> None: ...


@dataclass(frozen=True, slots=True)
class BatchJob:
    """One unit of work of the epoch plan.

    ``position`` is the batch's 0-based place in the epoch (plan order).
    ``indices``: a list of dataset indices when batching is on, a single index
    when ``batch_size=None``. ``started``: what the common API began for this
    job as the backend took it from ``MapWork.jobs`` (an async dataset's
    coroutines, native reads), else None. ``fetch`` (and ``ImageWork.fetch``)
    receive ``started`` when it is set, else ``indices``; the items still
    belong to ``indices`` (``getitem`` and ``ImageWork`` pair them so).
    """

    position: int
    indices: Any
    started: Any = None

    @property
    def fetch_argument(self) -> Any:
        """What ``fetch`` receives for this job."""
        return self.indices if self.started is None else self.started


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


@dataclass(frozen=True, slots=True)
class MapWork:
    """One map-style epoch: run ``collate(fetch(job.fetch_argument))`` for each job.

    ``jobs`` is consumed lazily on the consumer's thread, as the window frees
    up (it may be a user's sampler). When the batch sampler is the library's,
    it is an ``IndexBatches``: iterable like any plan, or read as
    int64 chunks that the backend cuts into the same batches itself.
    ``fetch`` and ``collate`` are the loader's own callables; a backend calls
    them as they are, except where a field below lets it do the same work
    itself:

    - ``default_collate``: set when ``collate`` is the library's
      ``default_collate`` (timed, with ``stats``): that function, untimed; a
      backend may collate natively instead when the result is identical,
      handing it whatever it does not collate itself.
    - ``getitem``: set only with ``PoolSpec.items_in_parallel > 1``: the
      dataset's ``__getitem__``; the backend may call it for each of a job's
      ``indices`` on up to that many threads (returning them in index order) instead
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
    default_collate: Callable[[Any], Any] | None = None
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
