"""Pools of finished epochs kept idle for the next new loader.

Starting a pool's threads is most of a new loader's time to its first batch
(rust backend, 2 workers: 0.51 ms, against 0.07 ms for a persistent loader's
next epoch). So a non-persistent epoch that ran to its end hands its pool
back here instead of closing it, and the next new loader with the same
backend and worker count takes it. Its threads learn
the new loader's ``WorkerInfo`` at their next job (``as_workers``).

Only loaders whose threads need nothing but their ``WorkerInfo`` share pools:
each epoch feature declares whether it allows that (``feature_list``:
not ``worker_init_fn``, which torch runs on every worker before any item, nor
features whose calls do not all go through the job's ``fetch``). An epoch left
early (``break``, ``close()``, an error) closes its pool as before, since a
slow item may still be running there. ``release_idle_workers()`` closes the
idle pools; ``DATALOADER_KEEP_IDLE_WORKERS=0`` keeps none; interpreter exit
closes them with every other open pool (each backend's exit hook).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._common.worker_info import WorkerInfo, set_worker_info
from ..contract import HasPoolSettings, WorkerPool, process_id

if TYPE_CHECKING:
    from .steps import EpochContext, EpochSteps

__all__ = [
    "as_workers",
    "forget_datasets",
    "hand_back",
    "idle_pool_step",
    "keeping",
    "note_slot",
    "release_idle_workers",
    "take",
]

ENV_VAR = "DATALOADER_KEEP_IDLE_WORKERS"
# At most this many idle pools in all: a process alternating a few loader
# shapes (train, validation) keeps each shape's pool, and no more.
MAX_IDLE_POOLS = 4

_lock = threading.Lock()
_idle: list[tuple[Any, WorkerPool]] = []  # (key, pool), oldest first
_owner_pid = process_id()
# Per pool thread: its worker id in its pool, and the infos it last installed.
_slot = threading.local()


def keeping() -> bool:
    """Whether pools may be kept idle at all (``DATALOADER_KEEP_IDLE_WORKERS``); which
    loaders' pools may is what their features declare (``feature_list``)."""
    value = os.environ.get(ENV_VAR, "1").strip()
    if value not in ("0", "1"):
        raise ValueError(
            f"{ENV_VAR} should be '1' (keep the threads of a finished epoch for the next "
            f"new loader, the default) or '0' (close them), but got {ENV_VAR}={value!r}"
        )
    return value == "1"


def idle_pool_step(steps: EpochSteps, context: EpochContext) -> None:
    """The epoch step of a taken pool: its threads learn this loader's infos."""
    if context.infos is not None and context.taken:
        steps.fetch = as_workers(steps.fetch, context.infos)


def _key(options: Any) -> tuple[Any, int, Any]:
    """Pools are shared by loaders of one backend and thread count for which the
    backend would make the same pool (``Backend.pool_settings``)."""
    backend = options.execution.backend
    settings = backend.pool_settings() if isinstance(backend, HasPoolSettings) else None
    return (backend, options.workers.num_workers, settings)


def take(options: Any) -> WorkerPool | None:
    """An idle pool for this loader's shape, now the caller's, or None."""
    global _owner_pid
    key = _key(options)
    with _lock:
        if _owner_pid != process_id():
            _idle.clear()  # a forked child: the threads are the parent's
            _owner_pid = process_id()
        for position, (idle_key, pool) in enumerate(_idle):
            if idle_key == key:
                del _idle[position]
                return pool
    return None


def hand_back(options: Any, pool: WorkerPool) -> bool:
    """Keep ``pool`` (its epoch ran to its end) for a later loader; False when
    it must be closed instead (the set is full, or keeping is off)."""
    if getattr(pool, "closed", False) is True:
        return False  # closed under its epoch (a test's close, interpreter exit)
    with _lock:
        if _owner_pid != process_id() or len(_idle) >= MAX_IDLE_POOLS or not keeping():
            return False
        _idle.append((_key(options), pool))
        return True


def forget_datasets(infos: list[WorkerInfo]) -> None:
    """After the epoch: the idle threads still hold these infos (as their
    ``get_worker_info()`` and in their ``thread_init``), which must not keep the
    loader's dataset alive once the user drops it. The epoch is over, and each
    info with it."""
    for info in infos:
        object.__setattr__(info, "dataset", None)


def release_idle_workers() -> int:
    """Close the worker threads that finished epochs left idle for later loaders
    (they would otherwise wait for the next new loader, or interpreter exit).
    Returns how many pools were closed; ``DataLoader.join`` never waits for them."""
    with _lock:
        pools = [pool for _, pool in _idle] if _owner_pid == process_id() else []
        _idle.clear()
    for pool in pools:
        pool.close()
    for pool in pools:
        pool.join(5.0)  # idle threads end at once; a bound, should one not
    return len(pools)


def note_slot(worker_id: int, infos: list[WorkerInfo]) -> None:
    """In ``thread_init``: which worker this thread is in its pool, for later loaders."""
    _slot.worker_id = worker_id
    _slot.infos = infos


def as_workers(fetch: Callable[[Any], Any], infos: list[WorkerInfo]) -> Callable[[Any], Any]:
    """``fetch`` for an epoch on a taken pool: each thread installs its
    ``WorkerInfo`` of ``infos`` before its first job of the epoch."""

    def fetch_as_worker(indices: Any) -> Any:
        if getattr(_slot, "infos", None) is not infos:
            _slot.infos = infos
            # A thread that never ran the pool's thread_init (a backend that
            # runs jobs elsewhere breaks the contract) has no worker id.
            worker_id = getattr(_slot, "worker_id", None)
            if worker_id is not None:
                set_worker_info(infos[worker_id])
        return fetch(indices)

    return fetch_as_worker
