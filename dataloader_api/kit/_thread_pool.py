"""``ThreadPool``: Python ``threading`` workers taking tasks from one queue.

The contract's reference pool: the ``threads`` backend is this pool, the
broken fixtures wrap it, and its streams are the kit's ``MapStream`` and
``IterableStream``.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from queue import Empty, SimpleQueue
from typing import Any

from ..contract import IterWork, MapWork, PoolSpec, StreamSpec
from ._epoch_state import Closable, PoolClosedError
from ._exit import pool_closed, register_pool
from ._iter_stream import IterableStream
from ._map_stream import MapStream

__all__ = ["ThreadPool", "start_threads"]

# An idle worker wakes this often. On free-threaded builds an object made on a
# worker (an exception it raised, say) and dropped by the consumer is freed by
# its owner thread, which must run to do it; else a failed epoch stays alive.
IDLE_WAKE_SECONDS = 0.2
# join() waits in slices this long, between which signals are handled.
JOIN_SLICE = 0.05


class _PoolCore:
    """What worker threads share; it holds no reference to any user-facing object."""

    def __init__(self) -> None:
        self.tasks: SimpleQueue[tuple[Callable[..., None], tuple[Any, ...]] | None] = SimpleQueue()
        self.closed = False
        # Epochs still running, so closing the pool wakes their waiting tasks.
        self.epochs: weakref.WeakSet[Closable] = weakref.WeakSet()


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


# threading.stack_size() is one setting of the process: two pools starting at once
# must not give each other's threads, or the user, the wrong size back.
_STACK_SIZE_LOCK = threading.Lock()


def start_threads(threads: list[threading.Thread], stack_size: int) -> None:
    """Starts ``threads`` with ``stack_size`` bytes of stack each (``PoolSpec.stack_size``:
    glibc's 2 MiB fallback under ``ulimit -s unlimited`` is too small for NumPy's LU),
    then gives ``threading.stack_size()`` back its value."""
    with _STACK_SIZE_LOCK:
        previous = threading.stack_size(stack_size)
        try:
            for thread in threads:
                thread.start()
        finally:
            threading.stack_size(previous)


class ThreadPool:
    """``num_threads`` daemon threads taking tasks from one queue."""

    def __init__(self, spec: PoolSpec) -> None:
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
        start_threads(self._threads, spec.stack_size)
        register_pool(self)
        ready.wait()
        if ready.error is not None:
            self.close()
            raise ready.error

    @property
    def closed(self) -> bool:
        return self._core.closed

    def track(self, epoch: Closable) -> None:
        if self._core.closed:
            raise PoolClosedError("this worker pool is closed")
        self._core.epochs.add(epoch)

    def submit(self, function: Callable[..., None], *args: Any) -> None:
        self._core.tasks.put((function, args))

    def map_batches(self, work: MapWork, stream: StreamSpec) -> MapStream:
        return MapStream(self, work, stream)

    def stream_batches(self, work: IterWork, stream: StreamSpec) -> IterableStream:
        return IterableStream(self, work, stream)

    def close(self) -> None:
        core = self._core
        if core.closed:
            return
        core.closed = True
        for epoch in list(core.epochs):
            epoch.close()
        for _ in self._threads:
            core.tasks.put(None)
        pool_closed(self)

    def join(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
        current = threading.current_thread()
        for thread in self._threads:
            if thread is current:
                continue  # joined from a finalizer that ran on a worker
            while thread.is_alive():
                # Slices: a join with no limit stays interruptible on every build.
                left = JOIN_SLICE if deadline is None else deadline - time.monotonic()
                if left <= 0:
                    return False
                thread.join(min(left, JOIN_SLICE))
        return True
