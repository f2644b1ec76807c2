"""Exceptions the loader raises itself (user exceptions pass through unchanged)."""

from __future__ import annotations


class DataLoaderTimeoutError(RuntimeError, TimeoutError):
    """A batch did not arrive within ``timeout`` seconds.

    A ``RuntimeError`` like torch's timeout error, and a ``TimeoutError``.
    """
