"""``BatchSampler`` with PyTorch's name, arguments and checks, and how an epoch's
batches start after the ones a resumed epoch had delivered."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any

from .index_shuffle import IndexChunks, batches_of_chunks, position_chunks
from .samplers import CHUNKED_ITERS, Sampler, SequentialSampler
from .seeds import is_int

__all__ = ["BatchSampler", "load_sampler_state", "sampler_state", "skip_batches"]


class BatchSampler(Sampler[list[int]]):
    """Groups the indices of ``sampler`` into lists of ``batch_size``, as
    [torch's](https://pytorch.org/docs/stable/data.html#torch.utils.data.BatchSampler).

    Args:
        sampler: The indices to group.
        batch_size: Indices per batch.
        drop_last: Drop the last list when it is shorter than ``batch_size``.
    """

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool) -> None:
        if not is_int(batch_size) or batch_size <= 0:
            raise ValueError(
                f"batch_size should be a positive integer value, but got batch_size={batch_size!r}"
            )
        if not isinstance(drop_last, bool):
            raise ValueError(
                f"drop_last should be a boolean value, but got drop_last={drop_last!r}"
            )
        self.sampler = sampler
        self.batch_size = int(batch_size)
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        return self.batches_from(0)

    def batches_from(self, skip: int) -> Iterator[list[int]]:
        """This epoch's batches after the first ``skip`` (a resumed epoch). Our
        samplers' epochs start at the position without computing what it skips."""
        size = self.batch_size
        if type(self.sampler) is SequentialSampler:
            # The common case, without touching each index in Python.
            n = len(self.sampler)
            stop = n - n % size if self.drop_last else n
            for start in range(skip * size, stop, size):
                yield list(range(start, min(start + size, n)))
            return
        chunks = self.index_chunks(skip)
        if chunks is not None:
            # Batches sliced from int64 arrays: no Python int per index is made
            # ahead of its batch.
            yield from batches_of_chunks(chunks, size, self.drop_last)
            return
        yield from islice(_batches_of_ints(iter(self.sampler), size, self.drop_last), skip, None)

    def index_chunks(self, skip: int) -> IndexChunks | None:
        """This epoch's indices after the first ``skip`` batches as int64 arrays
        (drawing the epoch's seed, as iterating does), for ``IndexBatches``;
        None for a sampler whose order is known only by iterating it."""
        size = self.batch_size
        if type(self.sampler) is SequentialSampler:
            return position_chunks(skip * size, len(self.sampler), size)
        if type(self.sampler).__iter__ in CHUNKED_ITERS:
            return self.sampler._index_chunks(skip * size, size)  # type: ignore[no-any-return,attr-defined]
        return None

    def state_dict(self) -> dict[str, Any]:
        return {"sampler": sampler_state(self.sampler)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        load_sampler_state(self.sampler, state["sampler"])

    def __len__(self) -> int:
        size = len(self.sampler)  # type: ignore[arg-type]
        if self.drop_last:
            return size // self.batch_size
        return (size + self.batch_size - 1) // self.batch_size


def _batches_of_ints(indices: Iterator[int], size: int, drop_last: bool) -> Iterator[list[int]]:
    while batch := list(islice(indices, size)):
        if len(batch) < size and drop_last:
            return
        yield batch


def skip_batches(index_source: Iterable[Any], skip: int) -> Iterator[Any]:
    """The index source's epoch after its first ``skip`` items (batches of a
    batch sampler), starting there directly where the source allows it."""
    if type(index_source) is BatchSampler:
        return index_source.batches_from(skip)
    return islice(index_source, skip, None)


def sampler_state(sampler: Any) -> Any:
    """The resumable state of any sampler: its ``state_dict()``, or None for a
    plain sequence (a list, tuple or range replays itself)."""
    if callable(getattr(sampler, "state_dict", None)):
        return sampler.state_dict()
    if isinstance(sampler, list | tuple | range):
        return None
    raise TypeError(
        f"cannot resume: sampler {type(sampler).__name__} has no state_dict()/load_state_dict(); "
        "use a dataloader_api sampler, a list of indices, or add those two methods"
    )


def load_sampler_state(sampler: Any, state: Any) -> None:
    if callable(getattr(sampler, "load_state_dict", None)):
        sampler.load_state_dict(state)
    elif state is not None or not isinstance(sampler, list | tuple | range):
        raise TypeError(f"sampler {type(sampler).__name__} cannot load a state")
