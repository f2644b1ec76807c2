"""Rank and world size of a multi-process job, for sharding data across ranks, and
the warning for a loader that nobody sharded in such a job."""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any


def rank_and_world_size() -> tuple[int, int]:
    """From an initialised ``torch.distributed`` process group, else torchrun's
    ``RANK`` and ``WORLD_SIZE`` environment variables."""
    try:
        import torch.distributed as dist
    except ImportError:
        dist = None
    if dist is not None and dist.is_available() and dist.is_initialized():
        return int(dist.get_rank()), int(dist.get_world_size())
    rank, world = os.environ.get("RANK"), os.environ.get("WORLD_SIZE")
    if rank is None or world is None:
        raise RuntimeError(
            "distributed sharding needs an initialised torch.distributed process group, "
            "or the RANK and WORLD_SIZE environment variables that torchrun sets"
        )
    try:
        rank_number, world_number = int(rank), int(world)
    except ValueError:
        raise ValueError(f"RANK={rank!r} and WORLD_SIZE={world!r} should be integers") from None
    if world_number < 1 or not 0 <= rank_number < world_number:
        raise ValueError(
            f"RANK={rank_number} should be in [0, WORLD_SIZE) with WORLD_SIZE={world_number} >= 1"
        )
    return rank_number, world_number


_warned_unsharded = False


def process_group_world_size() -> int | None:
    """The world size of an initialised ``torch.distributed`` process group, else
    None; never imports torch (a job that has a process group has imported it)."""
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    return int(dist.get_world_size())


def is_sharded(sampler: Any, batch_sampler: Any) -> bool:
    """Whether the loader's indices are already one rank's share: a sampler (or a
    batch sampler, or its sampler) that knows the number of replicas."""
    inner = getattr(batch_sampler, "sampler", None)
    return any(
        getattr(part, "num_replicas", None) is not None
        for part in (sampler, batch_sampler, inner)
        if part is not None
    )


def warn_if_unsharded(distributed: bool | None, sampler: Any, batch_sampler: Any) -> None:
    """Warn once per process when a job of several ranks runs a loader that nobody
    sharded: every rank would load every batch, as torch's loader does silently."""
    global _warned_unsharded
    if _warned_unsharded or distributed is not None or is_sharded(sampler, batch_sampler):
        return
    world_size = process_group_world_size()
    if world_size is None or world_size <= 1:
        return
    _warned_unsharded = True
    warnings.warn(
        f"this DataLoader is not sharded, but torch.distributed has {world_size} ranks: "
        "every rank loads every batch. Pass distributed=True to give each rank its "
        "share (or a DistributedSampler as sampler); pass distributed=False if every "
        "rank should see all the data (or the dataset splits by rank itself).",
        UserWarning,
        stacklevel=4,
    )
