"""Per-epoch figures: what the loader did, and whether the training loop waited for it.

``DataLoader.stats()`` returns the :class:`EpochStats` of the current (or last)
epoch. The fetch and collate callables a backend runs are thin wrappers that
time each call; a backend that replaces the default collate natively (the Rust
backend) or fetches the items of a batch itself (``items_in_parallel``)
reports to the recorder, which is the epoch's ``MapWork.stats`` sink.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ..contract import BatchJob

if TYPE_CHECKING:
    from .steps import EpochContext, EpochSteps, StepRecorder

__all__ = ["EpochStats", "StatsRecorder", "print_summary", "stats_step"]

# Above this share of the epoch spent waiting for batches, the loader is the bottleneck.
LOADER_BOUND_SHARE = 0.10


@dataclass
class EpochStats:
    """Figures of one epoch, updated while it runs (``stats()`` returns a copy).

    Times are wall-clock seconds. ``fetch_seconds`` and ``collate_seconds``
    are summed over the worker threads, so with 4 busy workers they grow 4 s
    per second. ``fetch_seconds`` is None for iterable datasets, whose
    fetching happens inside the dataset's own iterator.
    """

    epoch: int
    num_workers: int
    window: int
    batches: int = 0
    items: int = 0
    started_batches: int = 0
    elapsed_seconds: float = 0.0
    wait_seconds: float = 0.0
    fetch_seconds: float | None = 0.0
    collate_seconds: float = 0.0
    mean_window_occupancy: float | None = None
    finished: bool = False
    _occupancy_sum: int = field(default=0, repr=False)
    _occupancy_samples: int = field(default=0, repr=False)

    @property
    def wait_share(self) -> float:
        """The share of the epoch the consumer spent waiting for batches."""
        return self.wait_seconds / self.elapsed_seconds if self.elapsed_seconds > 0 else 0.0

    @property
    def bottleneck(self) -> str:
        """``"loader"`` when the training loop waited for batches more than 10 % of the
        epoch, else ``"training loop"``."""
        return "loader" if self.wait_share > LOADER_BOUND_SHARE else "training loop"

    def as_dict(self) -> dict[str, Any]:
        """Plain data (JSON-able), with the derived figures."""
        data = {k: v for k, v in asdict(self).items() if not k.startswith("_")}
        data["wait_share"] = self.wait_share
        data["bottleneck"] = self.bottleneck
        return data

    def summary(self) -> str:
        """One line for a log."""
        work = []
        if self.fetch_seconds is not None:
            work.append(f"fetch {self.fetch_seconds:.2f} s")
        work.append(f"collate {self.collate_seconds:.2f} s")
        occupancy = (
            f", window {self.mean_window_occupancy:.1f}/{self.window} in use"
            if self.mean_window_occupancy is not None
            else ""
        )
        items = f", {self.items:,} items" if self.items else ""
        return (
            f"epoch {self.epoch}: {self.batches:,} batches{items} in "
            f"{self.elapsed_seconds:.2f} s; waited for batches {self.wait_seconds:.2f} s "
            f"({self.wait_share:.0%}); {' and '.join(work)} over {self.num_workers or 'no'} "
            f"worker(s){occupancy}; bottleneck: {self.bottleneck}"
        )


class StatsRecorder:
    """Collects one epoch's figures from the consumer and the worker threads."""

    def __init__(self, epoch: int, num_workers: int, window: int, iterable: bool) -> None:
        self._stats = EpochStats(epoch, num_workers, window)
        if iterable:
            self._stats.fetch_seconds = None
        self._lock = threading.Lock()
        self._start = time.perf_counter()
        self._track_occupancy = not iterable and num_workers > 0

    def snapshot(self) -> EpochStats:
        with self._lock:
            stats = EpochStats(**asdict(self._stats))
        if not stats.finished:
            stats.elapsed_seconds = time.perf_counter() - self._start
        if stats._occupancy_samples:
            stats.mean_window_occupancy = stats._occupancy_sum / stats._occupancy_samples
        return stats

    # -- the consumer ------------------------------------------------------

    def delivered(self, waited: float) -> None:
        with self._lock:
            stats = self._stats
            stats.batches += 1
            stats.wait_seconds += waited
            if self._track_occupancy:
                # Batches started and not yet taken, as this one is handed over.
                stats._occupancy_sum += stats.started_batches - stats.batches + 1
                stats._occupancy_samples += 1

    def waited(self, seconds: float) -> None:
        """A wait that delivered no batch (the end of the epoch, or an error)."""
        with self._lock:
            self._stats.wait_seconds += seconds

    def finish(self) -> EpochStats:
        with self._lock:
            if not self._stats.finished:
                self._stats.finished = True
                self._stats.elapsed_seconds = time.perf_counter() - self._start
        return self.snapshot()

    def jobs(self, plan: Iterable[BatchJob]) -> Iterator[BatchJob]:
        """The plan's jobs, counted as the backend starts them."""
        for job in plan:
            with self._lock:
                self._stats.started_batches += 1
            yield job

    # -- the workers ---------------------------------------------------------

    def record_fetch(self, seconds: float, items: int) -> None:
        with self._lock:
            stats = self._stats
            if stats.fetch_seconds is not None:
                stats.fetch_seconds += seconds
            stats.items += items

    def record_collate(self, seconds: float) -> None:
        with self._lock:
            self._stats.collate_seconds += seconds

    def timed_fetch(self, fetch: Callable[[Any], Any], batched: bool) -> Callable[[Any], Any]:
        """``fetch``, timed."""
        record = self.record_fetch
        clock = time.perf_counter

        def timed(indices: Any) -> Any:
            start = clock()
            samples = fetch(indices)
            record(clock() - start, len(samples) if batched else 1)
            return samples

        return timed

    def timed_collate(self, collate: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """``collate``, timed."""
        record = self.record_collate
        clock = time.perf_counter

        def timed(samples: Any) -> Any:
            start = clock()
            batch = collate(samples)
            record(clock() - start)
            return batch

        return timed


def stats_step(steps: EpochSteps, context: EpochContext) -> None:
    """The epoch feature ``collect_stats``: jobs counted as the backend takes them,
    fetch and collate timed."""
    recorder = context.recorder
    if recorder is None:
        return
    steps.jobs = _counted(steps.jobs, recorder)
    steps.fetch = recorder.timed_fetch(steps.fetch, context.options.sampling.auto_collation)
    steps.collate = recorder.timed_collate(steps.collate)


def _counted(
    jobs: Callable[[Iterable[BatchJob]], Iterable[BatchJob]], recorder: StepRecorder
) -> Callable[[Iterable[BatchJob]], Iterator[BatchJob]]:
    return lambda plan: recorder.jobs(jobs(plan))


def print_summary(stats: EpochStats) -> None:
    """What ``epoch_summary=True`` does at the end of each epoch."""
    print(f"dataloader_api: {stats.summary()}", file=sys.stderr)
