"""The checks of single ``DataLoader`` arguments, with PyTorch's rules and wording
where torch has the argument (its messages first, our detail after)."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

from .._common.async_detect import EVENT_LOOPS
from ..contract import Backend

__all__ = [
    "check_async",
    "check_bool",
    "check_callable",
    "check_items_in_parallel",
    "check_multiprocessing_context",
    "check_positive_int",
]

_START_METHODS = ("fork", "spawn", "forkserver")


def check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} should be a bool, but got {name}={value!r}")
    return value


def check_positive_int(name: str, value: Any, allowed: str = "a positive int") -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} option should be {allowed}, but got {name}={value!r}")


def check_callable(name: str, value: Any) -> None:
    if value is not None and not callable(value):
        raise TypeError(f"{name} should be callable or None, but got {type(value).__name__}")


def _is_multiprocessing_context(context: Any) -> bool:
    import multiprocessing.context  # only for a context object: it costs ~10 ms to import

    return isinstance(context, multiprocessing.context.BaseContext)


def check_multiprocessing_context(context: Any, num_workers: int) -> None:
    if context is None:
        return
    if num_workers == 0:
        raise ValueError(
            # torch's words, which its tests match; our workers are threads
            "multiprocessing_context can only be used with worker threads, torch's "
            f"multi-process loading (num_workers > 0), but got num_workers={num_workers}"
        )
    if isinstance(context, str):
        if context not in _START_METHODS:
            raise ValueError(
                "multiprocessing_context option should specify a valid start method in "
                f"{list(_START_METHODS)!r}, but got multiprocessing_context={context!r}"
            )
    elif not _is_multiprocessing_context(context):
        raise TypeError(
            "multiprocessing_context option should be a valid context object or a string "
            f"specifying the start method, but got multiprocessing_context={context!r}"
        )


def check_items_in_parallel(
    items_in_parallel: int,
    dataset: Any,
    num_workers: int,
    not_batched_map: bool,
    backend: Backend | None,
) -> None:
    given = f"items_in_parallel={items_in_parallel}"
    if num_workers == 0:
        raise ValueError(f"{given} needs worker threads: set num_workers > 0")
    if not_batched_map:
        raise ValueError(
            f"{given} splits a batch of a map-style dataset into __getitem__ calls; "
            "it needs a map-style dataset and batch_size or batch_sampler"
        )
    if getattr(dataset, "__getitems__", None) is not None:
        raise ValueError(
            f"{given} splits a batch into __getitem__ calls, but this dataset defines "
            "__getitems__, which fetches a batch in one call"
        )
    if backend is None or not backend.supports_items_in_parallel:
        name = backend.name if backend is not None else None
        raise ValueError(
            f"{given} is not supported by backend {name!r}, which runs "
            "each batch on one thread; use backend='rust' or items_in_parallel=1"
        )


def check_async(
    dataset: Any,
    agetitem: Callable[[Any], Any] | None,
    items_in_parallel: int,
    max_concurrency: Any,
    event_loop: Any,
) -> None:
    if max_concurrency is not None:
        check_positive_int("max_concurrency", max_concurrency, "a positive int or None")
    if event_loop not in EVENT_LOOPS:
        raise ValueError(
            f"event_loop option should be one of {', '.join(map(repr, EVENT_LOOPS))}, "
            f"but got event_loop={event_loop!r}"
        )
    # The io datasets' native reads take max_concurrency too (dataloader_api.io).
    reads = hasattr(dataset, "reader_spec")
    given = [
        f"{name}={value!r}"
        for name, value, default in (
            ("max_concurrency", None if reads else max_concurrency, None),
            ("event_loop", event_loop, "auto"),
        )
        if value != default
    ]
    if agetitem is None:
        if given:
            raise ValueError(
                f"{' and '.join(given)} {'apply' if len(given) > 1 else 'applies'} only to async "
                "datasets (a map-style dataset "
                "with an async def __getitem__ or __agetitem__); this one is not async"
            )
        return
    if items_in_parallel > 1:
        raise ValueError(
            f"items_in_parallel={items_in_parallel} does not apply to an async "
            "dataset: the items of a batch already run concurrently (see max_concurrency)"
        )
    if getattr(dataset, "__getitems__", None) is not None:
        raise ValueError(
            "this dataset has both a coroutine item getter and __getitems__; "
            "the loader would not know which to use: keep one"
        )
    if event_loop == "uvloop" and importlib.util.find_spec("uvloop") is None:
        raise ValueError(
            "event_loop='uvloop' needs uvloop, which is not installed; "
            "pip install uvloop, or use event_loop='auto' or 'asyncio'"
        )
