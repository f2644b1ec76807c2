"""Exceptions the loader raises itself (user exceptions pass through unchanged)."""

from __future__ import annotations


class DataLoaderTimeoutError(RuntimeError, TimeoutError):
    """A batch did not arrive within ``timeout`` seconds.

    A ``RuntimeError`` like torch's timeout error, and a ``TimeoutError``.
    """


_LMDB_NOTE = (
    "dataloader_api: LMDB allows one open environment per path and process, and this "
    "loader's workers are threads of one process: lmdb.open on a worker thread shares "
    "one, if lmdb was imported before the epoch started and every open of the path has "
    "the same arguments; or open the environment once, in __init__, and begin a read "
    "transaction per worker lazily (see the user guide's Thread safety)"
)


def note_thread_pitfall(error: BaseException) -> None:
    """Add a note naming the fix to an item error that comes from running the
    workers as threads of one process where a library expects a process each."""
    if (
        type(error).__module__.split(".")[0] == "lmdb"
        and "already open in this process" in str(error)
        and _LMDB_NOTE not in getattr(error, "__notes__", ())
    ):
        error.add_note(_LMDB_NOTE)
