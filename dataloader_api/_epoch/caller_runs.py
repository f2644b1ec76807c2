"""Workers never slower than no workers: the consumer makes the batches it would wait for.

NOTE [ Caller-runs ]
On a GIL build, worker threads add hand-offs (the batch and the GIL passed
between threads) to items that hold the GIL: 2 workers made trivial items 6x
slower than ``num_workers=0``. So an in-order map-style epoch on workers runs
in segments of consecutive batches: a segment on the workers (the backend's
stream over those jobs, as before), or a segment the consumer makes itself in
``__next__``, each batch as one worker, whichever delivered batches sooner:

    workers (probe)  ->  measured: d = seconds in __next__ per batch
        | the fastest fetch of a batch on a copy < d ("always": at once)
        v
    consumer         ->  measured: c = seconds in __next__ per batch
        | c < d: the next consumer segment is twice as long; else back to workers
        v
    workers (probe)  ->  ...

A consumer batch is a worker's: the composed fetch and collate (with no step
around the dataset's calls, the copy's own calls, as the calling thread makes
them), run with ``get_worker_info()`` of a worker whose copy has no thread in
it (its lock, ``CopyGuards``, held meanwhile) and which its own worker already
fetched from (state a dataset opens lazily, a sqlite3 connection say, belongs
to the worker's thread); same copy, seed and generators. Order and
every index once hold (the plan is read once, segment after segment), resume
counts delivered batches as before, the window bounds each worker segment,
and a segment's stream closes with the epoch.

Per batch the consumer's path is what the calling thread's loop costs plus a
lock and the worker identity: it keeps the last batch's copy while no thread
is in it (no scan of the copies), and a sequential plan's jobs are ``range``s
where its own loop indexes item by item (``__getitems__`` and the workers get
lists). Counted by callgrind, trivial items at 2 workers went from 38 k to
32 k instructions a batch, the calling thread's 24 k (benchmarks/README.md).

Items that release the GIL (I/O, NumPy's large operations, native code,
free-threaded builds) keep running on the workers: their fetch on a copy is
longer than the wait per batch with workers, so the consumer never starts.
Not for iterable datasets (a worker's stream is its own), ``in_order=False``
(a slow batch must not hold back the others), ``timeout=`` (a batch made on
the consumer cannot time out), items fetched in parallel, async and native
sources, or datasets every worker shares (no per-worker copy to guard).

A consumer batch that raises is handed back: it runs again on the workers (the
items before the failing one run twice). If a worker makes it, the dataset has
state only its own thread may use: a warning names the error, and the loader
makes no more batches on the consumer. ``DATALOADER_CALLER_RUNS``: ``auto``
(the default), ``always`` (the consumer makes every batch it can: tests), or
``off``.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from time import perf_counter
from typing import Any, NoReturn

from .._common.worker_info import CURRENT, WorkerInfo
from .._workers.dataset_copies import CopyGuards
from ..contract import (
    BatchJob,
    BatchStream,
    IndexBatches,
    MapWork,
    PoolClosedError,
    StreamSpec,
    WorkerPool,
)
from ..contract._index_batches import batches_of_chunks

__all__ = ["CALLER_RUNS_VARIABLE", "CallerRunsBatches", "CallerRunsLearnt", "caller_runs_mode"]

CALLER_RUNS_VARIABLE = "DATALOADER_CALLER_RUNS"
_MODES = ("auto", "always", "off")
# A consumer segment's first length, in probe segments, and its longest: a probe
# on the workers costs its batches' hand-offs again, so once the consumer wins
# probes come rarely (at most 1 batch in 1 + 8 * 512 on the workers).
_FIRST_LENGTH, _LONGEST_LENGTH = 8, 8 * 512


def caller_runs_mode() -> str:
    """``DATALOADER_CALLER_RUNS``, read when an epoch starts."""
    value = os.environ.get(CALLER_RUNS_VARIABLE, "auto").strip().lower() or "auto"
    if value not in _MODES:
        raise ValueError(
            f"{CALLER_RUNS_VARIABLE}={os.environ[CALLER_RUNS_VARIABLE]!r} is not one of "
            f"{', '.join(map(repr, _MODES))} (auto: the consumer makes a batch itself when "
            "that is sooner than waiting for the workers; off: never)"
        )
    return value


@dataclass
class CallerRunsLearnt:
    """What a loader learnt about caller-runs, kept between its epochs."""

    #: a batch failed on the consumer and not on a worker: never again
    disabled: bool = False
    #: the next consumer segment's length in batches (0: the workers won last)
    length: int = 0
    #: seconds in ``__next__`` per batch the consumer made, last measured
    consumer_per_batch: float = float("inf")


# What a step of __next__ returns when the batch comes from the next segment.
_AGAIN: Any = object()


class _Feed:
    """A worker segment's jobs, pulled by the backend on the consumer's thread:
    ``first``, then the plan's (their indices), numbered from 0, until ``limit``
    (None: to the plan's end). Lifting the limit before the backend reached it
    keeps the segment going without a pause."""

    def __init__(self, first: Any, jobs: Iterator[Any], limit: int | None) -> None:
        self.first, self.jobs, self.limit = first, jobs, limit
        self.handed = 0
        self.ended = False  # the plan has no job left

    def __iter__(self) -> Iterator[BatchJob]:
        while self.limit is None or self.handed < self.limit:
            indices, self.first = self.first, None
            if indices is None:
                indices = next(self.jobs, None)
                if indices is None:
                    self.ended = True
                    return
            # a range (the consumer's sequential jobs) goes to the backends as a list
            yield BatchJob(self.handed, list(indices) if type(indices) is range else indices)
            self.handed += 1


class CallerRunsBatches:
    """The batches of an in-order map-style epoch, segment by segment on the workers
    or on the consumer (NOTE [ Caller-runs ]); a ``BatchStream``."""

    def __init__(
        self,
        pool: WorkerPool,
        work: MapWork,
        stream: StreamSpec,
        infos: list[WorkerInfo],
        guards: CopyGuards,
        learnt: CallerRunsLearnt,
        always: bool,
        plain: Callable[[Any], Callable[[Any], Any]] | None,
        ranges: bool = False,
    ) -> None:
        """``plain``: when no step wraps the dataset's calls, a copy's own fetch
        (``fetch.make_fetch`` of the copy alone), which the consumer calls holding
        its lock: the calling thread's loop, with no stop read between items.
        ``ranges``: ``plain`` takes a ``range`` (it indexes item by item), so a
        sequential plan's jobs need no list each."""
        self._pool, self._work, self._stream = pool, work, stream
        self._infos, self._guards, self._learnt, self._always = infos, guards, learnt, always
        self._plain = [plain(info.dataset) for info in infos] if plain is not None else None
        self._jobs: Iterator[Any] | None = _fetch_arguments(work.jobs, ranges and bool(plain))
        # The copy of the consumer's last plain batch: its lock, fetch and worker info.
        self._hot: tuple[Any, Callable[[Any], Any], WorkerInfo] | None = None
        self._pending: Any = None  # a job's indices to make first: handed back or interrupted
        self._segment: BatchStream | None = None
        self._feed: _Feed | None = None
        # A probe: this many batches on the workers, measured over the first half
        # (the window is at most that, so the feed is not yet at its limit).
        self._probe = max(8, 2 * stream.window)
        self._left = 0  # batches left in the consumer's segment
        self._count, self._spent = 0, 0.0  # this segment's batches, seconds in __next__
        self._workers_per_batch = float("inf")
        self._handed_back: BaseException | None = None
        self._segments = 0  # worker segments started
        if learnt.length and not learnt.disabled and self._free_copy() is not None:
            self._left = learnt.length  # the consumer won the loader's last epoch

    def __iter__(self) -> CallerRunsBatches:
        return self

    def __next__(self) -> Any:
        began = perf_counter()
        try:
            batch = _AGAIN
            while batch is _AGAIN:
                batch = self._from_consumer() if self._left > 0 else self._from_workers()
            return batch
        finally:
            self._spent += perf_counter() - began

    def close(self) -> None:
        self._jobs, self._pending, self._left = None, None, 0
        segment, self._segment = self._segment, None
        if segment is not None:
            segment.close()

    # The workers' segments.

    def _start_workers(self) -> BatchStream:
        if self._jobs is None:
            raise StopIteration
        self._count, self._spent = 0, 0.0
        self._feed = _Feed(self._pending, self._jobs, self._probe)
        self._pending = None
        work = self._work
        try:
            self._segment = self._pool.map_batches(
                MapWork(
                    self._feed,
                    work.fetch,
                    work.collate,
                    work.default_collate,
                    work.getitem,
                    work.stats,
                    work.images,
                ),
                self._stream,
            )
        except PoolClosedError:
            if not self._segments:
                raise  # the epoch's first: the error of a pool closed before it began
            self._feed = None
            self._pool_closed()  # while the consumer made batches
        self._segments += 1
        return self._segment

    def _from_workers(self) -> Any:
        segment = self._segment if self._segment is not None else self._start_workers()
        try:
            batch = next(segment)
        except StopIteration:
            self._end_of_workers()
            return _AGAIN
        except Exception:
            self._count += 1
            self._handed_back = None  # a worker failed too: the error is the batch's
            raise
        self._count += 1
        if self._handed_back is not None:
            self._warn_and_disable(self._handed_back)
        if self._count == self._probe // 2:
            self._decide()
        return batch

    def _decide(self) -> None:
        """Half-way through a probe: the rest of the epoch on the workers, or the
        consumer after this probe."""
        self._workers_per_batch = self._spent / self._count
        learnt, feed = self._learnt, self._feed
        assert feed is not None
        estimate = learnt.consumer_per_batch
        if estimate == float("inf"):
            estimate = min(self._guards.fastest)  # the fetch alone, on an idle copy
        consumer = not learnt.disabled and (self._always or estimate < self._workers_per_batch)
        if not consumer:
            feed.limit = None  # the workers keep the epoch, without a pause

    def _end_of_workers(self) -> None:
        segment, feed, self._segment, self._feed = self._segment, self._feed, None, None
        if segment is not None:
            segment.close()
        if feed is None or feed.ended or feed.limit is None:
            self._jobs = None  # the plan ended in this segment
            return
        if self._count < feed.handed or feed.handed < feed.limit:
            self._pool_closed()  # the stream ended before it delivered what it was given
        if self._learnt.disabled:
            return
        if self._free_copy() is not None:
            self._left = self._learnt.length = max(self._learnt.length, _FIRST_LENGTH * self._probe)
            self._count, self._spent = 0, 0.0

    def _pool_closed(self) -> NoReturn:
        """The pool closed under the epoch: as the backends' streams do, park a
        thread other than the main one once interpreter exit began (the exit hook
        closed it), else raise."""
        from ..kit import wait_out_interpreter_exit

        self._jobs = self._pending = None
        wait_out_interpreter_exit()
        raise PoolClosedError("the worker pool was closed while this epoch was running") from None

    # The consumer's segments.

    def _from_consumer(self) -> Any:
        job = self._pending
        if job is None:
            job = next(self._jobs, None) if self._jobs is not None else None
            if job is None:
                self._jobs, self._left = None, 0
                raise StopIteration
            self._pending = job  # until it is made: after KeyboardInterrupt, made again
        hot = self._hot
        # acquire(False), not blocking=False: keywords cost a C call ~600 instructions
        if hot is None or not hot[0].acquire(False):
            hot = self._take_copy()
            if hot is None:
                return _AGAIN
        lock, fetch, info = hot
        previous = getattr(CURRENT, "info", None)
        CURRENT.info = info
        try:
            try:
                items = fetch(job)
            finally:
                if lock is not None:
                    lock.release()
            batch = self._work.collate(items)
        except Exception as error:
            self._handed_back, self._left = error, 0  # the workers make it next
            del error
            return _AGAIN
        finally:
            CURRENT.info = previous
        self._pending = None
        self._count += 1
        self._left -= 1
        if self._left == 0:
            self._end_of_consumer()
        return batch

    def _take_copy(self) -> tuple[Any, Callable[[Any], Any], WorkerInfo] | None:
        """A free copy for the consumer: its lock (taken) and own fetch when no step
        wraps the dataset's calls, kept for the next batches (``_hot``); else no
        lock and the composed fetch, which takes it. None: no copy is free."""
        worker = self._free_copy()
        if worker is None:  # a worker of an earlier epoch is still in every copy
            self._left = 0
            return None
        info = self._infos[worker]
        if self._plain is None:
            return None, self._work.fetch, info
        lock = self._guards.locks[worker]
        if not lock.acquire(False):
            return None  # a worker of an earlier epoch just entered it: look again
        self._hot = (lock, self._plain[worker], info)
        return self._hot

    def _end_of_consumer(self) -> None:
        learnt = self._learnt
        learnt.consumer_per_batch = self._spent / max(1, self._count)
        if self._always or learnt.consumer_per_batch < self._workers_per_batch:
            learnt.length = min(2 * learnt.length, _LONGEST_LENGTH * self._probe)
        else:
            learnt.length = 0
        self._count, self._spent = 0, 0.0

    def _free_copy(self) -> int | None:
        """A worker whose copy its own worker already fetched from and no thread is in."""
        guards = self._guards
        for worker, lock in enumerate(guards.locks):
            if guards.fastest[worker] != float("inf") and not lock.locked():
                return worker
        return None

    def _warn_and_disable(self, error: BaseException) -> None:
        self._handed_back = None
        self._learnt.disabled, self._learnt.length, self._left = True, 0, 0
        if self._feed is not None:
            self._feed.limit = None  # the workers keep the epoch
        warnings.warn(
            "dataloader_api made a batch on the thread iterating the DataLoader, as one "
            f"worker with that worker's dataset copy, and it raised {type(error).__name__} "
            f"({error}); a worker thread made the same batch without error, so the dataset "
            "keeps state that only the thread that made it may use (a sqlite3 connection "
            "opened in __getitem__, say). This loader now makes every batch on its worker "
            f"threads. To make that the default, set {CALLER_RUNS_VARIABLE}=off; or open "
            "such state with check_same_thread=False, or per thread (threading.local()).",
            RuntimeWarning,
            stacklevel=5,
        )


def _fetch_arguments(plan: Iterable[BatchJob], ranges: bool) -> Iterator[Any]:
    """The plan's jobs as what ``fetch`` receives (no step begins jobs here): an
    ``IndexBatches``' batches cut straight from its chunks (``ranges``: where
    they are consecutive)."""
    if type(plan) is IndexBatches:
        return batches_of_chunks(_chunks(plan), plan.batch_size, plan.drop_last, ranges)
    return (job.indices for job in plan)


def _chunks(plan: IndexBatches) -> Iterator[Any]:
    while (chunk := plan.next_chunk()) is not None:
        yield chunk
