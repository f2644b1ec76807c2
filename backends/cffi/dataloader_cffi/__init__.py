"""The ``cffi`` backend: a pthread pool in C (``csrc/dlpool.c``) driven through cffi.

Each C thread takes one Python thread state when it starts and keeps it,
detached between tasks; every callback into Python re-activates that state.
Map-style epochs run the kit's ``MapStream`` with their window in a C ring of
batch slots (``RingWindow``); iterable epochs run the kit's ``IterableStream``
on the C threads.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, NoReturn

from dataloader_api.contract import (
    ForkedPoolError,
    IterWork,
    MapWork,
    PoolSpec,
    StreamSpec,
    process_id,
)
from dataloader_api.kit import (
    IterableStream,
    MapStream,
    PoolClosedError,
    attach_once,
    on_exit,
    pool_closed,
    register_pool,
    wait_out_interpreter_exit,
)

from ._engine import ffi, lib

__all__ = ["CffiBackend", "CffiPool", "RingWindow"]

# The consumer's wait slice, and join()'s: signals are handled between slices.
WAIT_SLICE_MS = 20

# For the attach-once benchmark and the test that proves attach-once matters.
_ATTACH_MODE_VARIABLE = "DATALOADER_CFFI_ATTACH"

# Interpreter exit: no C thread calls into Python again; then the kit closes every
# registered pool (a no-op for pools inherited through fork()), waiting for none.
on_exit(lib.dl_set_exiting)


class _Core:
    """What the C threads call back into; it holds no user-facing object."""

    def __init__(self, thread_init: Callable[[int], None]) -> None:
        self.thread_init = thread_init
        self.init_error: BaseException | None = None
        # Tasks queued in C by address, kept alive until they start or are dropped.
        self.pending: dict[int, _Task] = {}

    def init(self, worker_id: int) -> bool:
        """Runs once on each C thread before any task (C treats False as a failure)."""
        try:
            self.thread_init(worker_id)
        except BaseException as error:
            if self.init_error is None:
                self.init_error = error
            return False
        return True


class _Task:
    """One task, called by a C thread; C holds its address, ``pending`` the object."""

    __slots__ = ("args", "core", "function")

    def __init__(self, core: _Core, function: Callable[..., None], args: tuple[Any, ...]):
        self.core, self.function, self.args = core, function, args

    def __call__(self) -> None:
        self.core.pending.pop(id(self), None)
        self.function(*self.args)


def _noop() -> None:
    """Free-threaded builds: an idle C thread runs this to free what it made."""


lib.dl_py_setup(ffi.cast("void *", id(_noop)))


class CffiPool:
    """``num_threads`` C threads taking tasks from one queue."""

    def __init__(self, spec: PoolSpec) -> None:
        self.num_threads = spec.num_threads
        self.attach_once = attach_once(_ATTACH_MODE_VARIABLE)
        self._core = _Core(spec.thread_init)
        self._epochs: weakref.WeakSet[Any] = weakref.WeakSet()
        self._closed = False
        self._pid = process_id()  # a forked child inherits none of the C threads
        status = ffi.new("int *")
        init = self._core.init  # alive while the threads start, the only time C uses it
        pool = lib.dl_py_pool_new(
            spec.num_threads,
            spec.stack_size,
            ffi.cast("void *", id(init)),
            int(self.attach_once),
            status,
        )
        del init
        if pool == ffi.NULL:
            self._closed = True
            if status[0] == lib.DL_INIT_FAILED and self._core.init_error is not None:
                error, self._core.init_error = self._core.init_error, None
                try:
                    raise error
                finally:
                    del error
            if status[0] == lib.DL_NOMEM:
                raise MemoryError("dataloader_cffi: out of memory starting the worker pool")
            raise RuntimeError(
                f"dataloader_cffi: could not start {spec.num_threads} worker threads"
            )
        self._pool = pool
        register_pool(self)

    @property
    def closed(self) -> bool:
        return self._closed

    def _inherited(self) -> bool:
        return process_id() != self._pid  # per batch: no system call

    def check_process(self) -> None:
        """Raise if this pool came through ``fork()``: using it would wait forever."""
        if self._inherited():
            raise ForkedPoolError(
                f"this worker pool's threads belong to process {self._pid}, and a forked "
                "child has none: create the DataLoader in the process that iterates it, or "
                "use persistent_workers=False so that each epoch starts its own threads"
            )

    def track(self, epoch: Any) -> None:
        self.check_process()
        if self._closed:
            raise PoolClosedError("this worker pool is closed")
        self._epochs.add(epoch)

    def submit(self, function: Callable[..., None], *args: Any) -> None:
        self.check_process()
        task = _Task(self._core, function, args)
        self._core.pending[id(task)] = task
        status = lib.dl_pool_submit(self._pool, ffi.cast("void *", id(task)))
        if status != lib.DL_OK:
            self._core.pending.pop(id(task), None)
            if status == lib.DL_NOMEM:
                raise MemoryError("dataloader_cffi: out of memory queueing a task")
            wait_out_interpreter_exit()  # closed by the exit hook: park, as a daemon thread
            raise PoolClosedError("the worker pool was closed while this epoch was running")

    def map_batches(self, work: MapWork, stream: StreamSpec) -> MapStream:
        return MapStream(self, work, stream, RingWindow(self, stream))

    def stream_batches(self, work: IterWork, stream: StreamSpec) -> IterableStream:
        return IterableStream(self, work, stream)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        pool_closed(self)
        if self._inherited():
            # No thread to stop or wait for here, and a parent thread may have held
            # the C pool's lock at the fork: leave it alone.
            return
        for epoch in list(self._epochs):
            epoch.close()
        lib.dl_pool_close(self._pool, 0)  # prompt: a thread busy in user code ends later
        dropped = ffi.new("void *[64]")
        while (count := lib.dl_pool_take_dropped(self._pool, dropped, 64)) > 0:
            for i in range(count):
                self._core.pending.pop(int(ffi.cast("uintptr_t", dropped[i])), None)

    def join(self, timeout: float | None = None) -> bool:
        if self._inherited() or not hasattr(self, "_pool"):
            return True  # no thread of this pool runs in this process
        deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
        while True:
            wait_ms = WAIT_SLICE_MS
            if deadline is not None:
                wait_ms = max(0, min(wait_ms, int((deadline - time.monotonic()) * 1000)))
            # Waits without the GIL (cffi releases it); returns the threads still alive.
            if lib.dl_pool_wait(self._pool, wait_ms) == 0:
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False

    def __del__(self) -> None:
        pool = getattr(self, "_pool", None)
        if pool is None or self._inherited():
            return
        if not self._closed:
            self._closed = True
            lib.dl_pool_close(pool, 0)
        lib.dl_pool_release(pool)  # freed in C once its threads have left


class RingWindow:
    """The kit's ``BatchWindow`` as a C ring of batch slots: the consumer's wait runs
    in C without the GIL, in slices between which signals are raised."""

    def __init__(self, pool: CffiPool, stream: StreamSpec) -> None:
        ring = lib.dl_ring_new(stream.window, int(stream.in_order))
        if ring == ffi.NULL:
            raise MemoryError("dataloader_cffi: out of memory for the batch window")
        self.ring = ffi.gc(ring, lib.dl_ring_release)
        self._pool = pool
        self._lock = threading.Lock()
        self._results: dict[int, tuple[bool, Any]] = {}
        self._position = ffi.new("long *")
        self.closed = False

    def has_room(self) -> bool:
        return bool(lib.dl_ring_has_room(self.ring))

    def start(self) -> None:
        lib.dl_ring_start(self.ring)

    def store(self, position: int, outcome: tuple[bool, Any]) -> None:
        with self._lock:
            if not self.closed:
                self._results[position] = outcome
        lib.dl_ring_finish(self.ring, position)

    def idle(self) -> bool:
        return bool(lib.dl_ring_idle(self.ring))

    def take(self, timeout: float | None) -> tuple[int, tuple[bool, Any]] | None:
        self._pool.check_process()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            wait_ms = WAIT_SLICE_MS
            if deadline is not None:
                wait_ms = max(0, min(wait_ms, int((deadline - time.monotonic()) * 1000) + 1))
            got = lib.dl_ring_wait(self.ring, wait_ms, self._position)
            if got == 1:
                break
            if got < 0 or self.closed:
                self._closed_under_us()
            if deadline is not None and time.monotonic() >= deadline:
                return None
        position = self._position[0]
        with self._lock:
            outcome = self._results.pop(position, None)
        if outcome is None:  # closed (its results cleared) since the batch was ready
            self._closed_under_us()
        return position, outcome

    def _closed_under_us(self) -> NoReturn:
        """Closed while the consumer waited: by its pool's close (at interpreter
        exit, a consumer on another thread parks) or its own."""
        if self._pool.closed:
            wait_out_interpreter_exit()
            raise PoolClosedError("the worker pool was closed while this epoch was running")
        raise StopIteration

    def waiting_for(self) -> int:
        return int(lib.dl_ring_waiting_for(self.ring))

    def close(self) -> None:
        self.closed = True
        lib.dl_ring_close(self.ring)
        with self._lock:
            self._results.clear()


class CffiBackend:
    """Entry point ``cffi`` of the ``dataloader_api.backends`` group."""

    name = "cffi"
    supports_items_in_parallel = False

    def create_pool(self, spec: PoolSpec) -> CffiPool:
        return CffiPool(spec)

    def pool_settings(self) -> object:
        """What ``create_pool`` reads besides its spec: an idle pool made with
        another attach mode is not shared (``Backend.pool_settings``)."""
        return attach_once(_ATTACH_MODE_VARIABLE)
