"""The backend contract: the one module a backend author reads.

The common API decides *what* is loaded (the epoch plan: which indices form
which batch, in which order), wraps the user's dataset and collate function
into plain callables and owns every argument check and error message. A
backend decides only *how* those callables run on its threads.

A backend is an object with a ``create_pool`` method (:class:`Backend`),
registered under the entry-point group ``dataloader_api.backends``. The loader
creates one :class:`WorkerPool` per loader (``persistent_workers=True``) or per
epoch, and asks it for one :class:`BatchStream` per epoch through
:meth:`WorkerPool.map_batches` (map-style datasets) or
:meth:`WorkerPool.stream_batches` (iterable datasets).

Duties of every backend (the conformance suite checks each of them):

Bounded window
    At most ``window`` batches of one stream are *started but not yet
    consumed* at any time: a job may start only while fewer than ``window``
    of the stream's batches have been started and not yet returned by
    ``__next__``. This holds behind a slow batch too: in ordered mode the
    batches finished after it wait in a reorder buffer and count against the
    window. For :meth:`WorkerPool.stream_batches` the window is split evenly:
    each of the ``n`` streams has at most ``max(1, window // n)`` batches
    started but not consumed.

Ordering
    ``in_order=True``: batches come out in plan order (``BatchJob.position``),
    each job exactly once. ``in_order=False``: in completion order, same
    multiset, a slow batch does not hold back the others.

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
    With ``timeout`` set, a ``__next__`` that waited ``timeout`` seconds
    without its batch arriving raises the exception returned by
    ``on_timeout(position)`` and closes the stream.

Waiting
    The consumer waits in slices short enough that ``KeyboardInterrupt`` and
    other signals are raised promptly (``threading`` waits do this in Python;
    native waits must release the interpreter and check signals between
    slices). A ``KeyboardInterrupt`` raised while waiting leaves the stream
    closable.

Shutdown
    ``BatchStream.close()`` and ``WorkerPool.close()`` are idempotent, return
    promptly, and after they return no job of theirs *starts* (jobs already
    running finish on their own). ``WorkerPool.close()`` ends the pool's
    threads: a thread busy in user code exits when that call returns. At
    interpreter exit (``atexit``) every live pool is closed without waiting
    for busy threads; the process keeps its own exit code. A consumer on a
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
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "Backend",
    "BatchJob",
    "BatchStream",
    "PoolSpec",
    "WorkerPool",
    "process_id",
]

_process_id = os.getpid()


def _after_fork_in_child() -> None:
    global _process_id
    _process_id = os.getpid()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


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
    others): the ``fetch`` of ``map_batches`` then has a ``getitem`` attribute,
    the dataset's ``__getitem__``, and the backend may call it for the items
    of one batch on up to that many threads, returning them in index order.
    """

    num_threads: int
    thread_init: Callable[[int], None]
    name: str = "dataloader"
    items_in_parallel: int = 1


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
    """A set of ``num_threads`` worker threads that runs batch streams."""

    def map_batches(
        self,
        jobs: Iterable[BatchJob],
        fetch: Callable[[Any], Any],
        collate: Callable[[Any], Any],
        *,
        window: int,
        in_order: bool,
        timeout: float | None,
        on_timeout: Callable[[int], BaseException],
    ) -> BatchStream:
        """Run ``collate(fetch(job.indices))`` for each job, on the pool's threads.

        ``jobs`` is consumed lazily on the consumer's thread, as the window
        frees up (it may be a user's sampler). ``fetch`` and ``collate`` are
        the loader's own wrappers; a backend may replace ``collate`` by an
        equivalent native implementation when ``collate`` is
        ``dataloader_api.collate.default_collate`` and produces an identical
        result. With ``collect_stats``, ``collate`` and ``fetch`` are timing
        wrappers: ``collate.__wrapped__`` is the function to compare, and a
        backend that collates natively then calls ``collate.record(seconds)``
        (one that fetches items itself, ``fetch.record(seconds, items)``).
        """
        ...

    def stream_batches(
        self,
        open_stream: Callable[[int], Iterator[Any]],
        num_streams: int,
        *,
        window: int,
        in_order: bool,
        timeout: float | None,
        on_timeout: Callable[[int], BaseException],
    ) -> BatchStream:
        """Drain ``num_streams`` iterators of ready batches (iterable datasets).

        ``open_stream(i)`` returns stream ``i``'s iterator; each stream is
        opened and advanced by one thread at a time. ``in_order=True`` delivers
        round-robin over the streams, skipping exhausted ones (PyTorch's order);
        ``in_order=False`` in completion order.
        """
        ...

    def close(self) -> None:
        """End the pool's threads; idempotent and prompt."""
        ...


@runtime_checkable
class Backend(Protocol):
    """An execution engine, found through the ``dataloader_api.backends`` entry points."""

    name: str
    # Optional: a backend that splits batches sets ``supports_items_in_parallel = True``.

    def create_pool(self, spec: PoolSpec) -> WorkerPool: ...
