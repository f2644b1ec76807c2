"""Which process this is (cheap per batch), a closed pool's error, and the stack
a pool thread gets."""

from __future__ import annotations

import os
import threading

__all__ = [
    "MIN_STACK_SIZE",
    "UNLIMITED_STACK_SIZE",
    "ForkedPoolError",
    "PoolClosedError",
    "process_id",
    "python_thread_stack_size",
]

_process_id = os.getpid()


def _after_fork_in_child() -> None:
    global _process_id
    _process_id = os.getpid()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class PoolClosedError(RuntimeError):
    """Every backend's error for a stream started or read after its pool closed."""


class ForkedPoolError(RuntimeError):
    """A pool, stream or epoch used in a process forked from the one that made it:
    the child has none of its threads, so it raises this instead of waiting for
    ever (the loader's own check and a backend's, alike)."""


def process_id() -> int:
    """``os.getpid()``, kept up to date by ``os.register_at_fork`` (cheap per batch)."""
    return _process_id


# Rust's own default for its threads: a pool thread never gets less.
MIN_STACK_SIZE = 2 * 1024 * 1024
# glibc gives new threads RLIMIT_STACK's soft limit; where that is unlimited (or
# unknown) this is what our threads get instead of the platform's fallback.
UNLIMITED_STACK_SIZE = 8 * 1024 * 1024


def python_thread_stack_size() -> int:
    """The stack of a ``threading.Thread`` started now: ``threading.stack_size()``
    when the user set one, else the platform's default for new threads (on Linux,
    RLIMIT_STACK's soft limit, ``UNLIMITED_STACK_SIZE`` when unlimited); never less
    than ``MIN_STACK_SIZE``."""
    chosen = threading.stack_size()  # with no argument it also sets 0: put it back
    threading.stack_size(chosen)
    if not chosen:
        try:
            import resource
        except ImportError:  # not on Windows
            chosen = UNLIMITED_STACK_SIZE
        else:
            soft = resource.getrlimit(resource.RLIMIT_STACK)[0]
            chosen = UNLIMITED_STACK_SIZE if soft in (resource.RLIM_INFINITY, -1) else soft
    return max(int(chosen), MIN_STACK_SIZE)
