"""A batch stops between its items once its epoch is closed or exit has begun.

A job is a whole batch. Without this, a worker went on starting the remaining
items of its batch after ``break``, ``close()``, ``del``, ``KeyboardInterrupt``
and interpreter exit: with batch 64 of 0.1 s items, exit waited out its bound
and finalization began while workers were inside new native calls, the abort
the exit wait exists to prevent (see NOTE [ Interpreter exit with jobs in
flight ] in ``kit/_exit.py``). Now the bound covers one item per worker.

The epoch's ``ItemStop`` is closed with the epoch (it is the iterator's epoch
side); the fetch checks it, and ``kit.exiting()``, before each item. A user's
``__getitems__`` is one call and cannot be cut.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["EpochStopped", "ItemStop", "stopping_fetch", "stopping_getitem"]


class EpochStopped(Exception):
    """Raised in place of a batch's remaining items; nobody consumes that batch."""


class ItemStop:
    """Set when the epoch closes; checked before each item of a batch."""

    __slots__ = ("_exiting", "stopped")

    def __init__(self, exiting: Callable[[], bool]) -> None:
        self.stopped = False
        self._exiting = exiting

    def close(self) -> None:
        self.stopped = True

    def check(self) -> None:
        if self.stopped or self._exiting():
            raise EpochStopped("the epoch was closed, or the interpreter is exiting")


def stopping_fetch(dataset: Any, batched: bool, stop: ItemStop) -> Callable[[Any], Any]:
    """The fetch of a job's indices that checks ``stop`` before each item."""
    if not batched:
        return dataset.__getitem__  # type: ignore[no-any-return]
    getitems = getattr(dataset, "__getitems__", None)
    if getitems is not None:
        return getitems  # type: ignore[no-any-return]
    getitem = dataset.__getitem__
    check = stop.check

    def fetch(indices: list[int]) -> list[Any]:
        items = []
        for index in indices:
            check()
            items.append(getitem(index))
        return items

    return fetch


def stopping_getitem(getitem: Callable[[Any], Any], stop: ItemStop) -> Callable[[Any], Any]:
    """``getitem`` for items fetched one by one (``items_in_parallel``)."""
    check = stop.check

    def checked_getitem(index: Any) -> Any:
        check()
        return getitem(index)

    return checked_getitem
