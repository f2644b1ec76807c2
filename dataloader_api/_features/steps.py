"""The shapes an epoch's features share: ``Feature`` (what a feature declares:
whether it may share an idle pool, whether workers copy the dataset under it,
the step it adds around the dataset call), the ``EpochSteps`` those steps
wrap in turn, and the ``EpochContext`` they read (with ``StepRecorder``, what a
step asks of the stats recorder). Nothing here imports the features, the workers
or the epoch: they import these."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .._common.worker_info import WorkerInfo
    from ..contract import BatchJob, ImageWork

__all__ = ["EpochContext", "EpochSteps", "Feature", "StepRecorder", "same_jobs"]


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


class StepRecorder(Protocol):
    """What the steps ask of an epoch's stats recorder (``stats.StatsRecorder``)."""

    def jobs(self, plan: Iterable[BatchJob]) -> Iterator[BatchJob]: ...

    def timed_fetch(self, fetch: Callable[[Any], Any], batched: bool) -> Callable[[Any], Any]: ...

    def timed_collate(self, collate: Callable[[Any], Any]) -> Callable[[Any], Any]: ...


@dataclass(frozen=True)
class EpochContext:
    """What a step may read: the loader's options, this epoch's bound transform
    and stats recorder, its workers' infos (None on the calling thread) and
    whether their pool was ``taken`` idle from an earlier loader, and how to
    find a job's indices from what ``fetch`` receives."""

    options: Any
    transform: Callable[[Any, Any], Any] | None
    recorder: StepRecorder | None
    infos: list[WorkerInfo] | None
    taken: bool
    indices_of: Callable[[Any], Any]


@dataclass(frozen=True)
class Feature:
    """One epoch feature, as ``feature_list.FEATURES`` lists it.

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
