"""``DistributedSampler``: one rank's shard, index for index equal to torch's,
with its rank and world size given, found now, or looked up at first use."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sized
from typing import TYPE_CHECKING, Any

from .._common.lazy_import import LazyModule
from . import torch_randperm as torch_random
from .index_shuffle import IndexChunks, IndexShuffle, position_chunks, python_ints
from .samplers import Sampler, chunked_iter
from .seeds import derive_seed, is_int

if TYPE_CHECKING:
    import numpy as np
else:  # NumPy is imported when first used (_common.lazy_import)
    np = LazyModule("numpy", globals(), "np")

__all__ = ["DistributedSampler"]


def _distributed_defaults(num_replicas: int | None, rank: int | None) -> tuple[int, int]:
    if num_replicas is not None and rank is not None:
        return num_replicas, rank
    from .._common.distributed_ranks import rank_and_world_size

    found_rank, found_world = rank_and_world_size()
    return (
        found_world if num_replicas is None else num_replicas,
        found_rank if rank is None else rank,
    )


def _checked_ranks(num_replicas: Any, rank: Any) -> tuple[int, int]:
    if not is_int(num_replicas) or num_replicas <= 0:
        raise ValueError(
            f"num_replicas should be a positive integer, but got num_replicas={num_replicas!r}"
        )
    if not is_int(rank) or rank >= num_replicas or rank < 0:
        raise ValueError(
            f"Invalid rank {rank!r}, rank should be in the interval [0, {num_replicas - 1}]"
        )
    return int(num_replicas), int(rank)


class DistributedSampler(Sampler[int]):
    """The shard of one rank, index for index equal to ``torch.utils.data.DistributedSampler``.

    The shuffle is torch's own (``randperm`` seeded with ``seed + epoch``),
    reproduced without torch; call ``set_epoch(e)`` before each epoch. Without
    ``num_replicas``/``rank`` they come from an initialised ``torch.distributed``
    process group, else from torchrun's ``WORLD_SIZE``/``RANK``. As
    [torch's](https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler).

    Args:
        dataset: Anything with a length.
        num_replicas: The number of ranks (default: the job's world size).
        rank: This process's rank (default: the job's).
        shuffle: Shuffle with torch's ``randperm`` seeded ``seed + epoch``.
        seed: The same on every rank.
        drop_last: Drop the tail that does not divide evenly instead of padding
            it with indices from the start.
        index_shuffle: Shuffle with a seeded bijection of ``range(n)`` computed
            a chunk at a time (see ``RandomSampler``) instead of torch's
            ``randperm``: memory that does not grow with the dataset, for any
            size, but not torch's order. Sharding and padding stay torch's.
    """

    def __init__(
        self,
        dataset: Sized,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
        *,
        index_shuffle: bool = False,
    ) -> None:
        self._set_options(dataset, shuffle, seed, drop_last, index_shuffle)
        self._ranks: tuple[int, int] | None = _checked_ranks(
            *_distributed_defaults(num_replicas, rank)
        )

    @classmethod
    def ranked_at_first_use(cls, dataset: Sized, shuffle: bool, seed: int) -> DistributedSampler:
        """A sampler whose rank and world size are looked up when first needed (an
        epoch or ``len``), so that it may be built before the process group exists."""
        sampler = cls.__new__(cls)
        sampler._set_options(dataset, shuffle, seed, False, False)
        sampler._ranks = None
        # Each iter() then reshuffles on its own (a framework may never call
        # set_epoch); set_epoch(e) still sets the next epoch, alike on every rank.
        sampler._counts_epochs = True
        return sampler

    def _set_options(
        self, dataset: Sized, shuffle: bool, seed: int, drop_last: bool, index_shuffle: bool
    ) -> None:
        if not is_int(seed):
            raise TypeError(f"seed should be an int, but got seed={seed!r}")
        if not isinstance(index_shuffle, bool):
            raise TypeError(
                f"index_shuffle should be a boolean value, but got index_shuffle={index_shuffle!r}"
            )
        self.index_shuffle = index_shuffle
        self.dataset = dataset
        self.epoch = 0
        self._counts_epochs = False
        self.shuffle = bool(shuffle)
        self.seed = int(seed)
        self.drop_last = bool(drop_last)

    def _resolved(self) -> tuple[int, int]:
        if self._ranks is None:
            self._ranks = _checked_ranks(*_distributed_defaults(None, None))
        return self._ranks

    @property
    def num_replicas(self) -> int:
        return self._resolved()[0]

    @property
    def rank(self) -> int:
        return self._resolved()[1]

    @property
    def num_samples(self) -> int:
        n = len(self.dataset)
        if self.drop_last and n % self.num_replicas != 0:
            return math.ceil((n - self.num_replicas) / self.num_replicas)
        return math.ceil(n / self.num_replicas)

    @property
    def total_size(self) -> int:
        return self.num_samples * self.num_replicas

    def __iter__(self) -> Iterator[int]:
        chunks = self._index_chunks(0)
        if chunks is None:
            return iter(self._torch_order(len(self.dataset), self._next_epoch()))
        return python_ints(chunks)

    def _next_epoch(self) -> int:
        """The epoch to shuffle for now (and one more next time, when counting)."""
        epoch = self.epoch
        if self._counts_epochs:
            self.epoch += 1
        return epoch

    def _index_chunks(self, start: int, multiple_of: int = 1) -> IndexChunks | None:
        """This rank's indices of the next epoch from position ``start`` on, as
        int64 arrays, which BatchSampler slices into batches. None for torch's
        ``randperm`` order, a Python list (``__iter__``)."""
        if self.shuffle and not self.index_shuffle:
            return None
        n = len(self.dataset)
        epoch = self._next_epoch()
        num_replicas, rank = self._resolved()
        shuffle = IndexShuffle(n, derive_seed(self.seed, epoch)) if self.shuffle else None

        def shard(positions: np.ndarray) -> np.ndarray:
            # Global position p holds index p mod n: torch pads from the start.
            indices = (rank + num_replicas * positions) % max(n, 1)
            return shuffle(indices) if shuffle is not None else indices

        return map(shard, position_chunks(start, self.num_samples, multiple_of))

    def _torch_order(self, n: int, epoch: int) -> list[int]:
        indices = torch_random.randperm(n, self.seed + epoch)
        total = self.total_size
        num_replicas, rank = self._resolved()
        if not self.drop_last:
            padding = total - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            elif indices:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:total]
        return indices[rank:total:num_replicas]

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Reshuffle for ``epoch``: every rank must call it with the same value."""
        self.epoch = epoch

    def state_dict(self) -> dict[str, Any]:
        return {"epoch": self.epoch}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.epoch = int(state["epoch"])


chunked_iter(DistributedSampler)
