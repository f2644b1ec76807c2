"""Probes for testing loaders and backends: shared by this project's unit tests
and conformance suite, and usable by a backend author's own tests."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ._common.worker_info import get_worker_info
from ._datasets import IterableDataset
from ._features.idle_pools import release_idle_workers

__all__ = [
    "SIGINT_RAISES",
    "ItemError",
    "Recorder",
    "ResumableShards",
    "os_thread_count",
    "python_thread_count",
    "sigint_raises_keyboard_interrupt",
    "stack_size_of_this_thread",
    "wait_until",
]

# For a child interpreter's code: what sigint_raises_keyboard_interrupt does, for good.
SIGINT_RAISES = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"


@contextmanager
def sigint_raises_keyboard_interrupt() -> Iterator[None]:
    """SIGINT (and ``_thread.interrupt_main()``) raise ``KeyboardInterrupt`` inside the
    block, also in a process started with SIGINT ignored (a background job, ``nohup``,
    some CI runners), where Python installs no handler and ``interrupt_main`` does
    nothing. The handler that was there is put back afterwards. Main thread only."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def os_thread_count() -> int:
    """Threads of this process as the OS sees them (native pool threads included),
    once the idle pools finished epochs left for later loaders are closed (they
    would otherwise count as leaked, or hide a leak: ``release_idle_workers``)."""
    release_idle_workers()
    return len(os.listdir("/proc/self/task"))


def python_thread_count() -> int:
    """``threading.active_count()`` once the idle pools are closed, as above."""
    release_idle_workers()
    return threading.active_count()


def stack_size_of_this_thread() -> int | None:
    """Bytes of stack of the calling thread (glibc's ``pthread_getattr_np``), or None
    where that cannot be read."""
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        getattr_np = libc.pthread_getattr_np
    except (OSError, AttributeError):
        return None
    libc.pthread_self.restype = ctypes.c_ulong
    getattr_np.argtypes = [ctypes.c_ulong, ctypes.c_void_p]
    attr = ctypes.create_string_buffer(256)  # larger than any pthread_attr_t
    if getattr_np(libc.pthread_self(), attr) != 0:
        return None
    address, size = ctypes.c_void_p(), ctypes.c_size_t()
    try:
        if libc.pthread_attr_getstack(attr, ctypes.byref(address), ctypes.byref(size)) != 0:
            return None
    finally:
        libc.pthread_attr_destroy(attr)
    return size.value


def wait_until(condition: Callable[[], bool], seconds: float = 30.0) -> bool:
    """Poll ``condition`` until it holds or ``seconds`` pass; its last value.
    ``seconds`` only bounds a failing test, so it is generous: a loaded machine
    can be seconds late, and a passing test returns as soon as it holds."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.005)
    return condition()


class ItemError(Exception):
    """Raised by a :class:`Recorder` item on purpose."""


def raise_item_error(index: int) -> None:
    raise ItemError(f"item {index} failed on purpose")


class Recorder:
    """A map-style dataset of ``index -> index`` that logs every call.

    ``delay`` seconds of sleep per item, or ``slow[index]`` for some;
    ``blocked`` indices wait on ``release`` (at most ``block_limit`` seconds,
    so a broken backend cannot hang a test); ``failing`` indices raise
    :class:`ItemError` from :func:`raise_item_error`. ``finished`` logs every
    call that has returned or raised: a test asks "is item 4 still running?"
    instead of timing it, which a loaded machine cannot fool.
    """

    def __init__(
        self,
        length: int,
        delay: float = 0.0,
        slow: dict[int, float] | None = None,
        blocked: set[int] | None = None,
        failing: set[int] | None = None,
        block_limit: float = 10.0,
    ) -> None:
        self.length = length
        self.delay = delay
        self.slow = slow or {}
        self.blocked = blocked or set()
        self.failing = failing or set()
        self.block_limit = block_limit
        self.release = threading.Event()
        self.calls: list[int] = []
        self.finished: list[int] = []
        self.threads: set[int] = set()
        self.lock = threading.Lock()

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> int:
        with self.lock:
            self.calls.append(index)
            self.threads.add(threading.get_ident())
        try:
            pause = self.slow.get(index, self.delay)
            if pause:
                time.sleep(pause)
            if index in self.blocked:
                self.release.wait(self.block_limit)
            if index in self.failing:
                raise_item_error(index)
            return index
        finally:
            with self.lock:
                self.finished.append(index)

    def returned(self, index: int) -> bool:
        """A call of item ``index`` has returned (or raised)."""
        with self.lock:
            return index in self.finished


class ResumableShards(IterableDataset[int]):
    """``range(n)`` in strided shards, one per worker (torch's idiom), that
    follows the resume protocol: it reports, and can be told, where it is."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.start: int | None = None
        self.position: int | None = None

    def __iter__(self) -> Iterator[int]:
        info = get_worker_info()
        workers, shard = (info.num_workers, info.id) if info else (1, 0)
        first = self.start if self.start is not None else shard
        self.start = None
        for i in range(first, self.n, workers):
            self.position = i + workers
            yield i

    def state_dict(self) -> dict[str, Any]:
        return {"start": self.position}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.start = state["start"]
