"""Rank and world size of a multi-process job, for sharding data across ranks."""

from __future__ import annotations

import os


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
