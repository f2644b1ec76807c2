"""Which indices an epoch visits, in which order: PyTorch's samplers, the batch
sampler, the distributed sampler, the index shuffle, the seeds they draw from, and
torch's ``randperm`` reproduced bit for bit."""

from .batch_sampler import BatchSampler, sampler_state, skip_batches
from .distributed_sampler import DistributedSampler
from .index_shuffle import IndexShuffle
from .samplers import (
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)
from .seeds import EpochSeeds, IteratorSeeds, derive_seed

__all__ = [
    "BatchSampler",
    "DistributedSampler",
    "EpochSeeds",
    "IndexShuffle",
    "IteratorSeeds",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
    "derive_seed",
    "sampler_state",
    "skip_batches",
]
