"""Interpreter exit: what every backend's shutdown shares.

At exit, one hook (run by ``threading``'s exit hooks, before non-daemon
threads are joined and before ``atexit``, where the loader's own finalizers
run) sets the exiting flag, runs the backends' ``on_exit`` callbacks, then
closes every registered pool without waiting for busy threads. A forked
child starts with an empty registry: the parent's pools have no thread there.
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
    "exiting",
    "on_exit",
    "register_pool",
    "unregister_pool",
    "wait_out_interpreter_exit",
]


class _Closable(Protocol):
    def close(self) -> None: ...


_live_pools: weakref.WeakSet[_Closable] = weakref.WeakSet()
_callbacks: list[Callable[[], object]] = []
_exiting = False


def _at_exit() -> None:
    """Interpreter exit: stop every pool at once, wait for none of them."""
    global _exiting
    _exiting = True
    for callback in _callbacks:
        callback()
    for pool in list(_live_pools):
        pool.close()


getattr(threading, "_register_atexit", atexit.register)(_at_exit)
if hasattr(os, "register_at_fork"):
    # A forked child has none of the pools' threads: its exit must not close them
    # (their locks may have been held by a parent thread at the fork).
    os.register_at_fork(after_in_child=_live_pools.clear)


def exiting() -> bool:
    """True once the interpreter's exit has begun (the exit hook ran)."""
    return _exiting


def on_exit(callback: Callable[[], object]) -> None:
    """Run ``callback`` at exit, before registered pools are closed (a native
    backend sets its own exiting flag there)."""
    _callbacks.append(callback)


def register_pool(pool: _Closable) -> None:
    """Close ``pool`` at exit unless it is closed (and unregistered) before; held weakly."""
    _live_pools.add(pool)


def unregister_pool(pool: _Closable) -> None:
    _live_pools.discard(pool)


def wait_out_interpreter_exit(held: threading.Condition | None = None) -> None:
    """A consumer on a non-main thread whose pool the exit hook closed: wait like any
    daemon thread until the process ends, instead of raising into user code (or
    ending its loop early) while the interpreter shuts down. ``held`` is a condition
    the caller holds: it is released while waiting, so the exit hook can close.
    Returns at once when the interpreter is not exiting or on the main thread."""
    if _exiting and threading.current_thread() is not threading.main_thread():
        while True:
            if held is not None:
                held.wait(3600)
            else:
                time.sleep(3600)
