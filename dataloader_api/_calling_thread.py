"""The calling thread's batches (``num_workers=0``): loaded by the iterator's
``__next__`` itself, with the same plan, errors and resume as the workers'.

``calling_thread_batches`` picks them: an iterable dataset's stream; for the
default plan with items fetched one by one, ``SequentialItemBatches`` (the
calling thread's hot loop, measured in benchmarks/README.md); else
``CallingThreadBatches`` over the batch sampler's order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ._batch_sampler import BatchSampler, skip_batches
from ._options import LoaderOptions
from ._plan import make_fetch, open_iterable
from ._resume import ResumePoint
from ._samplers import SequentialSampler
from ._state import LoaderState
from ._stats import StatsRecorder
from ._torch_datapipes import prepare_epoch
from ._transform_hook import Transform, transformed_fetch
from ._workers import worker_info

if TYPE_CHECKING:  # asyncio is imported only when an async epoch starts
    from ._aio import AsyncEpoch
    from .io._native import NativeEpoch

__all__ = ["CallingThreadBatches", "SequentialItemBatches", "calling_thread_batches"]


class CallingThreadBatches:
    """Map-style batches loaded by ``__next__`` itself; a failed batch does not end the
    epoch (a generator would be finished by its exception), as in torch."""

    def __init__(
        self, indices: Iterator[Any], fetch: Callable[[Any], Any], collate: Callable[[Any], Any]
    ) -> None:
        self._indices, self._fetch, self._collate = indices, fetch, collate

    def __iter__(self) -> CallingThreadBatches:
        return self

    def __next__(self) -> Any:
        return self._collate(self._fetch(next(self._indices)))


class SequentialItemBatches:
    """``CallingThreadBatches`` for the default plan (``batch_size`` over the
    dataset in order) with items fetched one by one: each batch's items are read
    straight from its range, with no index list, generator or fetch call."""

    def __init__(
        self, dataset: Any, start: int, stop: int, size: int, collate: Callable[[Any], Any]
    ) -> None:
        self._dataset, self._next, self._stop, self._size = dataset, start, stop, size
        self._end, self._collate = start + (stop - start) // size * size, collate

    def __iter__(self) -> SequentialItemBatches:
        return self

    def __next__(self) -> Any:
        start, dataset = self._next, self._dataset
        if start < self._end:
            self._next = start + self._size
            return self._collate([dataset[i] for i in range(start, start + self._size)])
        if start < self._stop:  # the shorter last batch
            self._next = self._stop
            return self._collate([dataset[i] for i in range(start, self._stop)])
        raise StopIteration


def calling_thread_batches(
    options: LoaderOptions,
    state: LoaderState,
    point: ResumePoint,
    aio: AsyncEpoch | None,
    recorder: StatsRecorder | None,
    transform: Transform | None,
    native: NativeEpoch | None,
) -> Iterator[Any]:
    """The epoch's batches, each loaded on the thread that asks for it."""
    collate = options.collate_fn
    if recorder is not None:
        collate = recorder.timed_collate(collate)
    if options.is_iterable:
        return _iterable_stream(options, state, point, collate, transform)
    source, dataset = options.index_source, options.dataset
    plain = aio is None and native is None and transform is None and recorder is None
    if (
        plain
        and type(source) is BatchSampler
        and type(source.sampler) is SequentialSampler
        and getattr(dataset, "__getitems__", None) is None
    ):
        n, size = len(source.sampler), source.batch_size
        stop = n - n % size if source.drop_last else n
        return SequentialItemBatches(dataset, point.skip * size, stop, size, collate)
    fetch: Callable[[Any], Any]
    if aio is not None:
        fetch = aio.fetch_now
    elif native is not None:
        fetch = native.fetch_now
    else:
        fetch = make_fetch(options.dataset, options.auto_collation)
    if transform is not None:
        fetch = transformed_fetch(fetch, transform, options.auto_collation)
    if recorder is not None:
        fetch = recorder.timed_fetch(fetch, options.auto_collation)
    return CallingThreadBatches(skip_batches(options.index_source, point.skip), fetch, collate)


def _iterable_stream(
    options: LoaderOptions,
    state: LoaderState,
    point: ResumePoint,
    collate: Callable[[Any], Any],
    transform: Transform | None,
) -> Iterator[Any]:
    # Only a distributed loader gives the calling thread a worker info:
    # its rank's shard. Otherwise get_worker_info() is None, as in torch.
    info = (
        worker_info(options, 0, state.worker_seeds.next_seed(), options.dataset)
        if options.distributed
        else None
    )
    prepare_epoch(options.dataset, point.datapipe_seed, None, 0)
    yield from open_iterable(
        options.dataset,
        info,
        0,
        point.worker_states,
        options.batch_size,
        options.drop_last,
        collate,
        transform,
    )
