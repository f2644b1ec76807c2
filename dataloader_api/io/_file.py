"""``FileDataset``: item ``i`` is the bytes of file ``i``."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._datasets import Dataset
from ._errors import ItemTooLargeError
from ._locations import Locations, item_index
from ._native import NativeReads

__all__ = ["FileDataset"]


class FileDataset(NativeReads, Dataset[bytes]):
    """The bytes of local files, one file per item.

    ``paths`` is a list of paths, a template filled from ``columns`` (for
    example ``"{root}/{split}/{index:08d}.jpg"``) or a function of the index
    (with ``length``). A file larger than ``max_bytes`` raises
    ``ItemTooLargeError``; a file that cannot be read raises the ``OSError``
    subclass the system gave (``FileNotFoundError``, ``PermissionError``,
    ...), its message naming the item's index and the path.

    Each read is one ``bytes`` allocated at the file's size and filled by the
    system's reads (no second copy); the interpreter's lock is released while
    the system reads.
    """

    def __init__(
        self,
        paths: Sequence[str] | str | Callable[[int], str],
        *,
        columns: Mapping[str, Any] | None = None,
        length: int | None = None,
        max_bytes: int | None = None,
    ) -> None:
        if max_bytes is not None and (
            isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0
        ):
            raise ValueError(
                f"FileDataset: max_bytes must be an int >= 0 or None, got {max_bytes!r}"
            )
        if not isinstance(paths, str) and not callable(paths):
            paths = [os.fspath(p) for p in paths]  # pathlib.Path entries are paths too
        self.locations = Locations(paths, columns=columns, length=length, owner="FileDataset")
        self.max_bytes = max_bytes

    def __len__(self) -> int:
        return len(self.locations)

    def __getitem__(self, index: Any) -> bytes:
        path = self.locations.of(item_index(index, len(self.locations), "FileDataset"))
        try:
            with open(path, "rb", buffering=0) as file:
                size = os.fstat(file.fileno()).st_size
                if self.max_bytes is not None and size > self.max_bytes:
                    raise ItemTooLargeError(
                        index, path, f"{size} bytes, more than max_bytes={self.max_bytes}"
                    )
                data = file.read() if size == 0 else file.read(size)
                if len(data) == size:
                    extra = file.read()  # the file grew meanwhile: read all of it
                    if extra:
                        data += extra
                assert data is not None
        except ItemTooLargeError:
            raise
        except OSError as error:
            raise type(error)(
                error.errno, f"item {index!r}: {error.strerror or error}", path
            ) from None
        if self.max_bytes is not None and len(data) > self.max_bytes:
            raise ItemTooLargeError(
                index, path, f"{len(data)} bytes, more than max_bytes={self.max_bytes}"
            )
        return data

    def reader_spec(self) -> dict[str, Any]:
        return {"kind": "files", "max_bytes": self.max_bytes}

    def native_location(self, location: str) -> bytes:
        # A path is bytes to the system: names that are not UTF-8 (surrogate escapes
        # from os.listdir and pathlib) reach it as they are.
        return os.fsencode(location)

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_readers"}

    def __repr__(self) -> str:
        return f"FileDataset({len(self)} files)"
