"""Whether a dataset is async, and the event loops the loader can run, without
importing asyncio: ``_epoch.async_loop`` (which does) is imported only by an async epoch."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

__all__ = ["EVENT_LOOPS", "async_getitem"]

EVENT_LOOPS = ("auto", "asyncio", "uvloop")


def async_getitem(dataset: Any) -> Callable[[Any], Coroutine[Any, Any, Any]] | None:
    """The dataset's coroutine item getter, or None for a sync dataset."""
    from inspect import iscoroutinefunction

    agetitem = getattr(dataset, "__agetitem__", None)
    if agetitem is not None:
        if not iscoroutinefunction(agetitem):
            raise TypeError(
                f"{type(dataset).__name__}.__agetitem__ must be an async def function "
                "(a coroutine function)"
            )
        return agetitem  # type: ignore[no-any-return]
    getitem = getattr(dataset, "__getitem__", None)
    if getitem is not None and iscoroutinefunction(getitem):
        return getitem  # type: ignore[no-any-return]
    return None
