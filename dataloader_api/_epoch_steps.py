"""The shapes an epoch's features share: ``Feature`` (what a feature declares:
whether it may share an idle pool, whether workers copy the dataset under it,
the step it adds around the dataset call) and the ``EpochSteps`` those steps
wrap in turn. Nothing here imports the features: they import these."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._stats import StatsRecorder
    from ._workers import Workers
    from .contract import BatchJob, ImageWork

__all__ = ["EpochContext", "EpochSteps", "Feature", "same_jobs"]


def same_jobs(jobs: Iterable[BatchJob]) -> Iterable[BatchJob]:
    """The plan's jobs as they are (no step wrapped them)."""
    return jobs


@dataclass
class EpochSteps:
    """One map-style epoch's callables, as each step wraps them in turn.

    ``fetch`` receives a job's ``BatchJob.fetch_argument``; ``getitem`` one
    index (``items_in_parallel``); ``images`` is ``MapWork.images``; ``jobs``
    wraps the plan's jobs as the backend takes them.
    """

    fetch: Callable[[Any], Any]
    collate: Callable[[Any], Any]
    getitem: Callable[[Any], Any] | None = None
    images: ImageWork | None = None
    jobs: Callable[[Iterable[BatchJob]], Iterable[BatchJob] | Iterator[BatchJob]] = same_jobs


@dataclass(frozen=True)
class EpochContext:
    """What a step may read: the loader's options, this epoch's bound transform
    and stats recorder, its workers (None on the calling thread), and how to
    find a job's indices from what ``fetch`` receives."""

    options: Any
    transform: Callable[[Any, Any], Any] | None
    recorder: StatsRecorder | None
    workers: Workers | None
    indices_of: Callable[[Any], Any]


@dataclass(frozen=True)
class Feature:
    """One epoch feature, as ``_epoch_features.FEATURES`` lists it.

    ``active(options)``: whether a loader uses it. ``shares_pool``: whether its
    epochs may run on an idle pool another loader left (its threads need
    nothing but their ``WorkerInfo``). ``copies_dataset``: whether each worker
    may call its own shallow copy of the dataset under it. ``wrap``: the step
    it adds to a map-style epoch, run in the list's order (it reads
    ``EpochContext`` and replaces fields of ``EpochSteps``).
    """

    name: str
    active: Callable[[Any], bool]
    shares_pool: bool = True
    copies_dataset: bool = True
    wrap: Callable[[EpochSteps, EpochContext], None] | None = None
