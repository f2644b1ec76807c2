"""Datasets and probes the properties share."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable


def os_thread_count() -> int:
    """Threads of this process as the OS sees them, native pool threads included."""
    return len(os.listdir("/proc/self/task"))


def wait_until(condition: Callable[[], bool], seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.005)
    return condition()


class Recorder:
    """A map-style dataset of ``index -> index`` that logs every call.

    ``slow`` maps indices to seconds of sleep; ``blocked`` indices wait on
    ``release`` (bounded by ``block_limit`` so a broken backend cannot hang
    the suite); ``failing`` indices raise ``ItemError``.
    """

    def __init__(
        self,
        length: int,
        slow: dict[int, float] | None = None,
        blocked: set[int] | None = None,
        failing: set[int] | None = None,
        block_limit: float = 10.0,
    ) -> None:
        self.length = length
        self.slow = slow or {}
        self.blocked = blocked or set()
        self.failing = failing or set()
        self.block_limit = block_limit
        self.release = threading.Event()
        self.calls: list[int] = []
        self.threads: set[int] = set()
        self.lock = threading.Lock()

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> int:
        with self.lock:
            self.calls.append(index)
            self.threads.add(threading.get_ident())
        if index in self.slow:
            time.sleep(self.slow[index])
        if index in self.blocked:
            self.release.wait(self.block_limit)
        if index in self.failing:
            raise_item_error(index)
        return index


class ItemError(Exception):
    """Raised by a dataset item on purpose."""


def raise_item_error(index: int) -> None:
    raise ItemError(f"item {index} failed on purpose")


def batches_as_lists(loader: object) -> list[list[int]]:
    return [batch.tolist() for batch in loader]  # type: ignore[attr-defined]
