"""Dataset base classes (optional: any object with the right methods works) and
the built-in synthetic dataset the demo loads."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Generic, TypeVar

from ._common.lazy_import import LazyModule

if TYPE_CHECKING:
    import numpy as np
else:  # NumPy is imported when first used (_common.lazy_import)
    np = LazyModule("numpy", globals(), "np")


__all__ = ["Dataset", "IterableDataset", "SyntheticImages"]

T_co = TypeVar("T_co", covariant=True)


class Dataset(Generic[T_co]):
    """A map-style dataset: ``__getitem__(index)`` and ``__len__()``; generic like
    torch's (``Dataset[Tensor]``)."""

    def __getitem__(self, index: int) -> T_co:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError


class IterableDataset(Generic[T_co]):
    """An iterable dataset: ``__iter__()``; each worker iterates its own shallow copy."""

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError


class SyntheticImages(Dataset["tuple[np.ndarray, int]"]):
    """``length`` items of a ``shape`` float32 array and an int64 label, made on demand.

    Each item is a deterministic function of its index and ``seed``: raw bytes
    "read" with ``read_latency`` seconds of simulated storage latency (a sleep,
    which releases the GIL as real I/O does), then decoded and normalised with
    NumPy the way an image pipeline would.
    """

    def __init__(
        self,
        length: int = 4096,
        shape: tuple[int, ...] = (3, 32, 32),
        num_classes: int = 10,
        seed: int = 0,
        read_latency: float = 0.0,
    ) -> None:
        if length < 0:
            raise ValueError(f"length should be non-negative, got length={length}")
        if num_classes < 1:
            raise ValueError(f"num_classes should be at least 1, got num_classes={num_classes}")
        if read_latency < 0:
            raise ValueError(
                f"read_latency should be non-negative, got read_latency={read_latency}"
            )
        self.length = length
        self.shape = tuple(shape)
        self.num_classes = num_classes
        self.seed = seed
        self.read_latency = read_latency

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> tuple[np.ndarray, int]:
        if not -self.length <= index < self.length:
            raise IndexError(f"index {index} is out of range for {self.length} items")
        index %= self.length
        if self.read_latency:
            time.sleep(self.read_latency)
        rng = np.random.default_rng((self.seed, index))
        raw = rng.integers(0, 256, size=self.shape, dtype=np.uint8)
        image = (raw.astype(np.float32) / 255.0 - 0.5) / 0.25
        return image, int(index % self.num_classes)
