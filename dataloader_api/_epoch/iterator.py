"""One epoch as the user iterates it: ``LoaderIterator`` and its clean-up.

Closing (``close()``, ``del``, garbage collection, interpreter exit) runs one
``weakref.finalize`` that closes the stream first (no new job starts), then the
epoch's event loop work, then the pool the iterator owns (a non-persistent one).
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from time import perf_counter
from typing import Any, Protocol

from .._errors import DataLoaderTimeoutError, note_thread_pitfall
from .._features.stats import StatsRecorder
from .._workers.handles import worker_handles
from .._workers.pool import join_pools
from ..contract import BatchStream, ForkedPoolError, WorkerPool, process_id
from .plan import TrackedBatch
from .prepare import PreparedEpoch


class EpochSide(Protocol):
    """What runs beside an epoch's workers and closes with it: its coroutines on the
    event loop (``async_loop.AsyncEpoch``), its native reads (``io._native.NativeEpoch``)
    or its ``fetch.ItemStop``."""

    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class EpochRun:
    """How a prepared epoch runs: its batches (the calling thread's or the backend's
    stream), what closes beside them, and the pool they run on (None: the calling
    thread), which the epoch ``owned`` (closes, joins) or shares (persistent)."""

    batches: Iterator[Any] | BatchStream
    side: EpochSide | None = None
    pool: WorkerPool | None = None
    owned: bool = False
    #: what an epoch that ran to its end does with the pool it owns: True if it
    #: was kept idle for a later loader (see _features.idle_pools); None: close it
    hand_back: Callable[[WorkerPool], bool] | None = None


__all__ = ["EpochRun", "LengthCheckedIterator", "LoaderIterator"]


class LoaderIterator:
    """One epoch of a ``DataLoader``; closing it (or dropping it) stops its workers."""

    #: torch's name for the epoch's workers (``_workers.handles``); unset on the
    #: calling thread, as torch's single-process iterator has none
    _workers: list[Any]

    def __init__(self, epoch: PreparedEpoch, run: EpochRun, loader: object = None) -> None:
        # An epoch keeps its loader alive, so `iter(DataLoader(...))` keeps loading
        # as torch's iterator does: a persistent pool closes with its loader.
        self._loader = loader
        self._epoch = epoch
        self._hand_back = run.hand_back
        # The pool this epoch owns, which the finalizer closes and join() waits
        # for: emptied when the pool is handed back.
        self._pools = [run.pool] if run.owned and run.pool is not None else []
        if run.pool is not None:
            self._workers = worker_handles(
                epoch.num_workers, self._pools if run.owned else [run.pool]
            )
        self._batches = run.batches
        self._recorder = epoch.recorder
        self._summary = epoch.summary
        self._pin = epoch.pin
        self._length = epoch.length
        self._closed = False
        self.finished = False
        #: batches of the epoch delivered so far (a batch that raised counts)
        self.position = epoch.point.skip
        #: iterable datasets: worker id -> its dataset state after its last delivered batch
        self.worker_states: dict[int, Any] = {}
        self.last_worker: int | None = None
        # A forked child inherits the epoch but not its worker threads, if it has any.
        self._pid = process_id() if run.pool is not None else None
        # Runs on close(), on garbage collection and at interpreter exit.
        pools, pid = self._pools, process_id()
        self._finalizer = weakref.finalize(self, _close_all, run.batches, pools, run.side, pid)

    def __iter__(self) -> LoaderIterator:
        return self

    def __next__(self) -> Any:
        if self._closed:
            raise StopIteration
        if self._pid is not None and self._pid != process_id():
            raise ForkedPoolError(
                f"this epoch's worker threads belong to process {self._pid}, and a forked "
                "child has none: start a new epoch (iter(loader)) in the child"
            )
        if self._recorder is not None:
            batch = self._next_recorded(self._recorder)
        else:
            try:
                batch = next(self._batches)
            except StopIteration:
                self.finished = True
                self._close_at_end()
                raise
            except DataLoaderTimeoutError:
                raise
            except Exception as error:
                self.position += 1  # that batch was delivered, as its exception
                note_thread_pitfall(error)
                raise
            self.position += 1
        if type(batch) is TrackedBatch:
            self.worker_states[batch.worker_id] = batch.state
            self.last_worker = batch.worker_id
            batch = batch.batch
        return batch if self._pin is None else self._pin(batch)

    def _next_recorded(self, recorder: StatsRecorder) -> Any:
        """``next(self._batches)`` with the wait timed for the epoch's stats."""
        start = perf_counter()
        try:
            batch = next(self._batches)
        except StopIteration:
            self.finished = True
            self._close_at_end()
            recorder.waited(perf_counter() - start)
            stats = recorder.finish()
            if self._summary is not None:
                self._summary(stats)
            raise
        except DataLoaderTimeoutError:
            recorder.waited(perf_counter() - start)
            raise
        except Exception as error:
            self.position += 1  # that batch was delivered, as its exception
            recorder.delivered(perf_counter() - start)
            note_thread_pitfall(error)
            raise
        recorder.delivered(perf_counter() - start)
        self.position += 1
        return batch

    def __len__(self) -> int:
        if self._length is None:
            raise TypeError("this epoch's length is unknown (the dataset has no __len__)")
        return self._length

    @property
    def owned_pools(self) -> list[WorkerPool]:
        """The pool this epoch owns and will close (empty once handed back): the
        list itself, which changes as the epoch ends."""
        return self._pools

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called (or the epoch ended it)."""
        return self._closed

    def close(self) -> None:
        """Stop loading: no new dataset call starts once this returns."""
        self._closed = True
        self._finalizer()

    def _close_at_end(self) -> None:
        """The epoch ran to its end: nothing is running on its pool, which may go
        idle for a later loader instead of closing."""
        pools, hand_back = self._pools, self._hand_back
        pool = pools.pop() if hand_back is not None and pools else None
        self.close()  # the stream; the pool, if still in pools
        if hand_back is not None and pool is not None and not hand_back(pool):
            pools.append(pool)  # still this epoch's to join
            pool.close()

    def join(self, timeout: float | None = None) -> bool:
        """After ``close()`` (or ``break``): wait until the worker threads of this
        epoch have ended, ``timeout`` seconds at most (``None``: no limit); True if
        none is left. A persistent loader's threads outlive its epochs: see
        ``DataLoader.join``. ``close()`` itself never waits for a busy thread."""
        pools = list(self._pools)
        if self._pid is not None and self._pid != process_id():
            return True  # a forked child has none of the epoch's threads
        return not join_pools(pools, timeout)

    def __enter__(self) -> LoaderIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LengthCheckedIterator(LoaderIterator):
    """An epoch of an iterable dataset after ``len(loader)`` was taken: warns at
    each batch past that length, as torch does. A subclass, so that other epochs
    pay nothing for the check."""

    def __next__(self) -> Any:
        batch = super().__next__()
        reported = self._epoch.reported_length
        assert reported is not None  # why this class was chosen
        if self.position > reported:
            message = (
                f"Length of IterableDataset {self._epoch.dataset} was reported to be {reported} "
                f"(when accessing len(dataloader)), but {self.position} samples have been "
                "fetched. "
            )
            if self._epoch.num_workers > 0:
                # torch's sentence (its tests match it), then what holds for threads.
                message += (
                    "For multiprocessing data-loading, this could be caused by not properly "
                    "configuring the IterableDataset replica at each worker; this loader's "
                    "worker threads each iterate their own replica too: shard it by "
                    "get_worker_info() (see IterableDataset in the PyTorch docs for examples)."
                )
            warnings.warn(message, UserWarning, stacklevel=2)
        return batch


def _close_all(batches: Any, pools: list[WorkerPool], aio: EpochSide | None, pid: int) -> None:
    if pid != process_id():
        return  # a forked child: the threads and the event loop are the parent's
    close = getattr(batches, "close", None)
    try:
        if close is not None:
            close()  # no new job starts
    finally:
        try:
            if aio is not None:
                aio.close()  # cancel running coroutines or reads: workers waiting return
        finally:
            for pool in pools:
                pool.close()
