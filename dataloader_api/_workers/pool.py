"""The worker threads of a loader: a backend pool, and what each thread knows.

Each pool thread runs ``thread_init`` once: it installs the thread's
``WorkerInfo`` (what ``get_worker_info()`` returns there) and calls the user's
``worker_init_fn``. A persistent loader keeps one pool; otherwise each epoch
makes its own, or takes an idle one (``_features.idle_pools``), and its iterator closes
it or, when the epoch ran to its end, leaves it idle.
"""

from __future__ import annotations

import os
import time
import warnings
from typing import Any

from .._common.worker_info import WorkerInfo, set_worker_info
from .._features import idle_pools
from .._features.feature_list import may_share_pool
from .._options.loader_options import LoaderOptions
from .._sampling.seeds import EpochSeeds, IteratorSeeds
from ..contract import PoolSpec, WorkerPool, process_id
from .dataset_copies import CopyGuards, bound_to_copy, worker_dataset

__all__ = [
    "Workers",
    "join_pools",
    "new_workers",
    "warn_if_more_workers_than_cpus",
    "worker_info",
]


class Workers:
    """A backend pool and the worker infos its threads were given (``taken``: at
    their next job, the pool being an idle one of an earlier loader)."""

    def __init__(
        self, pool: WorkerPool, infos: list[WorkerInfo], shared: bool = False, taken: bool = False
    ) -> None:
        self.pool = pool
        self.infos = infos
        self.pid = process_id()  # a forked child inherits the pool but none of its threads
        #: whether the pool may go idle for a later loader (``_features.idle_pools``)
        self.shared = shared
        self.taken = taken
        #: never two threads in one worker copy at once (``_epoch.caller_runs``)
        self.guards = CopyGuards(len(infos))


def worker_info(options: LoaderOptions, worker_id: int, seed: int, dataset: Any) -> WorkerInfo:
    workers = max(1, options.workers.num_workers)
    rank, world_size = options.sampling.ranks()
    if options.sampling.distributed and options.sampling.is_iterable:
        # Shards count across ranks, so torch's sharding idiom splits both ways.
        return WorkerInfo(
            id=rank * workers + worker_id,
            num_workers=world_size * workers,
            seed=seed,
            dataset=dataset,
            rank=rank,
            world_size=world_size,
            local_id=worker_id,
        )
    return WorkerInfo(
        worker_id, options.workers.num_workers, seed, dataset, rank, world_size, worker_id
    )


def _usable_cpus() -> int:
    global _cpus
    if _cpus is None:
        try:
            _cpus = len(os.sched_getaffinity(0))  # the cpuset, as torch counts it
        except AttributeError:
            _cpus = os.cpu_count() or 1
    return _cpus


_cpus: int | None = None


def warn_if_more_workers_than_cpus(num_workers: int, stacklevel: int) -> None:
    """torch's warning, where torch gives it: when a loader is built and when each
    epoch's workers start."""
    cpus = _usable_cpus()
    if num_workers > cpus:
        # torch's warning (check_worker_number_rationality), with threads for processes.
        warnings.warn(
            f"This DataLoader will create {num_workers} worker threads in total. Our "
            f"suggested max number of worker in current system is {cpus}, which is smaller "
            "than what this DataLoader is going to create. Please be aware that excessive "
            "worker creation might get DataLoader running slow or even freeze, lower the "
            "worker number to avoid potential slowness/freeze if necessary. (Threads that "
            "mostly wait on I/O cost little: filter this warning if yours do.)",
            UserWarning,
            stacklevel=stacklevel,
        )


def new_workers(options: LoaderOptions, seeds: EpochSeeds | IteratorSeeds) -> Workers:
    """A pool of ``num_workers`` threads, seeded from the next seed of ``seeds``: a
    new one, or an idle one an earlier loader's finished epoch left."""
    assert options.execution.backend is not None
    # The user's line: iter(loader) -> start_epoch -> _on_workers -> _workers_for_epoch -> here.
    warn_if_more_workers_than_cpus(options.workers.num_workers, stacklevel=7)
    base_seed = seeds.next_seed()
    infos = [
        worker_info(options, worker_id, base_seed + worker_id, worker_dataset(options))
        for worker_id in range(options.workers.num_workers)
    ]
    shared = idle_pools.keeping() and may_share_pool(options)
    if shared and (idle := idle_pools.take(options)) is not None:
        return Workers(idle, infos, shared=True, taken=True)
    # Made here, not in thread_init: an idle pool's threads keep thread_init, which
    # must not keep the loader's options (nor its dataset) alive.
    inits = [
        bound_to_copy(options.workers.worker_init_fn, options.sampling.dataset, info.dataset)
        for info in infos
        if options.workers.worker_init_fn is not None
    ]

    def thread_init(worker_id: int) -> None:
        set_worker_info(infos[worker_id])
        if shared:
            idle_pools.note_slot(worker_id, infos)
        if inits:
            inits[worker_id](worker_id)

    spec = PoolSpec(
        num_threads=options.workers.num_workers,
        thread_init=thread_init,
        items_in_parallel=options.execution.items_in_parallel,
    )
    return Workers(options.execution.backend.create_pool(spec), infos, shared=shared)


def join_pools(pools: list[WorkerPool], timeout: float | None) -> list[WorkerPool]:
    """Wait for the threads of ``pools`` (``timeout`` seconds in all); those still running."""
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout >= 0
    ):
        raise ValueError(
            "timeout should be a non-negative number of seconds or None, "
            f"but got timeout={timeout!r}"
        )
    deadline = None if timeout is None else time.monotonic() + timeout
    running = []
    for pool in pools:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        if not pool.join(left):
            running.append(pool)
    return running
