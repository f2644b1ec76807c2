"""What a loader remembers between epochs: the only mutable part of a ``DataLoader``.

The options are frozen (``_options.LoaderOptions``); this record holds the
worker seed stream, the persistent pool, the live epoch and the resume
bookkeeping that ``start`` and ``resume`` update.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._sampling.seeds import EpochSeeds, IteratorSeeds
from .._workers.pool import Workers
from ..contract import WorkerPool
from .caller_runs import CallerRunsLearnt

if TYPE_CHECKING:
    from .._features.stats import StatsRecorder
    from .async_loop import AsyncRunner
    from .iterator import LoaderIterator

__all__ = ["LoaderState"]


@dataclass
class LoaderState:
    worker_seeds: EpochSeeds | IteratorSeeds
    # The worker seed stream as it was when the current pool was made (resume).
    pool_seed_state: dict[str, Any]
    persistent: Workers | None = None
    # Closes the persistent pool when the loader is collected or closed.
    finalizer: weakref.finalize[Any, Any] | None = None
    live_iterator: weakref.ref[LoaderIterator] | None = None
    recorder: StatsRecorder | None = None
    runner: AsyncRunner | None = None
    pin_checked: bool = False
    # len(loader) of an iterable dataset, once taken (torch warns past it).
    iterable_len_called: int | None = None
    epochs_started: int = 0
    # The sampler's state when the current epoch started, or why it has none.
    epoch_start: dict[str, Any] | BaseException = field(default_factory=dict)
    # A loaded state the next epoch resumes from.
    pending: dict[str, Any] | None = None
    # Pools this loader started whose threads may still run (DataLoader.join).
    pools: list[WorkerPool] = field(default_factory=list)
    # Whether the consumer made batches sooner than the workers (caller_runs).
    caller_runs: CallerRunsLearnt = field(default_factory=CallerRunsLearnt)

    @classmethod
    def new(
        cls, worker_seed_base: int | None, generator: Any, first: int | None = None
    ) -> LoaderState:
        """``worker_seed_base`` None: seeds drawn from ``generator`` per iterator, the
        first iterator's being ``first`` when that draw is already made."""
        seeds = (
            IteratorSeeds(generator, first)
            if worker_seed_base is None
            else EpochSeeds(worker_seed_base)
        )
        return cls(worker_seeds=seeds, pool_seed_state=seeds.state_dict())

    def live(self) -> LoaderIterator | None:
        return self.live_iterator() if self.live_iterator is not None else None
