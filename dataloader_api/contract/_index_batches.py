"""``IndexBatches``: a map-style epoch's plan given as data (``MapWork.jobs``).

When the batch sampler is the library's own, the loader knows the epoch's order
as int64 arrays before any batch is cut from it. It hands the backend those
arrays instead of a Python iterator of jobs, so a backend may cut the batches
itself and make each batch's list of ints without running Python per batch.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any

from ._values import BatchJob

__all__ = ["PIECE", "IndexBatches", "batches_of_chunks"]

#: indices handed out at most per ``next_chunk()``
PIECE = 65536


class IndexBatches:
    """The jobs of one epoch: batches of ``batch_size`` consecutive indices cut
    from ``chunks`` (an iterator of 1-D int64 arrays, or of sequences of ints),
    a batch spanning two chunks where they meet; a shorter last batch unless
    ``drop_last``. Jobs are numbered from 0.

    A backend may iterate it like any plan (``BatchJob``s with lists of ints),
    or read it natively: ``next_chunk()`` gives the next chunk (``None`` at the
    end) and the backend cuts the batches itself, equal to the iteration's. The
    last ``memory`` chunks handed out are remembered, so ``indices_of(position)``
    can name a recent batch's indices (for a timeout's message) either way.
    """

    __slots__ = ("_chunks", "_offset", "_recent", "_rest", "batch_size", "drop_last")

    def __init__(self, chunks: Iterator[Any], batch_size: int, drop_last: bool, memory: int = 2):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"IndexBatches.batch_size must be an int >= 1, got {batch_size!r}")
        self._chunks = chunks
        self.batch_size = batch_size
        self.drop_last = bool(drop_last)
        self._offset = 0  # the epoch's position of the next chunk's first index
        self._rest: Any = None  # what is left of a long chunk
        self._recent: deque[tuple[int, Any]] = deque(maxlen=max(2, memory))

    def next_chunk(self) -> Any:
        """The next chunk of indices, or None after the last one. A long chunk (a
        whole permutation) comes in pieces, so a backend copies a piece at a time."""
        while True:
            chunk, self._rest = self._rest, None
            if chunk is None:
                chunk = next(self._chunks, None)
                if chunk is None:
                    return None
            if len(chunk) > PIECE:
                chunk, self._rest = chunk[:PIECE], chunk[PIECE:]
            if len(chunk):
                self._recent.append((self._offset, chunk))
                self._offset += len(chunk)
                return chunk

    def __iter__(self) -> Iterator[BatchJob]:
        batches = batches_of_chunks(self._handed_out(), self.batch_size, self.drop_last)
        for position, indices in enumerate(batches):
            yield BatchJob(position, indices)

    def _handed_out(self) -> Iterator[Any]:
        while (chunk := self.next_chunk()) is not None:
            yield chunk

    def indices_of(self, position: int) -> list[int] | None:
        """Batch ``position``'s indices if its chunks are still remembered, else None."""
        first = position * self.batch_size
        last = first + self.batch_size
        found: list[int] = []
        for offset, chunk in self._recent:
            low, high = max(first, offset), min(last, offset + len(chunk))
            if low < high:
                if low != first + len(found):
                    return None  # its start was forgotten
                found += _ints(chunk[low - offset : high - offset])
        return found or None


def _ints(part: Any) -> list[int]:
    """A slice of a chunk as a list of Python ints."""
    tolist = getattr(part, "tolist", None)
    return tolist() if tolist is not None else [int(i) for i in part]


def batches_of_chunks(
    chunks: Iterable[Any], size: int, drop_last: bool, ranges: bool = False
) -> Iterator[Any]:
    """Lists of ``size`` indices sliced from the chunks (int64 arrays, or any
    sequences of ints), a batch may span two. ``ranges``: a chunk of consecutive
    indices (a sequential plan's) gives ``range``s, no list made per batch."""
    import numpy as np  # imported when a plan is first cut, not with the contract

    carry = None
    for chunk in chunks:
        chunk = np.asarray(chunk, dtype=np.int64)  # no copy for an int64 array
        if carry is not None:
            chunk, carry = np.concatenate([carry, chunk]), None
        whole = len(chunk) - len(chunk) % size
        if ranges and whole and _consecutive(chunk[:whole]):
            first = int(chunk[0])
            for start in range(first, first + whole, size):
                yield range(start, start + size)
        else:
            for start in range(0, whole, size):
                yield chunk[start : start + size].tolist()
        if whole < len(chunk):
            carry = chunk[whole:]
    if carry is not None and not drop_last:
        yield carry.tolist()


def _consecutive(chunk: Any) -> bool:
    """Whether an int64 array is ``first, first + 1, ...`` (checked at the ends first:
    a shuffled chunk fails there)."""
    import numpy as np

    return bool(chunk[-1] - chunk[0] == len(chunk) - 1 and (np.diff(chunk) == 1).all())
