"""A PyTorch-compatible DataLoader whose workers are threads in one process.

>>> from dataloader_api import DataLoader
>>> loader = DataLoader(range(10), batch_size=4, num_workers=2)
>>> [batch.tolist() for batch in loader]
[[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
"""

from __future__ import annotations

from .collate import default_collate, default_convert, torch_collate
from .contract import Backend, BatchJob, BatchStream, PoolSpec, WorkerPool
from .datasets import Dataset, IterableDataset, SyntheticImages
from .errors import DataLoaderTimeoutError
from .loader import DataLoader, LoaderIterator
from .registry import backends, resolve_backend
from .samplers import (
    BatchSampler,
    DistributedSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)
from .stats import EpochStats
from .worker_info import WorkerInfo, get_worker_info

__version__ = "0.1.0"

__all__ = [
    "Backend",
    "BatchJob",
    "BatchSampler",
    "BatchStream",
    "DataLoader",
    "DataLoaderTimeoutError",
    "Dataset",
    "DistributedSampler",
    "EpochStats",
    "IterableDataset",
    "LoaderIterator",
    "PoolSpec",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "SubsetRandomSampler",
    "SyntheticImages",
    "WeightedRandomSampler",
    "WorkerInfo",
    "WorkerPool",
    "backends",
    "default_collate",
    "default_convert",
    "get_worker_info",
    "resolve_backend",
    "torch_collate",
]
