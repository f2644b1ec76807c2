"""A PyTorch-compatible DataLoader whose workers are threads in one process.

>>> from dataloader_api import DataLoader
>>> loader = DataLoader(range(10), batch_size=4, num_workers=2)
>>> [batch.tolist() for batch in loader]
[[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]

These are the names a user needs. Backend authors import from
``dataloader_api.contract`` (the protocol and its values) and
``dataloader_api.kit`` (what Python backends share); every module whose name
starts with ``_`` is internal.
"""

from __future__ import annotations

from . import integrations
from ._collate import default_collate, default_convert, torch_collate
from ._common.backend_registry import backends, resolve_backend
from ._common.worker_info import WorkerInfo, get_worker_info
from ._datasets import Dataset, IterableDataset, SyntheticImages
from ._errors import DataLoaderTimeoutError
from ._features.idle_pools import release_idle_workers
from ._features.stats import EpochStats
from ._loader import DataLoader, LoaderIterator
from ._sampling.batch_sampler import BatchSampler
from ._sampling.distributed_sampler import DistributedSampler
from ._sampling.samplers import (
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__version__ = "0.1.0"

__all__ = [
    "BatchSampler",
    "DataLoader",
    "DataLoaderTimeoutError",
    "Dataset",
    "DistributedSampler",
    "EpochStats",
    "IterableDataset",
    "LoaderIterator",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "SubsetRandomSampler",
    "SyntheticImages",
    "WeightedRandomSampler",
    "WorkerInfo",
    "backends",
    "default_collate",
    "default_convert",
    "get_worker_info",
    "integrations",
    "release_idle_workers",
    "resolve_backend",
    "torch_collate",
]
