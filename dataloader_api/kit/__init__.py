"""The backend kit: what Python backends share, so none imports another.

A backend with its own threads (C through cffi, say) implements the small
``TaskRunner`` protocol (``submit``, ``track``, ``closed``) and gets the
contract's window, ordering, errors, timeouts and iterable streams from
``MapStream`` (in the kit's ``PythonWindow`` or a ``BatchWindow`` of its own)
and ``IterableStream``; ``ThreadPool`` is a complete pool on
Python threads. The exit registry and the attach-mode
switch are the shutdown and benchmark machinery every backend needs.
"""

from __future__ import annotations

from ._attach import ATTACH_MODES, attach_once
from ._epoch_state import (
    Closable,
    EpochState,
    JobResults,
    PoolClosedError,
    TaskRunner,
    Waiter,
    run_job,
)
from ._exit import (
    EXIT_TIMEOUT_VARIABLE,
    ExitFlag,
    exit_flag,
    exit_timeout,
    exiting,
    on_exit,
    on_exit_wait,
    pool_closed,
    register_pool,
    wait_out_interpreter_exit,
)
from ._iter_stream import IterableStream
from ._map_stream import BatchWindow, MapStream, PythonWindow
from ._thread_pool import ThreadPool, start_threads

__all__ = [
    "ATTACH_MODES",
    "EXIT_TIMEOUT_VARIABLE",
    "BatchWindow",
    "Closable",
    "EpochState",
    "ExitFlag",
    "IterableStream",
    "JobResults",
    "MapStream",
    "PoolClosedError",
    "PythonWindow",
    "TaskRunner",
    "ThreadPool",
    "Waiter",
    "attach_once",
    "exit_flag",
    "exit_timeout",
    "exiting",
    "on_exit",
    "on_exit_wait",
    "pool_closed",
    "register_pool",
    "run_job",
    "start_threads",
    "wait_out_interpreter_exit",
]
