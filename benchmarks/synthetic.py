"""The synthetic datasets the workloads read. Each keeps the arguments it was made
with in ``args``, so peers.for_dataloader_rs can make the same one again as a
dataloader-rs PyDataset.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np


class Trivial:
    """``__getitem__`` returns the index: what is left is the loader's own cost."""

    def __init__(self, length: int) -> None:
        super().__init__()  # dataloader-rs's PyDataset needs its __init__
        self.length = length
        # what peers.for_dataloader_rs passes to make the same dataset again
        self.args: tuple[Any, ...] = (length,)

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> Any:
        return index


class TrivialBatches(Trivial):
    """``Trivial`` with ``__getitems__``: one call per batch, which torch, dataloader-rs
    and ours all use when a dataset defines it."""

    def __getitems__(self, indices: list[int]) -> list[Any]:
        return list(indices)


class Sleepy(Trivial):
    """Each item waits ``seconds`` with the GIL released, like a read from storage."""

    def __init__(self, length: int, seconds: float) -> None:
        super().__init__(length)
        self.seconds = seconds
        self.args = (length, seconds)

    def __getitem__(self, index: int) -> Any:
        time.sleep(self.seconds)
        return index


class Arrays(Trivial):
    """NumPy items of one shape and dtype (64 distinct ones, reused)."""

    def __init__(self, length: int, shape: tuple[int, ...], dtype: str) -> None:
        super().__init__(length)
        self.args = (length, shape, dtype)
        rng = np.random.default_rng(0)
        if dtype == "uint8":
            self.items = [rng.integers(0, 256, shape, dtype=np.uint8) for _ in range(64)]
        else:
            self.items = [rng.random(shape, dtype=np.float32) for _ in range(64)]

    def __getitem__(self, index: int) -> Any:
        return self.items[index % 64]


class PythonWork(Trivial):
    """About 1 ms of pure-Python bytecode per item (no GIL release)."""

    def __init__(self, length: int, loops: int) -> None:
        super().__init__(length)
        self.loops = loops
        self.args = (length, loops)

    def __getitem__(self, index: int) -> Any:
        total = index
        for i in range(self.loops):
            total = (total * 31 + i) % 1_000_003
        return total


class Blobs(Trivial):
    """An in-memory dataset of ``megabytes`` MiB in 4 KiB ``bytes`` objects."""

    def __init__(self, megabytes: int) -> None:
        count = megabytes * 256
        super().__init__(count)
        self.blobs = [bytes([i % 251]) * 4096 for i in range(count)]
        self.args = (megabytes,)

    def __getitem__(self, index: int) -> Any:
        return len(self.blobs[index])
