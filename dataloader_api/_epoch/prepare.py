"""An epoch's decisions, made once: ``prepare_epoch`` gives one frozen ``PreparedEpoch``.

Everything an epoch needs that does not depend on where it runs (the resume
point, the transform's epoch, its length, stats, pinning, torch's length
warning) is decided here, in torch's order, while the loader's state advances
(seeds drawn, epochs counted); ``start`` then runs it on the calling thread or
on workers, and the iterator takes the value whole.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from .._common.distributed_ranks import warn_if_unsharded
from .._features.stats import EpochStats, StatsRecorder, print_summary
from .._features.transform_hook import Transform, epoch_transform
from .._options.loader_options import LoaderOptions
from .._sampling.seeds import IteratorSeeds
from .._torch.datapipes import epoch_seed, is_iter_datapipe
from .._torch.global_generators import rearm_warnings
from ..integrations import install_present
from .loader_state import LoaderState
from .pinning import pin_function
from .resume import ResumePoint, capture_epoch_start, resume_point

__all__ = ["PreparedEpoch", "epoch_length", "prepare_epoch"]


@dataclass(frozen=True, slots=True)
class PreparedEpoch:
    """What one epoch was decided to be, wherever it runs."""

    #: where it starts: batches already delivered, iterable workers' states
    point: ResumePoint
    #: the items' transform keyed by this epoch (None: no transform)
    transform: Transform | None
    #: batches it still delivers (None: the dataset has no length)
    length: int | None
    #: its stats (None: not collected) and what receives them at its end
    recorder: StatsRecorder | None
    summary: Callable[[EpochStats], None] | None
    #: the consumer's pinning step (None: no pinning)
    pin: Callable[[Any], Any] | None
    #: an iterable dataset's ``len(loader)`` when it was taken: torch warns past it
    reported_length: int | None
    #: named in that warning
    dataset: Any
    num_workers: int


def prepare_epoch(options: LoaderOptions, state: LoaderState) -> PreparedEpoch:
    """``iter(loader)``'s decisions; it consumes a loaded resume state, draws the
    iterator's seeds and counts the epoch, in torch's order."""
    install_present(None)  # torch's, if torch was imported after the loader was built
    rearm_warnings()  # a worker that seeds a global generator is warned in each epoch
    sampling = options.sampling
    warn_if_unsharded(sampling.distributed, sampling.sampler, sampling.batch_sampler)
    if options.workers.persistent_workers:
        # One epoch at a time on the shared pool, as torch resets its iterator.
        previous = state.live()
        if previous is not None:
            previous.close()
    point = resume_point(state, sampling.is_iterable)
    if sampling.is_iterable and is_iter_datapipe(sampling.dataset):
        # torch's iterator draws a datapipe's seed first, then its workers' base seed.
        point = replace(point, datapipe_seed=epoch_seed(sampling.dataset, sampling.generator))
    seeds = state.worker_seeds
    if isinstance(seeds, IteratorSeeds) and (
        not options.workers.persistent_workers or not state.persistent
    ):
        seeds.draw()  # torch's new iterator draws before its sampler shuffles
    state.epoch_start = capture_epoch_start(options)
    transform = epoch_transform(options.items.transform, state.worker_seeds, state.epochs_started)
    state.epochs_started += 1
    length = _length_or_none(options)
    state.recorder = _recorder_or_none(options, state.epochs_started)
    return PreparedEpoch(
        point=point,
        transform=transform,
        length=None if length is None else length - point.skip,
        recorder=state.recorder,
        summary=_summary_callback(options),
        pin=_pin_or_none(options, state),
        reported_length=state.iterable_len_called if sampling.is_iterable else None,
        dataset=sampling.dataset,
        num_workers=options.workers.num_workers,
    )


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


def _recorder_or_none(options: LoaderOptions, epoch: int) -> StatsRecorder | None:
    if not options.stats.collect_stats:
        return None
    workers = options.workers
    return StatsRecorder(epoch, workers.num_workers, workers.window, options.sampling.is_iterable)


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
