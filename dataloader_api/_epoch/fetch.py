"""The one fetch maker: a job's indices to its samples, as torch's ``_MapDatasetFetcher``.

``make_fetch`` chooses once between the dataset's ``__getitems__`` and a list
of ``dataset[i]``. With workers, the same fetch also picks each worker's own
copy of the dataset (``_workers.dataset_copies``) and stops a batch between its
items once the epoch is closed: all in the one frame above ``dataset[i]``, as
torch has one, because each wrapper frame (a file, a call) is paid by every
batch (``tests/epoch/test_batch_frames.py`` counts the files one batch crosses).

Why a batch stops between its items: a job is a whole batch. Without the check,
a worker went on starting the remaining items of its batch after ``break``,
``close()``, ``del``, ``KeyboardInterrupt`` and interpreter exit: with batch 64
of 0.1 s items, exit waited out its bound and finalization began while workers
were inside new native calls, the abort the exit wait exists to prevent (see
NOTE [ Interpreter exit with jobs in flight ] in ``kit/_exit.py``). Now the
bound covers one item per worker. The epoch's ``ItemStop`` closes with the
epoch (it is the iterator's epoch side); a user's ``__getitems__`` is one call
and cannot be cut.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from time import perf_counter
from typing import Any, Protocol

from .._common.worker_info import CURRENT, WorkerInfo
from .._workers.dataset_copies import CopyGuards

__all__ = ["EpochStopped", "ItemStop", "make_fetch"]


class EpochStopped(Exception):
    """Raised in place of a batch's remaining items; nobody consumes that batch."""


class ExitFlag(Protocol):
    """The kit's flag that interpreter exit has begun (``kit.exit_flag()``)."""

    began: bool


class ItemStop:
    """Set when the epoch closes; read before each item of a batch, with ``exit.began``."""

    __slots__ = ("exit", "stopped")

    def __init__(self, exit: ExitFlag) -> None:
        self.stopped = False
        self.exit = exit

    def close(self) -> None:
        self.stopped = True


_STOPPED = "the epoch was closed, or the interpreter is exiting"


def make_fetch(
    dataset: Any,
    batched: bool,
    workers: Sequence[WorkerInfo] = (),
    stop: ItemStop | None = None,
    one_item: bool = False,
    guards: CopyGuards | None = None,
) -> Callable[[Any], Any]:
    """The callable that turns a job's indices into samples (``one_item``: one index
    into one sample, for items fetched one by one, ``items_in_parallel``).

    ``workers``: each thread that is worker ``i`` of them calls ``workers[i].dataset``,
    its own copy; any other thread (a backend breaking the contract) calls
    ``dataset``. ``stop``: read before each item; None on the calling thread,
    which calls the dataset itself and stops between batches. ``guards``: held
    around each batch on a copy, which is then timed (``_epoch.caller_runs``)."""
    if stop is None:
        return _plain_fetch(dataset, batched and not one_item)
    datasets = [info.dataset for info in workers]
    if all(own is dataset for own in datasets):
        workers, datasets = (), []
    if one_item or not batched:
        # One item is checked; torch's unbatched fetch is one call, as it was.
        checked, method = one_item, "__getitem__"
    else:
        checked = getattr(dataset, "__getitems__", None) is None
        method = "__getitem__" if checked else "__getitems__"
    calls = [getattr(own, method) for own in datasets]
    shared = getattr(dataset, method)
    per_index = batched and not one_item
    return _worker_fetch(tuple(workers), calls, shared, stop, checked, per_index, guards)


def _plain_fetch(dataset: Any, batched: bool) -> Callable[[Any], Any]:
    """The calling thread's fetch: the dataset's own calls."""
    if not batched:
        return dataset.__getitem__  # type: ignore[no-any-return]
    getitems = getattr(dataset, "__getitems__", None)
    if getitems is not None:
        return getitems  # type: ignore[no-any-return]

    def fetch(indices: list[int]) -> list[Any]:
        return [dataset[i] for i in indices]

    return fetch


def _worker_fetch(
    workers: tuple[WorkerInfo, ...],
    calls: list[Callable[[Any], Any]],
    shared: Callable[[Any], Any],
    stop: ItemStop,
    checked: bool,
    per_index: bool,
    guards: CopyGuards | None,
) -> Callable[[Any], Any]:
    """One frame per batch: the worker's own call, the stop read inline (no call)."""
    count, current, flag = len(workers), CURRENT, stop.exit
    if guards is not None and count:
        return _guarded_fetch(workers, calls, shared, stop, checked, per_index, guards)

    def fetch(argument: Any) -> Any:
        call = shared
        if count:
            info = getattr(current, "info", None)
            if info is not None and info.local_id < count and workers[info.local_id] is info:
                call = calls[info.local_id]
        if not checked:
            return call(argument)
        if not per_index:
            if stop.stopped or flag.began:
                raise EpochStopped(_STOPPED)
            return call(argument)
        items = []
        for index in argument:
            if stop.stopped or flag.began:
                raise EpochStopped(_STOPPED)
            items.append(call(index))
        return items

    return fetch


def _guarded_fetch(
    workers: tuple[WorkerInfo, ...],
    calls: list[Callable[[Any], Any]],
    shared: Callable[[Any], Any],
    stop: ItemStop,
    checked: bool,
    per_index: bool,
    guards: CopyGuards,
) -> Callable[[Any], Any]:
    """``_worker_fetch`` of an epoch where the consumer may make batches as a worker
    (``_epoch.caller_runs``): the copy's lock held around the batch (never two
    threads in one copy), and the batch's fetch timed while no other thread is in
    that copy. Still one frame per batch."""
    count, current, flag = len(workers), CURRENT, stop.exit
    locks, fastest = guards.locks, guards.fastest

    def fetch(argument: Any) -> Any:
        info = getattr(current, "info", None)
        if info is None or info.local_id >= count or workers[info.local_id] is not info:
            # A thread that is no worker of this epoch: the loader's dataset, as above.
            call, lock, own = shared, None, -1
        else:
            own = info.local_id
            call, lock = calls[own], locks[own]
            lock.acquire()
        try:
            began = perf_counter()
            if not checked:
                items = call(argument)
            elif not per_index:
                if stop.stopped or flag.began:
                    raise EpochStopped(_STOPPED)
                items = call(argument)
            else:
                items = []
                for index in argument:
                    if stop.stopped or flag.began:
                        raise EpochStopped(_STOPPED)
                    items.append(call(index))
            took = perf_counter() - began
            if own >= 0 and took < fastest[own]:
                fastest[own] = took
            return items
        finally:
            if lock is not None:
                lock.release()

    return fetch
