"""An epoch's work, composed once for whichever threads run it.

``map_epoch_work`` chooses once where a job's items come from (an
``ItemSource`` of one kind: ``async`` coroutines on the loader's event loop,
``native`` reads by the backend, or ``plain`` calls of the dataset, each
worker's copy or, on the calling thread, the dataset itself) and applies the
features' steps around it in one ordered list (``_features.feature_list``).
``iterable_epoch_streams`` opens an iterable dataset's streams the same way
for both. The calling thread (``calling_thread``) and a backend's pool
(``start``) consume what they return; nothing else composes an epoch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from .._features.feature_list import apply_steps
from .._features.steps import EpochContext, EpochSteps, same_jobs
from .._options.loader_options import LoaderOptions
from .._torch.datapipes import prepare_epoch
from .._workers.dataset_copies import CopyGuards
from .._workers.pool import Workers, worker_info
from ..contract import BatchJob, ImageWork, MapWork, process_id
from .fetch import ItemStop, make_fetch
from .loader_state import LoaderState
from .native_reads import native_epoch
from .plan import open_iterable
from .resume import ResumePoint

if TYPE_CHECKING:
    from .._features.stats import StatsRecorder
    from .._features.transform_hook import Transform
    from .async_loop import AsyncEpoch

__all__ = [
    "ItemSource",
    "MapEpochWork",
    "copy_fetch",
    "item_source",
    "iterable_epoch_streams",
    "map_epoch_work",
]


@dataclass(frozen=True)
class ItemSource:
    """Where a job's items come from. ``start(indices)``, when set, begins a job's
    items as the backend takes the job (``BatchJob.started``), and ``fetch``
    receives what it returned; else ``fetch`` receives the indices. ``side``:
    what closes with the epoch (running coroutines or reads, an ``ItemStop``)."""

    kind: Literal["async", "native", "plain"]
    fetch: Callable[[Any], Any]
    start: Callable[[Any], Any] | None = None
    getitem: Callable[[Any], Any] | None = None
    side: Any = None
    #: set when the consumer may make batches as a worker (``caller_runs``)
    guards: CopyGuards | None = None

    def indices_of(self, argument: Any) -> Any:
        """The indices of what ``fetch`` receives."""
        return argument if self.start is None else argument.indices


def item_source(options: LoaderOptions, state: LoaderState, workers: Workers | None) -> ItemSource:
    """The epoch's one source variant; ``workers`` None for the calling thread."""
    parallel = workers is not None and options.execution.items_in_parallel > 1
    native = native_epoch(options)
    if native is not None:
        if parallel:  # each item read on its own: no job's reads begin early
            return ItemSource("native", native.fetch_now, None, native.item_fetch, native)
        return ItemSource("native", native.fetch, native.start, None, native)
    if options.items.agetitem is not None:
        aio = _async_epoch(options, state)
        return ItemSource("async", aio.fetch, aio.start, None, aio)
    dataset, batched = options.sampling.dataset, options.sampling.auto_collation
    if workers is None:
        return ItemSource("plain", make_fetch(dataset, batched))
    # Each worker calls its own copy of the dataset (_workers.dataset_copies), and a batch
    # stops between its items once the epoch closes (fetch). Here, not at
    # the top: `import dataloader_api` does not import the kit.
    from ..kit import exit_flag

    infos, stop = workers.infos, ItemStop(exit_flag())
    # The consumer may make this epoch's batches as a worker (caller_runs): its copies
    # are guarded and timed. For the loader's options, not the mode: a worker of an
    # earlier epoch of this pool may still be inside its copy.
    may_call = options.workers.in_order and not options.workers.timeout and not parallel
    guards = workers.guards if may_call else None
    fetch = make_fetch(dataset, batched, infos, stop, guards=guards)
    getitem = make_fetch(dataset, batched, infos, stop, one_item=True) if parallel else None
    return ItemSource("plain", fetch, None, getitem, stop, guards)


def copy_fetch(options: LoaderOptions) -> Callable[[Any], Callable[[Any], Any]]:
    """``copy_fetch(copy)``: one worker copy's own calls, as the calling thread makes
    them (no stop read between items), for the consumer that holds the copy's lock
    (``caller_runs``), when no step wraps the dataset's calls."""
    batched = options.sampling.auto_collation

    def fetch_of(copy: Any) -> Callable[[Any], Any]:
        return make_fetch(copy, batched)

    return fetch_of


def _async_epoch(options: LoaderOptions, state: LoaderState) -> AsyncEpoch:
    """The async side of a new epoch, on the loader's event loop (made once)."""
    runner = state.runner
    if runner is None or runner.closed or runner.pid != process_id():
        # It stops its loop when the last loader or epoch using it is gone; one
        # inherited by a forked child has no thread there, so the child makes its own.
        from .async_loop import AsyncRunner

        runner = state.runner = AsyncRunner(options.items.event_loop, options.items.max_concurrency)
    from .async_loop import AsyncEpoch

    aclose = getattr(options.sampling.dataset, "aclose", None)
    if aclose is not None:
        runner.add_closer(aclose)  # e.g. the io datasets' idle connections on this loop
    assert options.items.agetitem is not None
    return AsyncEpoch(runner, options.items.agetitem, options.sampling.auto_collation)


def _started(start: Callable[[Any], Any]) -> Callable[[Iterable[BatchJob]], Iterator[BatchJob]]:
    def started_jobs(plan: Iterable[BatchJob]) -> Iterator[BatchJob]:
        for job in plan:
            yield BatchJob(job.position, job.indices, start(job.indices))

    return started_jobs


@dataclass(frozen=True)
class MapEpochWork:
    """A map-style epoch's callables, composed once: ``fetch`` receives a job's
    ``BatchJob.fetch_argument``; ``plain``: no step wraps the dataset's own calls."""

    source: ItemSource
    fetch: Callable[[Any], Any]
    collate: Callable[[Any], Any]
    getitem: Callable[[Any], Any] | None
    images: ImageWork | None
    wrap_jobs: Callable[[Iterable[BatchJob]], Iterable[BatchJob]] | None
    stats: StatsRecorder | None
    plain: bool

    def fetch_now(self, indices: Any) -> Any:
        """The calling thread's fetch: a job started and waited for at once."""
        start = self.source.start
        return self.fetch(indices if start is None else start(indices))

    def contract_work(self, plan: Iterable[BatchJob], options: LoaderOptions) -> MapWork:
        """The epoch as ``MapWork`` for a backend, over the plan's jobs."""
        # An unwrapped plan stays as it is: an IndexBatches a backend may cut natively.
        jobs = plan if self.wrap_jobs is None else self.wrap_jobs(plan)
        return MapWork(
            jobs,
            self.fetch,
            self.collate,
            options.items.collate_fn if options.items.collate_is_default else None,
            self.getitem,
            self.stats,
            self.images,
        )


def map_epoch_work(
    options: LoaderOptions,
    source: ItemSource,
    workers: Workers | None,
    transform: Transform | None,
    recorder: StatsRecorder | None,
) -> MapEpochWork:
    """``source`` with every active feature's step around it."""
    steps = EpochSteps(source.fetch, options.items.collate_fn, source.getitem)
    if source.start is not None:
        steps.jobs = _started(source.start)
    infos, taken = (None, False) if workers is None else (workers.infos, workers.taken)
    apply_steps(steps, EpochContext(options, transform, recorder, infos, taken, source.indices_of))
    return MapEpochWork(
        source,
        steps.fetch,
        steps.collate,
        steps.getitem,
        steps.images,
        None if steps.jobs is same_jobs else steps.jobs,
        recorder,
        source.kind == "plain" and steps.fetch is source.fetch and steps.images is None,
    )


def iterable_epoch_streams(
    options: LoaderOptions,
    state: LoaderState,
    point: ResumePoint,
    workers: Workers | None,
    transform: Transform | None,
    recorder: StatsRecorder | None,
) -> Callable[[int], Iterator[Any]]:
    """``open_stream(stream_id)`` of an iterable epoch: stream ``i`` is worker
    ``(i + point.first_worker) % num_workers``'s, or, without workers, the
    calling thread's one stream (opened at its first ``next``)."""
    collate = options.items.collate_fn
    if recorder is not None:
        collate = recorder.timed_collate(collate)
    settings = (
        point.worker_states,
        options.sampling.batch_size,
        options.sampling.drop_last,
        collate,
        transform,
    )
    if workers is None:

        def calling_thread_stream(stream_id: int) -> Iterator[Any]:
            # Only a distributed loader gives the calling thread a worker info:
            # its rank's shard. Otherwise get_worker_info() is None, as in torch.
            dataset = options.sampling.dataset
            info = None
            if options.sampling.distributed:
                info = worker_info(options, 0, state.worker_seeds.next_seed(), dataset)
            prepare_epoch(dataset, point.datapipe_seed, None, 0)
            yield from open_iterable(dataset, info, 0, *settings)

        return calling_thread_stream
    infos, num_workers, first = workers.infos, options.workers.num_workers, point.first_worker

    def open_stream(stream_id: int) -> Iterator[Any]:
        worker_id = (stream_id + first) % num_workers
        info = infos[worker_id]
        prepare_epoch(info.dataset, point.datapipe_seed, worker_id, num_workers)
        return open_iterable(info.dataset, info, worker_id, *settings)

    return open_stream
