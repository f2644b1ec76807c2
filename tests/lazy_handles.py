"""Datasets written for torch's worker processes, with a handle opened lazily on
``self`` (a file, a sqlite3 connection), and the files they read: the idioms the
per-worker copies (``workers/``) and caller-runs (``epoch/``) must keep working."""

from __future__ import annotations

import sqlite3
import struct
import threading
from pathlib import Path

#: caller-runs' warning when a batch it made on the consumer met a worker thread's
#: connection (the loader then keeps to its workers): expected with LazySqlite
CALLER_RUNS_WARNING = "ignore:dataloader_api made a batch on the thread iterating:RuntimeWarning"


def write_records(folder: Path, length: int) -> str:
    """A file of ``length`` little-endian int64 records: record i holds i."""
    path = folder / "records.bin"
    path.write_bytes(b"".join(struct.pack("<q", i) for i in range(length)))
    return str(path)


def write_database(folder: Path, length: int, scale: int = 1) -> str:
    """A sqlite3 database whose table ``items`` has rows ``(i, scale * i)``."""
    path = str(folder / "items.db")
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, value INTEGER)")
        connection.executemany(
            "INSERT INTO items VALUES (?, ?)", [(i, scale * i) for i in range(length)]
        )
    connection.close()
    return path


class LazyFile:
    """A handle opened on first use, then seek and read: two workers sharing it
    read each other's records (the seek of one, the read of the other)."""

    def __init__(self, path: str, length: int) -> None:
        self.path, self.length = path, length
        self.file = None

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> int:
        if self.file is None:
            self.file = open(self.path, "rb")  # noqa: SIM115 (closed with the copy)
        self.file.seek(8 * index)
        threading.Event().wait(0)  # lets another worker seek in between, as I/O would
        return struct.unpack("<q", self.file.read(8))[0]


class LazySqlite:
    """A connection opened on first use (``check_same_thread=True``, sqlite3's
    default: only the thread that made it may use it)."""

    def __init__(self, path: str, length: int) -> None:
        self.path, self.length = path, length
        self.connection: sqlite3.Connection | None = None

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> int:
        if self.connection is None:
            self.connection = sqlite3.connect(self.path)
        (value,) = self.connection.execute(
            "SELECT value FROM items WHERE id = ?", (index,)
        ).fetchone()
        return int(value)
