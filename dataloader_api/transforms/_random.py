"""The random numbers of one item: a SplitMix64 stream keyed by the epoch's seed
and the item's index.

Written out in integers so that a native backend draws the very same numbers
(``MASK``, the constants and the float conversion are the whole spec). The
stream depends on nothing but ``(epoch_seed, index)``: not on the worker, the
backend or the order in which items are fetched.
"""

from __future__ import annotations

import hashlib
import math
import sys
from typing import Any

__all__ = ["ItemRandom", "index_word"]

MASK = (1 << 64) - 1
_GAMMA = 0x9E3779B97F4A7C15
_INDEX_MIX = 0xD1B54A32D192ED03


def _mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def index_word(index: Any) -> int:
    """The 64-bit word an index keys the stream with: the int itself (two's
    complement), or for a str or bytes key the first 8 bytes of its BLAKE2b
    digest (Python's ``hash`` of a str changes from process to process)."""
    if isinstance(index, int) and not isinstance(index, bool):
        return index & MASK
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(index, numpy.integer):
        return int(index) & MASK
    if isinstance(index, str):
        index = index.encode()
    if isinstance(index, bytes):
        return int.from_bytes(hashlib.blake2b(index, digest_size=8).digest(), "little")
    raise TypeError(
        "random transforms key each item's random numbers by its index, which should be "
        f"an int, str or bytes, but got index={index!r}"
    )


class ItemRandom:
    """Uniform draws for one item's random transforms, in the order they are asked for."""

    __slots__ = ("_state",)

    def __init__(self, epoch_seed: int, index: Any) -> None:
        # The index is mixed before it meets the seed, so that neighbouring
        # indices start far apart in the stream.
        self._state = (epoch_seed ^ _mix((index_word(index) * _INDEX_MIX) & MASK)) & MASK

    def next_u64(self) -> int:
        self._state = (self._state + _GAMMA) & MASK
        return _mix(self._state)

    def uniform(self) -> float:
        """A float in [0, 1) with 53 random bits."""
        return (self.next_u64() >> 11) * (1.0 / (1 << 53))

    def uniform_between(self, low: float, high: float) -> float:
        return low + (high - low) * self.uniform()

    def normal(self) -> float:
        """A standard normal draw (Box-Muller's cosine branch, two uniforms)."""
        radius = math.sqrt(-2.0 * math.log(1.0 - self.uniform()))
        return radius * math.cos(2.0 * math.pi * self.uniform())

    def below(self, bound: int) -> int:
        """An int in [0, bound), bound >= 1 (multiply-shift: no modulo bias worth naming)."""
        return (self.next_u64() * bound) >> 64
