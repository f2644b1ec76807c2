"""Shared helpers: the tests run against the backend chosen by DATALOADER_BACKEND
(default: the best installed one), so `DATALOADER_BACKEND=rust nox -s tests`
checks that backend."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator

import pytest


def os_thread_count() -> int:
    """Threads of this process as the OS sees them (native ones included)."""
    return len(os.listdir("/proc/self/task"))


def wait_until(condition, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return condition()


@pytest.fixture
def no_leaked_threads() -> Iterator[None]:
    """Fails the test if worker threads outlive it."""
    before_py = threading.active_count()
    before_os = os_thread_count()
    yield
    assert wait_until(lambda: threading.active_count() <= before_py), threading.enumerate()
    assert wait_until(lambda: os_thread_count() <= before_os), os_thread_count()


class CallLog:
    """A map-style dataset that records which indices were fetched, and when."""

    def __init__(self, length: int, delay: float = 0.0, slow: dict[int, float] | None = None):
        self.length = length
        self.delay = delay
        self.slow = slow or {}
        self.calls: list[int] = []
        self.lock = threading.Lock()

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> int:
        with self.lock:
            self.calls.append(index)
        pause = self.slow.get(index, self.delay)
        if pause:
            time.sleep(pause)
        return index
