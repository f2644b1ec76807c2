"""The worker threads' options (``WorkerOptions``) and the backend that runs them
(``ExecutionOptions``), each checked once, in torch's order and words."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._common.backend_registry import ENV_VAR as BACKEND_ENV_VAR
from .._common.backend_registry import resolve_backend
from ..contract import Backend
from .arguments import LoaderArguments
from .checks import (
    check_bool,
    check_callable,
    check_items_in_parallel,
    check_multiprocessing_context,
    check_positive_int,
)

__all__ = ["ExecutionOptions", "WorkerOptions", "check_execution", "check_workers"]


@dataclass(frozen=True, slots=True)
class WorkerOptions:
    """How many worker threads, how far ahead they load, how long a batch may take,
    and what each runs first."""

    num_workers: int
    prefetch_factor: int | None
    persistent_workers: bool
    timeout: float
    in_order: bool
    worker_init_fn: Callable[[int], None] | None
    multiprocessing_context: Any
    # Every worker calls the one dataset object instead of its own copy.
    share_dataset: bool

    @property
    def window(self) -> int:
        """Batches that may be loaded but not yet consumed: ``num_workers * prefetch_factor``."""
        return self.num_workers * (self.prefetch_factor or 0)


def check_workers(arguments: LoaderArguments) -> WorkerOptions:
    num_workers, timeout = arguments.num_workers, arguments.timeout
    prefetch_factor = arguments.prefetch_factor
    context, worker_init_fn = arguments.multiprocessing_context, arguments.worker_init_fn
    if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
        raise ValueError(
            "num_workers option should be non-negative (an int >= 0); use num_workers=0 "
            f"to load on the calling thread, but got num_workers={num_workers!r}"
        )
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout < 0:
        raise ValueError(f"timeout option should be non-negative, but got timeout={timeout!r}")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError(
            "prefetch_factor option could only be specified with worker threads. "
            "let num_workers > 0 to enable them, otherwise set prefetch_factor to None."
        )
    if num_workers > 0:
        if prefetch_factor is None:
            prefetch_factor = 2
        else:
            check_positive_int("prefetch_factor", prefetch_factor)
    # torch takes any truthy value for these flags (shuffle=1, np.True_, ...).
    persistent_workers = bool(arguments.persistent_workers)
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")
    if timeout > 0 and num_workers == 0:
        raise ValueError(
            f"timeout={timeout!r} needs worker threads (num_workers > 0): with "
            "num_workers=0 the calling thread loads each batch, there is nothing to wait "
            "for (torch fails on it when iterating); use timeout=0 or num_workers > 0"
        )
    check_multiprocessing_context(context, num_workers)
    check_callable("worker_init_fn", worker_init_fn)
    return WorkerOptions(
        num_workers=num_workers,
        prefetch_factor=prefetch_factor,
        persistent_workers=persistent_workers,
        timeout=float(timeout),
        in_order=bool(arguments.in_order),
        worker_init_fn=worker_init_fn,
        multiprocessing_context=context,
        share_dataset=check_bool("share_dataset", arguments.share_dataset),
    )


@dataclass(frozen=True, slots=True)
class ExecutionOptions:
    """The backend that runs the workers (None: the calling thread alone, no
    backend named) and how many threads share one batch's items."""

    backend: Backend | None
    items_in_parallel: int

    @property
    def backend_name(self) -> str | None:
        return self.backend.name if self.backend is not None else None


def check_execution(
    arguments: LoaderArguments, workers: WorkerOptions, dataset: Any, batched_map: bool
) -> ExecutionOptions:
    """``batched_map``: a map-style dataset with batches of items (what
    ``items_in_parallel`` splits)."""
    backend, items_in_parallel = arguments.backend, arguments.items_in_parallel
    if backend is not None and not isinstance(backend, str):
        raise TypeError(f"backend should be a str or None, but got backend={backend!r}")
    # $DATALOADER_BACKEND is checked whatever num_workers is, as backend= is.
    named = backend is not None or os.environ.get(BACKEND_ENV_VAR, "").strip()
    resolved = resolve_backend(backend) if workers.num_workers > 0 or named else None
    check_positive_int("items_in_parallel", items_in_parallel)
    if items_in_parallel > 1:
        check_items_in_parallel(
            items_in_parallel, dataset, workers.num_workers, not batched_map, resolved
        )
    return ExecutionOptions(resolved, items_in_parallel)
