"""The calling thread's map-style batches (``num_workers=0``): loaded by the
iterator's ``__next__`` itself, from the same composed epoch (``work``),
plan, errors and resume as the workers'.

``calling_thread_batches`` picks them: for the default plan with items fetched
one by one and no step around them, ``SequentialItemBatches`` (the calling
thread's hot loop, measured in benchmarks/README.md); else
``CallingThreadBatches`` over the batch sampler's order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from .._options.loader_options import LoaderOptions
from .._sampling.batch_sampler import BatchSampler, skip_batches
from .._sampling.samplers import SequentialSampler
from .resume import ResumePoint
from .work import MapEpochWork

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
    options: LoaderOptions, point: ResumePoint, work: MapEpochWork
) -> Iterator[Any]:
    """A map-style epoch's batches, each loaded on the thread that asks for it."""
    source, dataset = options.sampling.index_source, options.sampling.dataset
    if (
        work.plain
        and type(source) is BatchSampler
        and type(source.sampler) is SequentialSampler
        and getattr(dataset, "__getitems__", None) is None
    ):
        n, size = len(source.sampler), source.batch_size
        stop = n - n % size if source.drop_last else n
        return SequentialItemBatches(dataset, point.skip * size, stop, size, work.collate)
    indices = skip_batches(options.sampling.index_source, point.skip)
    return CallingThreadBatches(indices, work.fetch_now, work.collate)
