"""The backend kit: what Python backends share, so none imports another.

A backend with its own threads (C through cffi, say) implements the small
``TaskRunner`` protocol (``submit``, ``track``, ``closed``) and gets the
contract's window, ordering, errors, timeouts and iterable streams from
``MapStream`` and ``IterableStream``; ``ThreadPool`` is a complete pool on
Python threads. The exit registry and the attach-mode
switch are the shutdown and benchmark machinery every backend needs.
"""

from __future__ import annotations

from ._attach import ATTACH_MODES, attach_once
from ._epoch_state import (
    EpochState,
    JobResults,
    PoolClosedError,
    TaskRunner,
    Waiter,
    run_job,
)
from ._exit import (
    exiting,
    on_exit,
    register_pool,
    unregister_pool,
    wait_out_interpreter_exit,
)
from ._iter_stream import IterableStream
from ._map_stream import MapStream
from ._thread_pool import ThreadPool

__all__ = [
    "ATTACH_MODES",
    "EpochState",
    "IterableStream",
    "JobResults",
    "MapStream",
    "PoolClosedError",
    "TaskRunner",
    "ThreadPool",
    "Waiter",
    "attach_once",
    "exiting",
    "on_exit",
    "register_pool",
    "run_job",
    "unregister_pool",
    "wait_out_interpreter_exit",
]
