"""torch's ``IterDataPipe`` graphs as datasets, taken as torch's DataLoader takes them.

``shuffle=`` sets the graph's shuffle settings (``apply_shuffle_settings``)
instead of being refused as for other iterable datasets. Each epoch draws one
seed, when its iterator starts, from the loader's ``generator`` or else
torch's global generator (as torch's ``_share_dist_seed``); every worker's
graph is seeded with it alike and sharded (``sharding_filter``) by worker and
rank, so the workers split one shuffled stream. Each worker calls its own deep
copy of the graph (a torch worker process has its own): sharding sets state
on the graph's nodes, which a shallow copy would share.
"""

from __future__ import annotations

import copy
import sys
from typing import Any

__all__ = ["epoch_seed", "is_iter_datapipe", "prepare_epoch", "take_shuffle", "worker_copy"]


def is_iter_datapipe(dataset: Any) -> bool:
    """Whether ``dataset`` is a torch ``IterDataPipe`` (without importing torch)."""
    data = sys.modules.get("torch.utils.data")
    pipe = getattr(data, "IterDataPipe", None)
    return pipe is not None and isinstance(dataset, pipe)


def take_shuffle(dataset: Any, shuffle: Any) -> Any:
    """``shuffle=`` of a loader over ``dataset``: applied to a datapipe's graph (and
    then None for the loader), else returned as it is."""
    if shuffle is None or not is_iter_datapipe(dataset):
        return shuffle
    from torch.utils.data.graph_settings import apply_shuffle_settings

    apply_shuffle_settings(dataset, shuffle=bool(shuffle))
    return None


def worker_copy(dataset: Any) -> Any:
    return copy.deepcopy(dataset)


def epoch_seed(dataset: Any, generator: Any) -> int | None:
    """The seed of an epoch of a datapipe (None for any other dataset)."""
    if not is_iter_datapipe(dataset):
        return None
    import torch

    from .._sampling.torch_randperm import is_torch_generator

    source = generator if is_torch_generator(generator) else None
    seed = torch.empty((), dtype=torch.int64).random_(generator=source)
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.broadcast(seed, src=0)  # every rank shuffles alike
    return int(seed.item())


def prepare_epoch(dataset: Any, seed: int | None, worker_id: int | None, workers: int) -> None:
    """Seed and shard ``dataset`` (a worker's copy, or the dataset itself on the
    calling thread, ``worker_id`` None) before its epoch's ``iter()``."""
    if seed is None:
        return
    import torch
    from torch.utils.data.graph_settings import apply_random_seed, apply_sharding

    apply_random_seed(dataset, torch.Generator().manual_seed(seed))
    world, rank = 1, 0
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        world, rank = torch.distributed.get_world_size(), torch.distributed.get_rank()
    if worker_id is None:
        apply_sharding(dataset, world, rank)
    else:
        apply_sharding(dataset, workers * world, worker_id * world + rank)
