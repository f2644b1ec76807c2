"""The pure-Python backend: ``threading`` workers, the contract's reference implementation.

The pool and its streams are ``dataloader_api.kit.ThreadPool``, which the kit
shares with every Python backend; this distribution registers it as the
``threads`` backend, the fallback where no compiler exists.
"""

from __future__ import annotations

from dataloader_api.contract import PoolSpec
from dataloader_api.kit import ThreadPool

__all__ = ["ThreadsBackend"]


class ThreadsBackend:
    """Entry point ``threads`` of the ``dataloader_api.backends`` group."""

    name = "threads"
    supports_items_in_parallel = False

    def create_pool(self, spec: PoolSpec) -> ThreadPool:
        return ThreadPool(spec)
