"""A minimal dataloader_api backend: threads, one task queue, one result queue.

The example of docs/backends.md; the conformance suite runs against it in CI.
"""

from __future__ import annotations

import atexit
import queue
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from dataloader_api.contract import BatchJob, IterWork, MapWork, PoolSpec, StreamSpec

SLICE = 0.05  # seconds between checks while waiting: signals, timeout, closed pool
IDLE_WAKE = 0.2  # seconds an idle pool thread sleeps between wake-ups

_pools: weakref.WeakSet[MinimalPool] = weakref.WeakSet()
_exiting = threading.Event()


def _at_exit() -> None:
    _exiting.set()  # from now on close() waits for nothing
    for pool in list(_pools):
        pool.close()


# Runs before threads are joined and before atexit handlers (where the
# loader's own finalizers run).
getattr(threading, "_register_atexit", atexit.register)(_at_exit)


def _wait_out_exit() -> None:
    """A consumer on another thread whose pool the exit hook closed waits for the
    process to end, as a daemon thread does, rather than raise into user code."""
    if _exiting.is_set() and threading.current_thread() is not threading.main_thread():
        threading.Event().wait()


class MinimalBackend:
    name = "minimal"
    supports_items_in_parallel = False

    def create_pool(self, spec: PoolSpec) -> MinimalPool:
        return MinimalPool(spec)


class MinimalPool:
    def __init__(self, spec: PoolSpec) -> None:
        self.tasks: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self.closed = threading.Event()
        init_errors: list[BaseException] = []
        started = threading.Barrier(spec.num_threads + 1)
        tasks, closed = self.tasks, self.closed  # threads must not hold the pool

        def run(worker_id: int) -> None:
            try:
                spec.thread_init(worker_id)  # once, on this thread, before any task
            except BaseException as error:
                init_errors.append(error)
                started.wait()
                return
            started.wait()
            while not closed.is_set():
                try:
                    # Wake now and then: on free-threaded builds a thread must run
                    # to free objects it made that others dropped (an exception).
                    task = tasks.get(timeout=IDLE_WAKE)
                except queue.Empty:
                    continue
                if task is None:
                    return
                task()
                del task

        self.threads = [
            threading.Thread(target=run, args=(i,), daemon=True, name=f"minimal-{i}")
            for i in range(spec.num_threads)
        ]
        for thread in self.threads:
            thread.start()
        _pools.add(self)
        started.wait()
        if init_errors:
            self.close()
            raise init_errors[0]

    def map_batches(self, work: MapWork, stream: StreamSpec) -> _Epoch:
        results: queue.SimpleQueue[tuple[Any, bool, Any]] = queue.SimpleQueue()
        epoch = _Epoch(self, results, stream)
        cancelled = epoch.cancelled
        job_iterator = iter(work.jobs)
        fetch, collate, window = work.fetch, work.collate, stream.window

        # The epoch is passed in, not closed over: epoch -> refill -> epoch would be
        # a cycle that outlives the iterator until a second garbage collection.
        def start_jobs(epoch: _Epoch) -> None:
            # On the consumer's thread: keep `window` jobs started but not consumed.
            while epoch.started - epoch.consumed < window:
                job = next(job_iterator, None)
                if job is None:
                    return
                epoch.started += 1
                self.tasks.put(lambda job=job: _run(job, fetch, collate, results, cancelled))

        epoch.refill = start_jobs
        return epoch

    def stream_batches(self, work: IterWork, stream: StreamSpec) -> _Epoch:
        results: queue.SimpleQueue[tuple[Any, bool, Any]] = queue.SimpleQueue()
        open_stream, num_streams, window = work.open_stream, work.num_streams, stream.window
        epoch = _Epoch(self, results, stream, num_streams)
        slots = [threading.Semaphore(max(1, window // num_streams)) for _ in range(num_streams)]
        epoch.on_consume = lambda stream_id: slots[stream_id].release()
        for stream_id in range(num_streams):
            self.tasks.put(
                lambda i=stream_id: _drain(i, open_stream, slots[i], results, epoch.cancelled)
            )
        epoch.mapped = False  # streams end by themselves, not by a job count
        return epoch

    def close(self) -> None:
        if self.closed.is_set():
            return
        self.closed.set()
        for _ in self.threads:
            self.tasks.put(None)
        if not _exiting.is_set():
            for thread in self.threads:
                if thread is not threading.current_thread():
                    thread.join(2.0)


def _run(
    job: BatchJob,
    fetch: Callable[[Any], Any],
    collate: Callable[[Any], Any],
    results: queue.SimpleQueue[tuple[Any, bool, Any]],
    cancelled: threading.Event,
) -> None:
    if cancelled.is_set():
        return
    try:
        results.put((job.position, True, collate(fetch(job.indices))))
    except BaseException as error:
        results.put((job.position, False, error))
        del error


def _drain(
    stream_id: int,
    open_stream: Callable[[int], Iterator[Any]],
    slot: threading.Semaphore,
    results: queue.SimpleQueue[tuple[Any, bool, Any]],
    cancelled: threading.Event,
) -> None:
    try:
        batches = open_stream(stream_id)
        while not cancelled.is_set():
            if not slot.acquire(timeout=SLICE):
                continue
            results.put((stream_id, True, next(batches)))
    except StopIteration:
        pass
    except BaseException as error:
        results.put((stream_id, False, error))
        del error
    results.put((stream_id, None, None))  # this stream has ended


class _Epoch:
    """What the consumer iterates; worker tasks only see `results` and `cancelled`."""

    def __init__(
        self,
        pool: MinimalPool,
        results: queue.SimpleQueue[tuple[Any, bool, Any]],
        stream: StreamSpec,
        num_streams: int = 0,
    ) -> None:
        self.pool, self.results, self.in_order = pool, results, stream.in_order
        self.timeout, self.on_timeout = stream.timeout, stream.on_timeout
        self.cancelled = threading.Event()
        self.ready: dict[Any, list[tuple[bool, Any]]] = {}  # key -> finished batches
        self.refill: Callable[[_Epoch], None] = lambda epoch: None
        self.on_consume: Callable[[Any], None] = lambda key: None
        self.mapped = True  # map_batches epoch (jobs), else stream_batches
        self.started = 0
        self.consumed = 0
        self.streams = list(range(num_streams))  # iterable: streams still delivering
        self.ended: set[int] = set()  # streams whose iterator is done
        self.turn = 0

    def __iter__(self) -> _Epoch:
        return self

    def _prune(self) -> None:
        """Drop ended streams with nothing left to deliver from the rotation."""
        for stream_id in list(self.streams):
            if stream_id in self.ended and not self.ready.get(stream_id):
                if self.turn > self.streams.index(stream_id):
                    self.turn -= 1
                self.streams.remove(stream_id)

    def _wanted(self) -> Any:
        if not self.streams:
            return self.consumed if self.in_order else None  # map: next position
        if self.in_order:
            self.turn %= len(self.streams)
            return self.streams[self.turn]
        return None

    def __next__(self) -> Any:
        if self.cancelled.is_set():
            raise StopIteration
        self.refill(self)
        mapped = self.mapped
        if mapped and self.consumed == self.started:
            self.close()
            raise StopIteration
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        while True:
            if not mapped:
                self._prune()
                if not self.streams:
                    self.close()
                    raise StopIteration
            key = self._wanted()
            if key is None and self.ready:
                key = next(iter(self.ready))
            if key is not None and self.ready.get(key):
                break
            wait = SLICE if deadline is None else min(SLICE, deadline - time.monotonic())
            if wait <= 0:
                self.close()
                raise self.on_timeout(self.consumed)
            try:
                source, ok, value = self.results.get(timeout=wait)
            except queue.Empty:
                if self.pool.closed.is_set():
                    _wait_out_exit()
                    raise RuntimeError("the worker pool was closed during this epoch") from None
                continue
            if ok is None:  # an iterable stream ended
                self.ended.add(source)
                continue
            self.ready.setdefault(source, []).append((ok, value))
            del value
        ok, value = self.ready[key].pop(0)
        if not self.ready[key]:
            del self.ready[key]
        self.consumed += 1
        self.turn += 1
        self.on_consume(key)
        self.refill(self)
        if ok:
            return value
        try:
            raise value
        finally:
            del value  # no error -> traceback -> frame -> error cycle

    def close(self) -> None:
        self.cancelled.set()
        self.ready.clear()
