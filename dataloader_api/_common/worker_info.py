"""``get_worker_info()``: what a worker thread knows about itself."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any


class WorkerRNG:
    """Random generators of one worker, seeded with its ``seed``: a thread cannot
    have the process-wide ``random``, NumPy and torch generators to itself, as a
    worker process does, so it draws from these (torch 2.15's ``WorkerInfo.rng``).
    Each is made on first use."""

    def __init__(self, seed: int) -> None:
        self.seed = seed

    @cached_property
    def random_generator(self) -> random.Random:
        return random.Random(self.seed)

    @cached_property
    def numpy_generator(self) -> Any:
        import numpy as np

        return np.random.default_rng(self.seed)

    @cached_property
    def torch_generator(self) -> Any:
        try:
            import torch
        except ImportError:
            raise ImportError(
                "WorkerRNG.torch_generator needs torch; use random_generator or "
                "numpy_generator, or install torch"
            ) from None
        return torch.Generator().manual_seed(self.seed)


@dataclass(frozen=True)
class WorkerInfo:
    """Same fields as ``torch.utils.data.get_worker_info()``'s result, and the rank.

    ``seed`` is ``base_seed + id``, where ``base_seed`` is drawn from the
    loader's seed or generator for each pool of workers. With
    ``DataLoader(distributed=True)`` and an iterable dataset, ``id`` and
    ``num_workers`` count shards across all ranks (``rank * workers + local
    id`` of ``world_size * workers``), so the PyTorch sharding idiom splits the
    data across ranks and workers at once; ``local_id`` is the thread's own id.
    """

    id: int
    num_workers: int
    seed: int
    dataset: Any
    rank: int = 0
    world_size: int = 1
    local_id: int = -1
    #: torch 2.15's field: how the worker runs (always a thread here)
    worker_method: str = "thread"
    #: this worker's own generators, seeded with ``seed`` (torch 2.15's ``rng``)
    rng: WorkerRNG = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.local_id < 0:
            object.__setattr__(self, "local_id", self.id)
        object.__setattr__(self, "rng", WorkerRNG(self.seed))


#: each thread's ``WorkerInfo`` (its ``info`` attribute); the epoch's fetch reads it
#: directly, not through ``get_worker_info()``: one Python call less per batch
CURRENT = threading.local()
_current = CURRENT


def get_worker_info() -> WorkerInfo | None:
    """The calling worker thread's info, or ``None`` outside a worker (as in PyTorch)."""
    info: WorkerInfo | None = getattr(_current, "info", None)
    return info


def set_worker_info(info: WorkerInfo | None) -> None:
    """Install ``info`` for the calling thread (run by ``PoolSpec.thread_init``)."""
    _current.info = info


@contextmanager
def acting_as(info: WorkerInfo) -> Iterator[None]:
    """Make the calling thread report ``info`` for the duration of the block.

    Iterable streams use it so that stream ``i`` sees worker ``i``'s info on
    whatever pool thread advances it.
    """
    previous = get_worker_info()
    _current.info = info
    try:
        yield
    finally:
        _current.info = previous
