"""One epoch: the pool it runs on, its plan, and the stream the backend runs.

``start_epoch`` is ``iter(loader)``: it consumes a loaded resume state, picks
the workers (the persistent pool or a new one), has the epoch's work composed
(``work``, the same for the calling thread and the workers), hands it
to the backend as contract values (``MapWork``/``IterWork`` and a
``StreamSpec``) and wraps the backend's stream, or the calling thread's
batches, in a ``LoaderIterator``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from .._common.distributed_ranks import warn_if_unsharded
from .._errors import DataLoaderTimeoutError
from .._features import idle_pools
from .._features.stats import EpochStats, StatsRecorder, print_summary
from .._features.transform_hook import Transform, epoch_transform
from .._options.loader_options import LoaderOptions
from .._sampling.batch_sampler import BatchSampler
from .._sampling.seeds import IteratorSeeds
from .._torch.datapipes import epoch_seed, is_iter_datapipe
from .._torch.global_generators import rearm_warnings
from .._workers.handles import worker_handles
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
from ..integrations import install_present
from .calling_thread import calling_thread_batches
from .iterator import LengthCheckedIterator, LoaderIterator
from .loader_state import LoaderState
from .pinning import pin_function
from .plan import EpochPlan
from .resume import ResumePoint, capture_epoch_start, resume_point
from .work import MapEpochWork, item_source, iterable_epoch_streams, map_epoch_work

__all__ = ["epoch_length", "start_epoch"]


def start_epoch(options: LoaderOptions, state: LoaderState, owner: object) -> LoaderIterator:
    """``iter(loader)``; ``owner`` is the loader, whose lifetime a persistent pool follows."""
    install_present(None)  # torch's, if torch was imported after the loader was built
    rearm_warnings()  # a worker that seeds a global generator is warned in each epoch
    warn_if_unsharded(
        options.sampling.distributed, options.sampling.sampler, options.sampling.batch_sampler
    )
    if options.workers.persistent_workers:
        # One epoch at a time on the shared pool, as torch resets its iterator.
        previous = state.live()
        if previous is not None:
            previous.close()
    point = resume_point(state, options.sampling.is_iterable)
    if options.sampling.is_iterable and is_iter_datapipe(options.sampling.dataset):
        # torch's iterator draws a datapipe's seed first, then its workers' base seed.
        point = replace(
            point, datapipe_seed=epoch_seed(options.sampling.dataset, options.sampling.generator)
        )
    seeds = state.worker_seeds
    if isinstance(seeds, IteratorSeeds) and (
        not options.workers.persistent_workers or not state.persistent
    ):
        seeds.draw()  # torch's new iterator draws before its sampler shuffles
    state.epoch_start = capture_epoch_start(options)
    transform = epoch_transform(options.items.transform, state.worker_seeds, state.epochs_started)
    state.epochs_started += 1
    length = _length_or_none(options)
    if length is not None:
        length -= point.skip
    recorder = (
        StatsRecorder(
            state.epochs_started,
            options.workers.num_workers,
            options.workers.window,
            options.sampling.is_iterable,
        )
        if options.stats.collect_stats
        else None
    )
    state.recorder = recorder
    summary = _summary_callback(options)
    pin = _pin_or_none(options, state)
    checked = options.sampling.is_iterable and state.iterable_len_called is not None
    iterator_class = LengthCheckedIterator if checked else LoaderIterator
    if options.workers.num_workers == 0:
        side = None
        if options.sampling.is_iterable:
            open_stream = iterable_epoch_streams(options, state, point, None, transform, recorder)
            batches = open_stream(0)
        else:
            source = item_source(options, state, None)
            work = map_epoch_work(options, source, None, transform, recorder)
            batches, side = calling_thread_batches(options, point, work), source.side
        iterator = iterator_class(
            batches,
            None,
            pin,
            length,
            point.skip,
            side,
            recorder,
            summary,
            on_threads=False,
            loader=owner,
        )
    else:
        # Here, not at the top: `import dataloader_api` does not import the kit.
        from ..kit import wait_out_interpreter_exit

        wait_out_interpreter_exit()  # a daemon thread starting an epoch as the process ends
        workers, owned = _workers_for_epoch(options, state, owner)
        side = None
        try:
            if options.sampling.is_iterable:
                stream = _stream_iterable(options, state, point, workers, transform, recorder)
            else:
                source = item_source(options, state, workers)
                side = source.side
                work = map_epoch_work(options, source, workers, transform, recorder)
                stream = _stream_map(options, point, workers, work)
        except BaseException:
            if side is not None:
                side.close()
            if owned:
                workers.pool.close()
            # The exit hook closed the pool under us (its wait lets other threads run).
            wait_out_interpreter_exit()
            raise
        owner_pool = workers.pool if owned else None
        iterator = iterator_class(
            stream, owner_pool, pin, length, point.skip, side, recorder, summary, loader=owner
        )
        if owned and workers.shared:
            iterator.hand_back = _hand_back(options, state, workers)
        pools = iterator.owned_pools if owned else [workers.pool]
        iterator._workers = worker_handles(options.workers.num_workers, pools)
    if isinstance(iterator, LengthCheckedIterator):
        assert state.iterable_len_called is not None
        iterator.reported = state.iterable_len_called
        iterator.dataset = options.sampling.dataset
        iterator.workers = options.workers.num_workers
    state.live_iterator = weakref.ref(iterator)
    return iterator


def epoch_length(options: LoaderOptions) -> int:
    """``len(loader)``: batches per epoch (raises TypeError without a dataset length)."""
    if options.sampling.is_iterable:
        length = len(options.sampling.dataset)
        if options.sampling.batch_size is not None:
            if options.sampling.drop_last:
                return length // options.sampling.batch_size
            return -(-length // options.sampling.batch_size)
        return length
    if options.sampling.batch_sampler is not None:
        return len(options.sampling.batch_sampler)
    return len(options.sampling.sampler)


def _length_or_none(options: LoaderOptions) -> int | None:
    try:
        return epoch_length(options)
    except TypeError:
        return None


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


def _summary_callback(options: LoaderOptions) -> Callable[[EpochStats], None] | None:
    if options.stats.epoch_summary is True:
        return print_summary
    if callable(options.stats.epoch_summary):
        return options.stats.epoch_summary
    return None


def _pin_or_none(options: LoaderOptions, state: LoaderState) -> Callable[[Any], Any] | None:
    """The pinning step for this epoch's batches, or None when there is none."""
    if not options.items.pin_memory:
        return None
    pin = pin_function(options.items.pin_memory_device, warn=not state.pin_checked)
    state.pin_checked = True
    return pin


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
    options: LoaderOptions,
    state: LoaderState,
    point: ResumePoint,
    workers: Workers,
    transform: Transform | None,
    recorder: StatsRecorder | None,
) -> BatchStream:
    open_stream = iterable_epoch_streams(options, state, point, workers, transform, recorder)

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
    options: LoaderOptions, point: ResumePoint, workers: Workers, work: MapEpochWork
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

    return workers.pool.map_batches(
        work.contract_work(plan, options),
        StreamSpec(
            options.workers.window,
            options.workers.in_order,
            options.workers.timeout or None,
            on_timeout,
        ),
    )
