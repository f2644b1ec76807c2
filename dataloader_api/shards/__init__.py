"""Datasets over WebDataset-convention tar shards: samples grouped by the
members' names, indexed once, read as a map-style dataset, ordered shard by
shard by ``ShardSampler``.

>>> from dataloader_api.shards import expand_braces
>>> expand_braces("train-{000..002}.tar")
['train-000.tar', 'train-001.tar', 'train-002.tar']
"""

from __future__ import annotations

from ._dataset import TarShards
from ._decoders import DECODERS
from ._pattern import expand_braces
from ._sampler import ShardSampler
from ._tar_index import ShardError

__all__ = ["DECODERS", "ShardError", "ShardSampler", "TarShards", "expand_braces"]
