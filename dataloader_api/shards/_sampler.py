"""``ShardSampler``: an epoch's indices shard by shard, as the streaming peers
order them: shards shuffled by (seed, epoch), samples shuffled within a window
of a few consecutive shards, and each rank given whole shards."""

from __future__ import annotations

import itertools
import random
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

from .._sampling.distributed_sampler import _checked_ranks
from .._sampling.samplers import Sampler
from .._sampling.seeds import derive_seed, is_int

__all__ = ["ShardSampler"]


def _checked_sizes(dataset: Any) -> tuple[int, ...]:
    sizes = getattr(dataset, "shard_sizes", None)
    if not isinstance(sizes, Sequence) or not all(is_int(s) and s >= 0 for s in sizes):
        raise TypeError(
            "ShardSampler needs a sharded dataset: one with shard_sizes, the number of samples "
            f"in each shard (TarShards has it), but got {dataset!r}"
        )
    return tuple(int(s) for s in sizes)


class ShardSampler(Sampler[int]):
    """The indices of a sharded dataset (``TarShards``), shard by shard.

    Each epoch the shards are shuffled by ``(seed, epoch)``; rank ``r`` of
    ``num_replicas`` takes every ``num_replicas``-th shard from ``r`` on, and
    its samples are shuffled within groups of ``window`` consecutive shards
    of its own, so that reads stay within a few shards at a time. With
    ``buffer=n``, a group is shuffled as webdataset's shuffle buffer does it,
    so that remote shards' samples go as they arrive: its shards' samples
    interleaved in the order they stream, each index drawn at random from
    the next ``n``. Every rank
    yields the same number of indices whatever the epoch: the most a rank
    can be given, its own indices repeated from its start to get there (as
    torch's ``DistributedSampler`` pads); with ``drop_last``, the fewest, the
    rest dropped. Equal shards that divide among the ranks need neither. Over
    remote shards it warns when the dataset keeps fewer than two windows of
    shards in memory: some would then be requested twice in an epoch.

    Call ``set_epoch(e)`` before each epoch, with the same ``e`` and ``seed``
    on every rank. ``state_dict()`` holds the epoch, so a loader's
    ``state_dict()`` resumes mid-epoch with the same order.

    Args:
        dataset: A dataset with ``shard_sizes``.
        shuffle: Shuffle shards and samples (else shard order, sample order).
        seed: The same on every rank.
        window: Shards whose samples are shuffled together (at least 1).
        buffer: Samples a group's shuffle draws from as they stream (``None``:
            the whole group, so a group's shards are all read before much of
            it goes).
        num_replicas: The number of ranks (at most the number of shards).
        rank: This process's rank.
        drop_last: Trim every rank to the fewest samples a rank can be given.
    """

    def __init__(
        self,
        dataset: Any,
        *,
        shuffle: bool = True,
        seed: int = 0,
        window: int = 4,
        buffer: int | None = None,
        num_replicas: int = 1,
        rank: int = 0,
        drop_last: bool = False,
    ) -> None:
        self._sizes = _checked_sizes(dataset)
        if not isinstance(shuffle, bool):
            raise TypeError(f"shuffle should be a boolean value, but got shuffle={shuffle!r}")
        if not isinstance(drop_last, bool):
            raise TypeError(f"drop_last should be a boolean value, but got drop_last={drop_last!r}")
        if not is_int(seed):
            raise TypeError(f"seed should be an int, but got seed={seed!r}")
        if not is_int(window) or window < 1:
            raise ValueError(
                f"window should be a positive number of shards, but got window={window!r}"
            )
        if buffer is not None and (not is_int(buffer) or buffer < 1):
            raise ValueError(
                "buffer should be a positive number of samples or None (shuffle each "
                f"window whole), but got buffer={buffer!r}"
            )
        self.buffer = None if buffer is None else int(buffer)
        self.num_replicas, self.rank = _checked_ranks(num_replicas, rank)
        if len(self._sizes) < self.num_replicas:
            raise ValueError(
                f"ShardSampler gives each rank whole shards, but there are {len(self._sizes)} "
                f"shards for num_replicas={num_replicas!r} ranks: use fewer ranks, more "
                "shards, or a DistributedSampler (distributed=True), which splits shards"
            )
        self.shuffle, self.seed, self.window, self.drop_last = (
            shuffle,
            int(seed),
            int(window),
            drop_last,
        )
        kept = getattr(dataset, "shards_in_memory", None)  # TarShards reading shards whole
        if isinstance(kept, int) and kept < 2 * window:
            warnings.warn(
                f"ShardSampler(window={window}): the batches in flight can need the shards "
                f"of two windows, {2 * window}, but the dataset keeps {kept} in memory, so "
                "some shards would be read more than once per epoch: let TarShards keep "
                f"{2 * window} (max_shards_in_memory=, max_bytes_in_memory=) or use a "
                f"window of {kept // 2 or 1}",
                RuntimeWarning,
                stacklevel=2,
            )
        self.epoch = 0
        self._starts = [0, *itertools.accumulate(self._sizes)][:-1]

    @property
    def num_samples(self) -> int:
        """Indices per rank and epoch: the most (or, with ``drop_last``, the
        fewest) samples a rank's whole shards can hold."""
        ranked = sorted(self._sizes, reverse=not self.drop_last)
        shards_per_rank = len(ranked) // self.num_replicas
        if not self.drop_last and len(ranked) % self.num_replicas:
            shards_per_rank += 1
        return sum(ranked[:shards_per_rank])

    def shards_of_epoch(self, epoch: int | None = None) -> list[int]:
        """This rank's shards in the order ``epoch`` (default: the next) reads them."""
        order = list(range(len(self._sizes)))
        if self.shuffle:
            random.Random(derive_seed(self.seed, self.epoch if epoch is None else epoch)).shuffle(
                order
            )
        return order[self.rank :: self.num_replicas]

    def __iter__(self) -> Iterator[int]:
        shards = self.shards_of_epoch()
        rng = random.Random(derive_seed(self.seed, self.epoch, self.rank + 1))
        indices: list[int] = []
        for first in range(0, len(shards), self.window):
            ranges = [
                range(self._starts[shard], self._starts[shard] + self._sizes[shard])
                for shard in shards[first : first + self.window]
            ]
            if not self.shuffle:
                indices += itertools.chain.from_iterable(ranges)
            elif self.buffer is None:
                group = list(itertools.chain.from_iterable(ranges))
                rng.shuffle(group)
                indices += group
            else:
                indices += _buffered(_interleaved(ranges), self.buffer, rng)
        wanted = self.num_samples
        if len(indices) > wanted:
            del indices[wanted:]
        elif indices:
            while len(indices) < wanted:
                indices += indices[: wanted - len(indices)]
        return iter(indices)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Reshuffle for ``epoch``: every rank must call it with the same value."""
        if not is_int(epoch):
            raise TypeError(f"epoch should be an int, but got epoch={epoch!r}")
        self.epoch = int(epoch)

    def state_dict(self) -> dict[str, Any]:
        return {"epoch": self.epoch}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.set_epoch(state["epoch"])


def _interleaved(ranges: list[range]) -> Iterator[int]:
    """The samples of shards streamed side by side: one of each in turn."""
    for column in itertools.zip_longest(*ranges):
        yield from (index for index in column if index is not None)


def _buffered(stream: Iterator[int], size: int, rng: random.Random) -> list[int]:
    """``stream`` shuffled through a buffer of ``size``: each index drawn from the next ones."""
    drawn: list[int] = []
    pool: list[int] = []
    for index in stream:
        if len(pool) < size:
            pool.append(index)
            continue
        slot = rng.randrange(size)
        drawn.append(pool[slot])
        pool[slot] = index
    rng.shuffle(pool)
    return drawn + pool
