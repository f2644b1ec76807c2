"""Interpreter exit: what every backend's shutdown shares.

NOTE [ Interpreter exit with jobs in flight ]

A worker thread inside native code that released the GIL (a torch op, a
decoder) takes it back when that code returns. If that happens while the
interpreter finalizes, CPython <= 3.13 ends the thread with ``pthread_exit``,
whose forced unwind through C++ frames (``noexcept`` destructors, pybind11's
GIL guards) calls ``std::terminate``: the process aborts. Guarding our own
frames cannot help, the frames are the user's libraries'. So exit lets the
jobs already running return first, within a bound::

    threading's exit hooks (before finalization, before atexit)
      1. exiting() becomes True: consumers on other threads park from now on,
         and so does an epoch another thread starts (before making its pool)
      2. every registered pool is closed: no job starts
      3. each backend's on_exit_wait(seconds_left) closes its own pools and
         waits for their threads (the rust backend, natively)
      4. every registered pool is joined, until the deadline
      5. each backend's on_exit() callback: from now on no pool thread enters
         the interpreter again
    finalization

The bound is ``DATALOADER_EXIT_TIMEOUT`` seconds (default 5, as torch waits
for its worker processes), read when this module is first imported. A job still
running past it is left alone: if it returns into the interpreter during
finalization it may abort the process as above, so ``loader.close()`` then
``loader.join()`` before exiting is the way to be sure. A forked child starts
with an empty registry: the parent's pools have no thread there.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
import weakref
from collections.abc import Callable
from typing import Protocol

__all__ = [
    "EXIT_TIMEOUT_VARIABLE",
    "ExitFlag",
    "exit_flag",
    "exit_timeout",
    "exiting",
    "on_exit",
    "on_exit_wait",
    "pool_closed",
    "register_pool",
    "wait_out_interpreter_exit",
]

EXIT_TIMEOUT_VARIABLE = "DATALOADER_EXIT_TIMEOUT"
# torch waits this long for its worker processes at shutdown (MP_STATUS_CHECK_INTERVAL).
_DEFAULT_EXIT_TIMEOUT = 5.0


def _read_exit_timeout() -> float:
    value = os.environ.get(EXIT_TIMEOUT_VARIABLE, "").strip()
    if not value:
        return _DEFAULT_EXIT_TIMEOUT
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:  # also NaN
        raise ValueError(
            f"{EXIT_TIMEOUT_VARIABLE}={value!r} should be a number of seconds >= 0: how "
            "long interpreter exit waits for worker jobs still running (default "
            f"{_DEFAULT_EXIT_TIMEOUT:g})"
        )
    return seconds


class _Pool(Protocol):
    def close(self) -> None: ...

    def join(self, timeout: float | None = None) -> bool: ...


_EXIT_TIMEOUT = _read_exit_timeout()
_live_pools: weakref.WeakSet[_Pool] = weakref.WeakSet()
# Closed pools whose threads may still be inside a job: joined at exit too.
_closed_pools: list[_Pool] = []
_callbacks: list[Callable[[], object]] = []
_waits: list[Callable[[float], object]] = []


class ExitFlag:
    """Whether interpreter exit has begun, as an attribute: a worker's fetch reads
    it before each item without a Python call (``exiting()`` is the same answer)."""

    __slots__ = ("began",)

    def __init__(self) -> None:
        self.began = False


_FLAG = ExitFlag()


def _at_exit() -> None:
    """Interpreter exit: stop every pool, let running jobs return (bounded), then
    let no pool thread enter the interpreter again (see the NOTE above)."""
    _FLAG.began = True
    deadline = time.monotonic() + _EXIT_TIMEOUT
    pools = [*_live_pools, *_closed_pools]
    for pool in pools:
        pool.close()
    for wait in _waits:
        wait(max(0.0, deadline - time.monotonic()))
    for pool in pools:
        pool.join(max(0.0, deadline - time.monotonic()))
    for callback in _callbacks:
        callback()


def _forget_pools() -> None:
    _live_pools.clear()
    _closed_pools.clear()


getattr(threading, "_register_atexit", atexit.register)(_at_exit)
if hasattr(os, "register_at_fork"):
    # A forked child has none of the pools' threads: its exit must not close them
    # (their locks may have been held by a parent thread at the fork).
    os.register_at_fork(after_in_child=_forget_pools)


def exit_timeout() -> float:
    """Seconds interpreter exit waits for jobs still running (``DATALOADER_EXIT_TIMEOUT``)."""
    return _EXIT_TIMEOUT


def exiting() -> bool:
    """True once the interpreter's exit has begun (the exit hook ran)."""
    return _FLAG.began


def exit_flag() -> ExitFlag:
    """The flag ``exiting()`` reads, for a hot path that reads ``.began`` itself."""
    return _FLAG


def on_exit(callback: Callable[[], object]) -> None:
    """Run ``callback`` at exit once the running jobs returned or the bound passed:
    a native backend sets its own flag there, after which none of its threads
    enters the interpreter again."""
    _callbacks.append(callback)


def on_exit_wait(wait: Callable[[float], object]) -> None:
    """At exit, call ``wait(seconds_left)``: a backend whose pools are not registered
    here (they live in native code) closes them and waits for their threads."""
    _waits.append(wait)


def register_pool(pool: _Pool) -> None:
    """Close and join ``pool`` at exit unless it is closed (and unregistered) before;
    held weakly."""
    _live_pools.add(pool)


def pool_closed(pool: _Pool) -> None:
    """``pool`` was closed: it is held until its threads have ended, so that exit
    still waits for a job it was running."""
    _live_pools.discard(pool)
    _closed_pools[:] = [p for p in _closed_pools if not p.join(0)]
    _closed_pools.append(pool)


def wait_out_interpreter_exit(held: threading.Condition | None = None) -> None:
    """A consumer on a non-main thread whose pool the exit hook closed: wait like any
    daemon thread until the process ends, instead of raising into user code (or
    ending its loop early) while the interpreter shuts down. ``held`` is a condition
    the caller holds: it is released while waiting, so the exit hook can close.
    Returns at once when the interpreter is not exiting or on the main thread."""
    if _FLAG.began and threading.current_thread() is not threading.main_thread():
        while True:
            if held is not None:
                held.wait(3600)
            else:
                time.sleep(3600)
