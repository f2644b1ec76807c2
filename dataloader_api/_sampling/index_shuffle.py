"""A seeded shuffle of ``range(n)`` computed position by position: a bijection
whose memory does not grow with ``n`` (Grain's ``index_shuffle`` idea).

A Feistel network permutes the smallest even-bit domain ``2**bits >= n``
(fewer than ``4 * n`` values), and cycle-walking re-applies it to any value
at or past ``n`` until it lands inside; a bijection of the domain restricted
this way is a bijection of ``range(n)``. Any position is one computation
away, so an epoch resumes at batch ``k`` without replaying the first ``k``.

Also the helpers that carry an epoch's indices as int64 chunks (the samplers'
``_index_chunks``) to batches or Python ints.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from .._common.lazy_import import LazyModule
from ..contract._index_batches import batches_of_chunks
from .seeds import derive_seed

if TYPE_CHECKING:
    import numpy as np
else:  # NumPy is imported when first used (_common.lazy_import)
    np = LazyModule("numpy", globals(), "np")

__all__ = [
    "IndexChunks",
    "IndexShuffle",
    "batches_of_chunks",
    "position_chunks",
    "python_ints",
    "shuffled_positions",
]

# An epoch's indices as int64 arrays, in order.
IndexChunks = Iterator["np.ndarray"]
# How many indices of an int64 array become Python ints at a time.
_TO_INTS = 1 << 16

# Six rounds: four already make a Feistel network over random round functions
# a strong pseudo-random permutation (Luby-Rackoff); two more are margin for a
# mixing function that is only a fast hash.
_ROUNDS = 6
# Positions computed per chunk once an epoch is running; the first chunk is
# small, so the first batch does not wait for a whole chunk.
_FIRST_CHUNK = 1 << 10
_CHUNK = 1 << 16


class IndexShuffle:
    """The permutation of ``range(n)`` that ``seed`` picks; ``self(positions)``
    gives the index at each position (an int64 array)."""

    def __init__(self, n: int, seed: int) -> None:
        if n < 0:
            raise ValueError(f"IndexShuffle: n must be non-negative, got n={n!r}")
        if n >= 1 << 62:
            raise ValueError(f"IndexShuffle: n must be below 2**62, got n={n!r}")
        self.n = int(n)
        bits = max(2, (self.n - 1).bit_length())
        bits += bits % 2
        self._half = np.uint64(bits // 2)
        self._mask = np.uint64((1 << (bits // 2)) - 1)
        rng = np.random.Generator(np.random.PCG64(seed))
        self._keys = rng.integers(0, 2**64, size=_ROUNDS, dtype=np.uint64, endpoint=False)

    def __call__(self, positions: np.ndarray) -> np.ndarray:
        values = np.asarray(positions, dtype=np.uint64)
        if self.n <= 1:
            return values.astype(np.int64)
        out = self._encrypt(values)
        outside = np.flatnonzero(out >= self.n)
        while outside.size:  # cycle-walking: fewer than 4 steps are expected
            out[outside] = self._encrypt(out[outside])
            outside = outside[out[outside] >= self.n]
        return out.astype(np.int64)

    def _encrypt(self, values: np.ndarray) -> np.ndarray:
        half, mask = self._half, self._mask
        left = values >> half
        right = values & mask
        for key in self._keys:
            left, right = right, left ^ (_mix(right ^ key) & mask)
        return (left << half) | right


def _mix(z: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser: every input bit reaches every output bit."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    mixed: np.ndarray = z ^ (z >> np.uint64(31))
    return mixed


def position_chunks(start: int, stop: int, multiple_of: int = 1) -> Iterator[np.ndarray]:
    """``range(start, stop)`` as int64 arrays: a small first chunk, then larger
    ones, each but the last a multiple of ``multiple_of`` long (a batch size)."""
    step = max(1, multiple_of)
    size = step * max(1, _FIRST_CHUNK // step)
    while start < stop:
        end = min(stop, start + size)
        yield np.arange(start, end, dtype=np.int64)
        start = end
        size = step * max(1, _CHUNK // step)


def python_ints(chunks: Iterable[np.ndarray]) -> Iterator[int]:
    """The chunks' indices as Python ints, converted a slice at a time."""
    for indices in chunks:
        for start in range(0, len(indices), _TO_INTS):
            yield from indices[start : start + _TO_INTS].tolist()


def shuffled_positions(
    n: int, seed: int, start: int, stop: int, multiple_of: int = 1
) -> IndexChunks:
    """Positions ``start..stop`` of endless passes over ``range(n)``, each pass
    shuffled by its own bijection (pass ``p`` keyed by ``derive_seed(seed, p)``)."""
    if n == 0:
        return
    for lap in range(start // n, -(-stop // n)):
        shuffle = IndexShuffle(n, derive_seed(seed, lap))
        low, high = max(start, lap * n) - lap * n, min(stop, (lap + 1) * n) - lap * n
        for positions in position_chunks(low, high, multiple_of):
            yield shuffle(positions)
