"""``lmdb.open`` on a worker thread shares one environment per path and process.

LMDB allows one open environment per path in a process; py-lmdb refuses a
second (``lmdb.Error: ... already open in this process``). Datasets written
for torch's worker processes open it lazily on ``self``, once per worker: in
one process of threads, the second worker's open fails. So on our worker
threads ``lmdb.open`` returns a handle on the one environment of that path,
opened by the first worker that asked; each copy of the dataset holds its
own handle, and transactions stay per worker (py-lmdb opens every environment
with ``MDB_NOTLS``). ``close()`` on a handle closes that handle only; the
environment closes when the last handle is closed or collected.

Opens on other threads are LMDB's own, and an open with other arguments than
the shared environment's is LMDB's too (its error, with the note that names
the recipe). Only ``lmdb.open`` is wrapped, not ``lmdb.Environment``, whose
name stays the class for ``isinstance``.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from .._common.worker_info import get_worker_info

__all__ = ["SharedEnvironment", "share_lmdb_environments"]

# Reentrant: a handle collected while this thread holds it (a garbage collection
# inside an open) takes it again in __del__.
_lock = threading.RLock()


class _Shared:
    """One path's environment, the arguments it was opened with, its open handles.
    Held strongly until its last handle closes it, under the lock: a worker that
    opens the path meanwhile shares it, never races its close."""

    __slots__ = ("arguments", "environment", "handles")

    def __init__(self, environment: Any, arguments: tuple[Any, ...]) -> None:
        self.environment = environment
        self.arguments = arguments
        self.handles = 0


_shared: dict[str, _Shared] = {}


class SharedEnvironment:
    """A worker copy's handle on an environment that its path's workers share:
    everything but ``close`` (and ``with``) goes to the environment."""

    __slots__ = ("__weakref__", "_entry", "_key")

    def __init__(self, entry: _Shared, key: str) -> None:
        self._entry: _Shared | None = entry
        self._key = key
        entry.handles += 1

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # the slots before __init__ set them, and dunders
            raise AttributeError(name)
        entry = self._entry
        if entry is None:
            lmdb = sys.modules["lmdb"]  # imported: it made the handle (and has no stubs)
            raise lmdb.Error(f"this handle on the LMDB environment {self._key!r} is closed")
        return getattr(entry.environment, name)

    def close(self) -> None:
        """Closes this handle; the environment once no other handle is open."""
        with _lock:
            entry, self._entry = self._entry, None
            if entry is None:
                return
            entry.handles -= 1
            if entry.handles == 0:
                if _shared.get(self._key) is entry:
                    del _shared[self._key]
                entry.environment.close()

    def __enter__(self) -> SharedEnvironment:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_entry", None) is not None:
            self.close()

    def __repr__(self) -> str:
        entry = self._entry
        return f"<SharedEnvironment of {entry and entry.environment!r} at {self._key!r}>"


def _key(path: Any) -> str:
    return os.path.realpath(os.fsdecode(path))


def _shared_open(original: Callable[..., Any]) -> Callable[..., Any]:
    def open_shared_on_worker_threads(path: Any, *args: Any, **kwargs: Any) -> Any:
        if get_worker_info() is None:
            return original(path, *args, **kwargs)
        key, arguments = _key(path), (args, sorted(kwargs.items()))
        with _lock:
            entry = _shared.get(key)
            if entry is None:
                entry = _shared[key] = _Shared(original(path, *args, **kwargs), arguments)
            elif entry.arguments != arguments:
                return original(path, *args, **kwargs)  # LMDB's error, with the note
            return SharedEnvironment(entry, key)

    open_shared_on_worker_threads.__wrapped__ = original  # type: ignore[attr-defined]
    open_shared_on_worker_threads.shared_by_dataloader_api = True  # type: ignore[attr-defined]
    open_shared_on_worker_threads.__doc__ = original.__doc__
    return open_shared_on_worker_threads


def share_lmdb_environments() -> None:
    """Wraps ``lmdb.open``, once, if lmdb is imported."""
    lmdb: Any = sys.modules.get("lmdb")
    if lmdb is None or getattr(lmdb.open, "shared_by_dataloader_api", False):
        return
    with _lock:
        if not getattr(lmdb.open, "shared_by_dataloader_api", False):
            lmdb.open = _shared_open(lmdb.open)
