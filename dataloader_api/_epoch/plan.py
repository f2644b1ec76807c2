"""The epoch plan: which indices form which batch, in which order.

It is computed here, on the consumer's thread, from the sampler or batch
sampler, so every backend and every worker count receives the same jobs.
"""

from __future__ import annotations

import inspect
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from itertools import islice
from typing import Any

from .._common.worker_info import WorkerInfo, acting_as
from .._features.transform_hook import transformed_stream
from .._sampling.batch_sampler import skip_batches
from ..contract import BatchJob


@dataclass(frozen=True, slots=True)
class TrackedBatch:
    """A batch from an iterable worker, with the worker's dataset state after it."""

    batch: Any
    worker_id: int
    state: Any


def resume_protocol_problem(dataset: Any) -> str | None:
    """Why an iterable dataset does not follow the resume protocol (``state_dict()``
    without arguments, ``load_state_dict(state)``), or None when it does.

    litdata's ``StreamingDataset.state_dict`` takes three arguments: such a dataset
    is iterated like any other, and only taking a state says why it cannot."""
    state_dict = getattr(dataset, "state_dict", None)
    if not (callable(state_dict) and callable(getattr(dataset, "load_state_dict", None))):
        return "has no state_dict()/load_state_dict()"
    try:
        signature = inspect.signature(state_dict)
    except (TypeError, ValueError):
        return None  # a builtin without a signature: assume it takes none
    try:
        signature.bind()
    except TypeError:
        bare = inspect.Signature(
            [p.replace(annotation=p.empty) for p in signature.parameters.values()]
        )
        return (
            f"has a state_dict{bare} that needs arguments, and the loader calls "
            "dataset.state_dict() with none"
        )
    return None


def is_stateful(dataset: Any) -> bool:
    """Whether an iterable dataset follows the resume protocol."""
    return resume_protocol_problem(dataset) is None


class EpochPlan:
    """The jobs of one epoch, produced lazily from the index source.

    It remembers the last ``memory`` jobs handed out, so an error about a
    batch can name its indices.
    """

    def __init__(
        self, index_source: Iterable[Any], batched: bool, memory: int = 1, skip: int = 0
    ) -> None:
        self._source = index_source
        self._batched = batched
        self._skip = skip
        self._recent: deque[BatchJob] = deque(maxlen=max(1, memory))

    def __iter__(self) -> Iterator[BatchJob]:
        """Jobs numbered from 0 after the ``skip`` batches a resumed epoch had delivered."""
        batched = self._batched
        for position, indices in enumerate(skip_batches(self._source, self._skip)):
            if batched and type(indices) is not list:
                indices = list(indices)
            job = BatchJob(position, indices)
            self._recent.append(job)
            yield job

    def indices_of(self, position: int) -> Any:
        """The indices of batch ``position`` if it is still remembered, else None."""
        for job in self._recent:
            if job.position == position:
                return job.indices
        return None


def open_iterable(
    dataset: Any,
    info: WorkerInfo | None,
    worker_id: int,
    states: dict[int, Any],
    batch_size: int | None,
    drop_last: bool,
    collate: Callable[[Any], Any],
    transform: Callable[[Any, Any], Any] | None,
) -> Iterator[Any]:
    """Worker ``worker_id``'s stream of batches, its dataset first given its resumed
    state from ``states`` (if any) as that worker."""
    if worker_id in states:
        with acting_as(info) if info is not None else nullcontext():
            dataset.load_state_dict(states[worker_id])
    track_as = worker_id if is_stateful(dataset) else None
    return iterable_batches(dataset, batch_size, drop_last, collate, info, track_as, transform)


def _by_next(iterator: Iterator[Any]) -> Iterator[Any]:
    """``iterator``'s items through ``next()`` alone, as torch's fetcher takes them:
    ``islice`` or ``for`` would call ``iter()`` on it again, which restarts an
    iterator whose ``__iter__`` starts the epoch and returns ``self`` (litdata's
    ``StreamingDataset``), so its epoch would never end."""
    while True:
        try:
            item = next(iterator)
        except StopIteration:
            return
        yield item


def iterable_batches(
    dataset: Any,
    batch_size: int | None,
    drop_last: bool,
    collate: Callable[[Any], Any],
    info: WorkerInfo | None,
    track_as: int | None = None,
    transform: Callable[[Any, Any], Any] | None = None,
) -> Iterator[Any]:
    """One worker's stream of batches from an iterable dataset.

    Every step into the user's iterator runs as worker ``info`` (or as the
    main thread when ``info`` is None), whichever thread advances it. With
    ``track_as``, each batch comes as a ``TrackedBatch`` carrying the
    dataset's ``state_dict()`` right after it, for resuming. ``transform``
    (``f(position, item)``) runs on each item before collation.
    """

    def as_worker() -> Any:
        return acting_as(info) if info is not None else nullcontext()

    with as_worker():
        items = _by_next(iter(dataset))
    if transform is not None:
        items = transformed_stream(items, transform)
    while True:
        with as_worker():
            if batch_size is None:
                try:
                    sample = next(items)
                except StopIteration:
                    return
                batch = collate(sample)
            else:
                chunk = list(islice(items, batch_size))
                if not chunk or (drop_last and len(chunk) < batch_size):
                    return
                batch = collate(chunk)
            if track_as is not None:
                batch = TrackedBatch(batch, track_as, dataset.state_dict())
        yield batch
