"""The pure-Python backend: ``threading`` workers, the contract's reference implementation.

Read ``dataloader_api.contract`` for the duties; this module is the shortest
code that keeps all of them.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
import warnings
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from queue import Empty, SimpleQueue
from typing import Any

from dataloader_api.contract import BatchJob, IterWork, MapWork, PoolSpec, StreamSpec

__all__ = [
    "IterableStream",
    "PoolClosedError",
    "ThreadPool",
    "ThreadsBackend",
    "wait_out_interpreter_exit",
    "warn_busy_threads",
]

# How long close() waits for threads that are busy in user code.
CLOSE_JOIN_SECONDS = 2.0
# An idle worker wakes this often. On free-threaded builds an object made on a
# worker (an exception it raised, say) and dropped by the consumer is freed by
# its owner thread, which must run to do it; else a failed epoch stays alive.
IDLE_WAKE_SECONDS = 0.2

_live_pools: weakref.WeakSet[ThreadPool] = weakref.WeakSet()
_exiting = False


def _at_exit() -> None:
    """Interpreter exit: stop every pool at once, wait for none of them."""
    global _exiting
    _exiting = True
    for pool in list(_live_pools):
        pool.close()


# threading's exit hooks run before non-daemon threads are joined and before
# atexit (where weakref finalizers of live iterators run); fall back to atexit.
_register = getattr(threading, "_register_atexit", atexit.register)
_register(_at_exit)
if hasattr(os, "register_at_fork"):
    # A forked child has none of the pools' threads: its exit must not close them
    # (their locks may have been held by a parent thread at the fork).
    os.register_at_fork(after_in_child=_live_pools.clear)


class PoolClosedError(RuntimeError):
    """The stream's pool was closed while the stream was still being read."""


def warn_busy_threads(busy: int, waited_seconds: float) -> None:
    """What a pool's close() says when threads are still in user code after its wait;
    the warning points at the caller of close()."""
    warnings.warn(
        f"{busy} worker thread(s) still busy in dataset code {waited_seconds:g} s "
        "after close(); they exit when that call returns",
        ResourceWarning,
        stacklevel=3,
    )


def wait_out_interpreter_exit(exiting: bool, held: threading.Condition | None = None) -> None:
    """A consumer on a non-main thread whose pool the exit hook closed: wait like any
    daemon thread until the process ends, instead of raising into user code (or
    ending its loop early) while the interpreter shuts down. ``held`` is a condition
    the caller holds: it is released while waiting, so the exit hook can close."""
    if exiting and threading.current_thread() is not threading.main_thread():
        while True:
            if held is not None:
                held.wait(3600)
            else:
                time.sleep(3600)


class _PoolCore:
    """What worker threads share; it holds no reference to any user-facing object."""

    def __init__(self) -> None:
        self.tasks: SimpleQueue[tuple[Callable[..., None], tuple[Any, ...]] | None] = SimpleQueue()
        self.closed = False
        # Epochs still running, so closing the pool wakes their waiting tasks.
        self.epochs: weakref.WeakSet[_EpochState] = weakref.WeakSet()


def _worker_main(
    core: _PoolCore, worker_id: int, thread_init: Callable[[int], None], ready: _InitBarrier
) -> None:
    try:
        thread_init(worker_id)
    except BaseException as error:
        ready.fail(error)
        return
    ready.arrive()
    while True:
        try:
            task = core.tasks.get(timeout=IDLE_WAKE_SECONDS)
        except Empty:
            continue
        if task is None or core.closed:
            return
        function, args = task
        function(*args)
        del task, function, args


class _InitBarrier:
    """Lets create_pool wait until every thread ran thread_init, and see its error."""

    def __init__(self, count: int) -> None:
        self._pending = count
        self._cond = threading.Condition()
        self.error: BaseException | None = None

    def arrive(self) -> None:
        with self._cond:
            self._pending -= 1
            self._cond.notify_all()

    def fail(self, error: BaseException) -> None:
        with self._cond:
            if self.error is None:
                self.error = error
            self._pending -= 1
            self._cond.notify_all()

    def wait(self) -> None:
        with self._cond:
            while self._pending > 0:
                self._cond.wait()


class ThreadPool:
    """``num_threads`` daemon threads taking tasks from one queue."""

    def __init__(self, spec: PoolSpec) -> None:
        if spec.num_threads < 1:
            raise ValueError(f"num_threads must be at least 1, got {spec.num_threads}")
        self.num_threads = spec.num_threads
        self._core = _PoolCore()
        ready = _InitBarrier(spec.num_threads)
        self._threads = [
            threading.Thread(
                target=_worker_main,
                args=(self._core, worker_id, spec.thread_init, ready),
                name=f"{spec.name}-threads-{worker_id}",
                daemon=True,
            )
            for worker_id in range(spec.num_threads)
        ]
        for thread in self._threads:
            thread.start()
        _live_pools.add(self)
        ready.wait()
        if ready.error is not None:
            self.close()
            raise ready.error

    @property
    def closed(self) -> bool:
        return self._core.closed

    def track(self, epoch: _EpochState) -> None:
        if self._core.closed:
            raise PoolClosedError("this worker pool is closed")
        self._core.epochs.add(epoch)

    def submit(self, function: Callable[..., None], *args: Any) -> None:
        self._core.tasks.put((function, args))

    def map_batches(self, work: MapWork, stream: StreamSpec) -> MapStream:
        return MapStream(
            self,
            work.jobs,
            work.fetch,
            work.collate,
            stream.window,
            stream.in_order,
            stream.timeout,
            stream.on_timeout,
        )

    def stream_batches(self, work: IterWork, stream: StreamSpec) -> IterableStream:
        return IterableStream(
            self,
            work.open_stream,
            work.num_streams,
            stream.window,
            stream.in_order,
            stream.timeout,
            stream.on_timeout,
        )

    def close(self) -> None:
        core = self._core
        if core.closed:
            return
        core.closed = True
        for epoch in list(core.epochs):
            epoch.close()
        for _ in self._threads:
            core.tasks.put(None)
        _live_pools.discard(self)
        if _exiting:
            return
        deadline = time.monotonic() + CLOSE_JOIN_SECONDS
        current = threading.current_thread()
        busy = 0
        for thread in self._threads:
            if thread is current:
                continue  # closed from a finalizer that ran on a worker
            thread.join(max(0.0, deadline - time.monotonic()))
            busy += thread.is_alive()
        if busy:
            warn_busy_threads(busy, CLOSE_JOIN_SECONDS)


class _Waiter:
    """The consumer's wait for a condition, honouring the timeout and a closed pool."""

    def __init__(self, pool: ThreadPool, timeout: float | None) -> None:
        self._pool = pool
        self._timeout = timeout

    def wait_for(self, cond: threading.Condition, ready: Callable[[], bool]) -> bool:
        """Wait (holding ``cond``) until ``ready()``; False on timeout."""
        deadline = None if self._timeout is None else time.monotonic() + self._timeout
        while not ready():
            if self._pool.closed:
                wait_out_interpreter_exit(_exiting, cond)
                raise PoolClosedError("the worker pool was closed while this epoch was running")
            if deadline is None:
                # Bounded slices so a pool closed elsewhere is noticed.
                cond.wait(0.5)
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            cond.wait(min(remaining, 0.5))
        return True


class _EpochState:
    """What the consumer and the tasks of one epoch share, under ``cond``."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.closed = False

    def close(self) -> None:
        with self.cond:
            self.close_locked()

    def close_locked(self) -> None:
        self.closed = True
        self.clear()
        self.cond.notify_all()

    def clear(self) -> None:
        raise NotImplementedError


class _MapState(_EpochState):
    """One map-style epoch: results by position, positions in completion order."""

    def __init__(self) -> None:
        super().__init__()
        self.results: dict[int, tuple[bool, Any]] = {}
        self.completed: deque[int] = deque()

    def clear(self) -> None:
        self.results.clear()
        self.completed.clear()


def _run_job(
    state: _MapState, job: BatchJob, fetch: Callable[[Any], Any], collate: Callable[[Any], Any]
) -> None:
    if state.closed:
        return
    try:
        result: tuple[bool, Any] = (True, collate(fetch(job.indices)))
    except BaseException as error:
        result = (False, error)
    with state.cond:
        if not state.closed:
            state.results[job.position] = result
            state.completed.append(job.position)
            state.cond.notify_all()
    # The traceback keeps this frame: a local holding the error would make a
    # cycle that only the garbage collector frees, keeping the epoch alive.
    del result


class MapStream:
    """The batches of one map-style epoch."""

    def __init__(
        self,
        pool: ThreadPool,
        jobs: Iterable[BatchJob],
        fetch: Callable[[Any], Any],
        collate: Callable[[Any], Any],
        window: int,
        in_order: bool,
        timeout: float | None,
        on_timeout: Callable[[int], BaseException],
    ) -> None:
        if window < 1:
            raise ValueError(f"window must be at least 1, got {window}")
        self._pool = pool
        self._jobs: Iterator[BatchJob] | None = iter(jobs)
        self._fetch = fetch
        self._collate = collate
        self._window = window
        self._in_order = in_order
        self._on_timeout = on_timeout
        self._waiter = _Waiter(pool, timeout)
        self._state = _MapState()
        pool.track(self._state)
        self._started = 0
        self._consumed = 0
        self._next_position = 0

    def __iter__(self) -> MapStream:
        return self

    def _top_up(self) -> None:
        # Runs on the consumer's thread only: the jobs iterator is the user's sampler.
        while self._jobs is not None and self._started - self._consumed < self._window:
            job = next(self._jobs, None)
            if job is None:
                self._jobs = None
                return
            self._started += 1
            self._pool.submit(_run_job, self._state, job, self._fetch, self._collate)

    def __next__(self) -> Any:
        state = self._state
        if state.closed:
            raise StopIteration
        self._top_up()
        if self._started == self._consumed:
            self.close()
            raise StopIteration
        with state.cond:
            if not self._waiter.wait_for(state.cond, self._ready):
                position = self._next_position if self._in_order else self._consumed
                self._jobs = None
                state.close_locked()
                raise self._on_timeout(position)
            if self._in_order:
                position = self._next_position
                self._next_position += 1
                state.completed.remove(position)
            else:
                position = state.completed.popleft()
            ok, value = state.results.pop(position)
            self._consumed += 1
        self._top_up()
        if ok:
            return value
        try:
            raise value
        finally:
            del value  # else error -> traceback -> this frame -> error: a cycle

    def _ready(self) -> bool:
        if self._in_order:
            return self._next_position in self._state.results
        return bool(self._state.completed)

    def close(self) -> None:
        self._jobs = None
        self._state.close()


class _StreamState(_EpochState):
    """One iterable epoch: a bounded buffer per stream, stream ids in completion order."""

    def __init__(self, num_streams: int) -> None:
        super().__init__()
        self.buffers: list[deque[tuple[bool, Any]]] = [deque() for _ in range(num_streams)]
        self.exhausted = [False] * num_streams
        self.completed: deque[int] = deque()

    def clear(self) -> None:
        for buffer in self.buffers:
            buffer.clear()
        self.completed.clear()


def _drain(
    state: _StreamState, stream_id: int, open_stream: Callable[[int], Iterator[Any]], cap: int
) -> None:
    """Advance one stream on this thread until it ends or the epoch is closed."""
    buffer = state.buffers[stream_id]
    items: Iterator[Any] | None = None
    while True:
        with state.cond:
            while not state.closed and len(buffer) >= cap:
                state.cond.wait()
            if state.closed:
                return
        try:
            if items is None:
                items = open_stream(stream_id)
            result: tuple[bool, Any] = (True, next(items))
        except StopIteration:
            result = (False, None)
        except BaseException as error:
            result = (False, error)
        with state.cond:
            if state.closed:
                return
            ended = not result[0]
            if result[1] is not None or not ended:
                buffer.append(result)
                state.completed.append(stream_id)
            if ended:
                state.exhausted[stream_id] = True
            state.cond.notify_all()
        del result  # see _run_job: no error -> traceback -> frame cycle
        if ended:
            return


class IterableStream:
    """The batches of one iterable-dataset epoch: one stream per worker."""

    def __init__(
        self,
        pool: ThreadPool,
        open_stream: Callable[[int], Iterator[Any]],
        num_streams: int,
        window: int,
        in_order: bool,
        timeout: float | None,
        on_timeout: Callable[[int], BaseException],
    ) -> None:
        if num_streams < 1:
            raise ValueError(f"num_streams must be at least 1, got {num_streams}")
        self._state = _StreamState(num_streams)
        pool.track(self._state)
        self._in_order = in_order
        self._on_timeout = on_timeout
        self._waiter = _Waiter(pool, timeout)
        self._active = list(range(num_streams))
        self._turn = 0
        self._delivered = 0
        cap = max(1, window // num_streams)
        for stream_id in range(num_streams):
            pool.submit(_drain, self._state, stream_id, open_stream, cap)

    def __iter__(self) -> IterableStream:
        return self

    def __next__(self) -> Any:
        state = self._state
        with state.cond:
            ok, value = self._take_in_order() if self._in_order else self._take_any()
            self._delivered += 1
            state.cond.notify_all()  # a drain task may wait for room in its buffer
        if ok:
            return value
        try:
            raise value
        finally:
            del value  # else error -> traceback -> this frame -> error: a cycle

    def _end_if_done(self) -> None:
        if self._state.closed or not self._active:
            self._state.closed = True
            raise StopIteration

    def _wait(self, ready: Callable[[], bool]) -> None:
        state = self._state
        if not self._waiter.wait_for(state.cond, ready):
            state.close_locked()
            raise self._on_timeout(self._delivered)

    def _take_in_order(self) -> tuple[bool, Any]:
        """Round-robin over the streams still running, skipping exhausted ones."""
        state = self._state
        while True:
            self._end_if_done()
            self._turn %= len(self._active)
            stream_id = self._active[self._turn]
            buffer = state.buffers[stream_id]

            def ready(buffer: deque[tuple[bool, Any]] = buffer, stream_id: int = stream_id) -> bool:
                return bool(buffer) or state.exhausted[stream_id]

            self._wait(ready)
            if buffer:
                state.completed.remove(stream_id)
                self._turn += 1
                return buffer.popleft()
            del self._active[self._turn]  # the turn now points at the next stream

    def _take_any(self) -> tuple[bool, Any]:
        """Whatever batch finished first."""
        state = self._state
        self._end_if_done()

        def ready() -> bool:
            return bool(state.completed) or all(state.exhausted[s] for s in self._active)

        self._wait(ready)
        if not state.completed:
            self._active.clear()
            self._end_if_done()
        return state.buffers[state.completed.popleft()].popleft()

    def close(self) -> None:
        self._state.close()


class ThreadsBackend:
    """Entry point ``threads`` of the ``dataloader_api.backends`` group."""

    name = "threads"
    supports_items_in_parallel = False

    def create_pool(self, spec: PoolSpec) -> ThreadPool:
        return ThreadPool(spec)
