"""A minimal dataloader_api backend: its own worker threads, the kit's streams.

The example of docs/backends.md; the conformance suite runs against it in CI.
A backend brings an engine that runs Python callables on its threads (here
plain ``threading`` threads and one task queue; in a native backend, C or Rust
threads). ``dataloader_api.kit`` turns that engine into the contract: the
window, ordering, errors, timeouts and iterable streams (``MapStream``,
``IterableStream``), and closing every pool at interpreter exit.
"""

from __future__ import annotations

import queue
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from dataloader_api.contract import IterWork, MapWork, PoolSpec, StreamSpec
from dataloader_api.kit import (
    EpochState,
    IterableStream,
    MapStream,
    PoolClosedError,
    pool_closed,
    register_pool,
    start_threads,
)

IDLE_WAKE = 0.2  # seconds an idle pool thread sleeps between wake-ups
JOIN_SLICE = 0.05  # join() waits in slices this long

Task = tuple[Callable[..., None], tuple[Any, ...]]


class MinimalBackend:
    name = "minimal"
    supports_items_in_parallel = False

    def create_pool(self, spec: PoolSpec) -> MinimalPool:
        return MinimalPool(spec)


def _run(
    tasks: queue.SimpleQueue[Task | None],
    worker_id: int,
    spec: PoolSpec,
    started: threading.Barrier,
    init_errors: list[BaseException],
) -> None:
    # Threads get the queue, never the pool: the pool must be free to be collected.
    try:
        spec.thread_init(worker_id)  # once, on this thread, before any task
    except BaseException as error:
        init_errors.append(error)
        started.wait()
        return
    started.wait()
    while True:
        try:
            # Wake now and then: on free-threaded builds a thread must run to
            # free objects it made that others dropped (an exception).
            task = tasks.get(timeout=IDLE_WAKE)
        except queue.Empty:
            continue
        if task is None:
            return
        function, args = task
        function(*args)
        del task, function, args


class MinimalPool:
    """The engine: ``submit``, ``track`` and ``closed`` are all the kit's streams need."""

    def __init__(self, spec: PoolSpec) -> None:
        self._tasks: queue.SimpleQueue[Task | None] = queue.SimpleQueue()
        self._closed = False
        self._epochs: weakref.WeakSet[EpochState] = weakref.WeakSet()
        init_errors: list[BaseException] = []
        started = threading.Barrier(spec.num_threads + 1)
        self._threads = [
            threading.Thread(
                target=_run,
                args=(self._tasks, i, spec, started, init_errors),
                daemon=True,
                name=f"minimal-{i}",
            )
            for i in range(spec.num_threads)
        ]
        start_threads(self._threads, spec.stack_size)  # the pool's stack, not glibc's fallback
        register_pool(self)  # closed at interpreter exit, without waiting
        started.wait()
        if init_errors:
            self.close()
            raise init_errors[0]

    # -- what the kit's streams use (dataloader_api.kit.TaskRunner) ---------

    @property
    def closed(self) -> bool:
        return self._closed

    def track(self, epoch: EpochState) -> None:
        if self._closed:
            raise PoolClosedError("this worker pool is closed")
        self._epochs.add(epoch)

    def submit(self, function: Callable[..., None], *args: Any) -> None:
        self._tasks.put((function, args))

    # -- the contract (dataloader_api.contract.WorkerPool) ------------------

    def map_batches(self, work: MapWork, stream: StreamSpec) -> MapStream:
        return MapStream(self, work, stream)

    def stream_batches(self, work: IterWork, stream: StreamSpec) -> IterableStream:
        return IterableStream(self, work, stream)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for epoch in list(self._epochs):
            epoch.close()  # no job of theirs starts from now on
        for _ in self._threads:
            self._tasks.put(None)  # each thread ends once idle; nothing waits here
        pool_closed(self)

    def join(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in self._threads:
            if thread is threading.current_thread():
                continue
            while thread.is_alive():
                left = JOIN_SLICE if deadline is None else deadline - time.monotonic()
                if left <= 0:
                    return False
                thread.join(min(left, JOIN_SLICE))  # slices: KeyboardInterrupt gets through
        return True
