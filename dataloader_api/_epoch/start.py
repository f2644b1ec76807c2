"""One epoch started: decided once, then run on the calling thread or on workers.

``start_epoch`` is ``iter(loader)``: ``prepare_epoch`` decides the epoch once (a
frozen ``PreparedEpoch``); it then runs on the calling thread, or takes the
workers (the persistent pool or a new one) and hands the composed work (``work``,
the same for both) to the backend as contract values (``MapWork``/``IterWork``
and a ``StreamSpec``). The ``LoaderIterator`` takes both values whole: the
prepared epoch and how it runs (``EpochRun``).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

from .._errors import DataLoaderTimeoutError
from .._features import idle_pools
from .._options.loader_options import LoaderOptions
from .._sampling.batch_sampler import BatchSampler
from .._workers.pool import Workers, new_workers
from ..contract import (
    BatchStream,
    ForkedPoolError,
    IndexBatches,
    IterWork,
    StreamSpec,
    WorkerPool,
    process_id,
)
from .caller_runs import CallerRunsBatches, caller_runs_mode
from .calling_thread import calling_thread_batches
from .iterator import EpochRun, LengthCheckedIterator, LoaderIterator
from .loader_state import LoaderState
from .plan import EpochPlan
from .prepare import PreparedEpoch, epoch_length, prepare_epoch
from .resume import ResumePoint
from .work import (
    MapEpochWork,
    copy_fetch,
    item_source,
    iterable_epoch_streams,
    map_epoch_work,
)

__all__ = ["epoch_length", "start_epoch"]


def start_epoch(options: LoaderOptions, state: LoaderState, owner: object) -> LoaderIterator:
    """``iter(loader)``; ``owner`` is the loader, whose lifetime a persistent pool follows."""
    epoch = prepare_epoch(options, state)
    if options.workers.num_workers == 0:
        run = _on_calling_thread(options, state, epoch)
    else:
        run = _on_workers(options, state, epoch, owner)
    checked = epoch.reported_length is not None
    iterator = (LengthCheckedIterator if checked else LoaderIterator)(epoch, run, owner)
    state.live_iterator = weakref.ref(iterator)
    return iterator


def _on_calling_thread(
    options: LoaderOptions, state: LoaderState, epoch: PreparedEpoch
) -> EpochRun:
    """``num_workers=0``: the composed epoch's batches, made by the consumer's ``next``."""
    if options.sampling.is_iterable:
        streams = iterable_epoch_streams(
            options, state, epoch.point, None, epoch.transform, epoch.recorder
        )
        return EpochRun(streams(0))
    source = item_source(options, state, None)
    work = map_epoch_work(options, source, None, epoch.transform, epoch.recorder)
    return EpochRun(calling_thread_batches(options, epoch.point, work), source.side)


def _on_workers(
    options: LoaderOptions, state: LoaderState, epoch: PreparedEpoch, owner: object
) -> EpochRun:
    """The epoch handed to the backend's pool (the persistent one or its own)."""
    # Here, not at the top: `import dataloader_api` does not import the kit.
    from ..kit import wait_out_interpreter_exit

    wait_out_interpreter_exit()  # a daemon thread starting an epoch as the process ends
    workers, owned = _workers_for_epoch(options, state, owner)
    side = None
    try:
        if options.sampling.is_iterable:
            stream = _stream_iterable(options, state, epoch, workers)
        else:
            source = item_source(options, state, workers)
            side = source.side
            work = map_epoch_work(options, source, workers, epoch.transform, epoch.recorder)
            stream = _stream_map(options, state, epoch.point, workers, work)
    except BaseException:
        if side is not None:
            side.close()
        if owned:
            workers.pool.close()
        # The exit hook closed the pool under us (its wait lets other threads run).
        wait_out_interpreter_exit()
        raise
    hand_back = _hand_back(options, state, workers) if owned and workers.shared else None
    return EpochRun(stream, side, workers.pool, owned, hand_back)


def _close_pool(pool: WorkerPool, pid: int) -> None:
    if pid == process_id():  # a forked child has none of the threads to stop
        pool.close()


def _workers_for_epoch(
    options: LoaderOptions, state: LoaderState, owner: object
) -> tuple[Workers, bool]:
    """The workers to run this epoch on, and whether the epoch's iterator owns them."""
    if not options.workers.persistent_workers:
        state.pool_seed_state = state.worker_seeds.state_dict()
        workers = new_workers(options, state.worker_seeds)
        _remember(state, workers.pool)
        return workers, True
    if state.persistent is None:
        state.pool_seed_state = state.worker_seeds.state_dict()
        workers = state.persistent = new_workers(options, state.worker_seeds)
        _remember(state, workers.pool)
        state.finalizer = weakref.finalize(owner, _close_pool, workers.pool, workers.pid)
    if state.persistent.pid != process_id():
        raise ForkedPoolError(
            "this DataLoader's persistent worker threads belong to process "
            f"{state.persistent.pid}, and a forked child has none: create the "
            "DataLoader in the process that iterates it, or use persistent_workers=False"
        )
    return state.persistent, False


def _hand_back(
    options: LoaderOptions, state: LoaderState, workers: Workers
) -> Callable[[WorkerPool], bool]:
    """What an epoch that ran to its end does with its pool: keeps it idle for a
    later loader (no longer this loader's to join), or says to close it."""

    def hand_back(pool: WorkerPool) -> bool:
        if not idle_pools.hand_back(options, pool):
            return False
        state.pools = [p for p in state.pools if p is not pool]
        idle_pools.forget_datasets(workers.infos)
        return True

    return hand_back


def _remember(state: LoaderState, pool: WorkerPool) -> None:
    """Keep ``pool`` for ``DataLoader.join``, and forget those whose threads are gone."""
    state.pools = [p for p in state.pools if not p.join(0)]
    state.pools.append(pool)


def _plan(options: LoaderOptions, skip: int) -> EpochPlan | IndexBatches:
    """The epoch's jobs: as data when the batch sampler is ours (a backend may cut
    the batches natively), else the batch sampler's or sampler's iterator."""
    source = options.sampling.index_source
    if options.sampling.auto_collation and type(source) is BatchSampler:
        chunks = source.index_chunks(skip)
        if chunks is not None:
            return IndexBatches(
                chunks, source.batch_size, source.drop_last, options.workers.window + 2
            )
    return EpochPlan(source, options.sampling.auto_collation, options.workers.window + 1, skip)


def _stream_iterable(
    options: LoaderOptions, state: LoaderState, epoch: PreparedEpoch, workers: Workers
) -> BatchStream:
    open_stream = iterable_epoch_streams(
        options, state, epoch.point, workers, epoch.transform, epoch.recorder
    )

    def on_timeout(position: int) -> BaseException:
        return DataLoaderTimeoutError(
            f"DataLoader timed out after {options.workers.timeout:g} seconds, waiting for batch "
            f"{position} of the iterable dataset"
        )

    return workers.pool.stream_batches(
        IterWork(open_stream, options.workers.num_workers),
        StreamSpec(
            options.workers.window,
            options.workers.in_order,
            options.workers.timeout or None,
            on_timeout,
        ),
    )


def _stream_map(
    options: LoaderOptions,
    state: LoaderState,
    point: ResumePoint,
    workers: Workers,
    work: MapEpochWork,
) -> BatchStream:
    skip = point.skip
    plan = _plan(options, skip)

    def on_timeout(position: int) -> BaseException:
        indices = plan.indices_of(position)
        which = f" (indices {indices!r})" if indices is not None else ""
        return DataLoaderTimeoutError(
            f"DataLoader timed out after {options.workers.timeout:g} seconds, waiting for batch "
            f"{position + skip}{which}"
        )

    spec = StreamSpec(
        options.workers.window,
        options.workers.in_order,
        options.workers.timeout or None,
        on_timeout,
    )
    contract_work = work.contract_work(plan, options)
    mode = caller_runs_mode()
    if _caller_may_run(options, state, workers, work, mode):
        assert work.source.guards is not None
        return CallerRunsBatches(
            workers.pool,
            contract_work,
            spec,
            workers.infos,
            work.source.guards,
            state.caller_runs,
            always=mode == "always",
            plain=copy_fetch(options) if work.plain else None,
            ranges=options.sampling.auto_collation
            and getattr(options.sampling.dataset, "__getitems__", None) is None,
        )
    return workers.pool.map_batches(contract_work, spec)


def _caller_may_run(
    options: LoaderOptions, state: LoaderState, workers: Workers, work: MapEpochWork, mode: str
) -> bool:
    """Whether the consumer may make this epoch's batches (NOTE [ Caller-runs ]):
    guarded copies (in order, no timeout, items not in parallel, plain calls), no
    step that begins jobs or runs images natively, and a copy per worker."""
    return (
        mode != "off"
        and not state.caller_runs.disabled
        and work.source.guards is not None
        and work.wrap_jobs is None
        and work.images is None
        and any(info.dataset is not options.sampling.dataset for info in workers.infos)
    )
