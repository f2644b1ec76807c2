"""The attach-mode switch of native backends, for the attach-once benchmark and the
tests that prove attach-once matters: ``once`` (a thread state for a thread's
whole life, the contract's promise) or ``per-task`` (a new one for each job)."""

from __future__ import annotations

import os

__all__ = ["ATTACH_MODES", "attach_once"]

ATTACH_MODES = ("once", "per-task")


def attach_once(variable: str) -> bool:
    """Whether environment ``variable`` (default ``once``) asks to attach once."""
    mode = os.environ.get(variable, "once")
    if mode not in ATTACH_MODES:
        raise ValueError(f"{variable}={mode!r} is not one of {', '.join(ATTACH_MODES)}")
    return mode == "once"
