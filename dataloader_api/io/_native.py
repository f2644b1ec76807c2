"""Native reads: a backend that offers ``open_reader`` (the rust one) reads an
I/O dataset's items itself, without the interpreter, instead of the reference.

The dataset gives the backend its options as plain data (``reader_spec``),
resolves each index to its location here, and turns the backend's failure
records into the reference's exceptions, so both paths raise the same types
with the same index, location and status.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ..contract import process_id
from ._errors import FetchError, ItemTooLargeError
from ._http_client import redact
from ._locations import Locations, item_index

__all__ = ["NativeReads"]


class NativeReads:
    """Mixin of the I/O datasets: ``reader_spec`` and ``native_fetch``."""

    locations: Locations

    def reader_spec(self) -> dict[str, Any]:  # pragma: no cover - each dataset's own
        raise NotImplementedError

    def shown(self, location: str) -> str:
        """How errors name a location (credentials redacted)."""
        return location

    def reads_natively(self) -> bool:
        """False for a subclass that overrides how an item is read: its own code runs."""
        kind = type(self)
        home = next(c for c in kind.__mro__ if c.__module__.startswith("dataloader_api.io."))
        return all(
            getattr(kind, name, None) is getattr(home, name, None)
            for name in ("__getitem__", "__getitems__", "__agetitem__", "read")
        )

    def native_epoch(
        self, open_reader: Callable[..., Any], concurrency: int | None, batched: bool
    ) -> NativeEpoch:
        """One epoch's fetches through the backend's reader (made once per process)."""
        return NativeEpoch(self, self._reader(open_reader, concurrency), batched)

    def _reader(self, open_reader: Callable[..., Any], concurrency: int | None) -> Any:
        cache: dict[tuple[int, int, int | None], Any] = self.__dict__.setdefault("_readers", {})
        key = (id(open_reader), process_id(), concurrency)
        reader = cache.get(key)
        if reader is None:
            reader = cache[key] = open_reader(self.reader_spec(), concurrency)
        return reader

    def failure(
        self,
        index: Any,
        location: str,
        kind: str,
        message: str,
        status: int | None,
        attempts: int,
        errno: int | None,
    ) -> BaseException:
        if kind == "os":
            return OSError(errno, f"item {index!r}: {message}", location)
        if kind == "cancelled":
            return RuntimeError(f"item {index!r}: the epoch was closed while it was read")
        if kind == "invalid":
            return ValueError(f"item {index!r}: {redact(location)!r} {message}")
        error = ItemTooLargeError if kind == "too_large" else FetchError
        return error(index, self.shown(location), message, status=status, attempts=attempts)


class NativeEpoch:
    """One epoch's reads through a backend's reader: ``job_fetch`` (a job's
    indices, or its one index without batching) and ``item_fetch`` (one index);
    ``close`` ends the reads still running (a ``break``)."""

    def __init__(self, dataset: NativeReads, reader: Any, batched: bool) -> None:
        self._dataset, self._reader = dataset, reader
        self._cancel = reader.new_cancel()
        self._lock = threading.Lock()
        self._seen = (0, 0, 0)
        self.job_fetch = self.read if batched else self.read_one
        self.item_fetch = self.read_one

    def read(self, indices: list[Any]) -> list[Any]:
        dataset = self._dataset
        owner, locations = type(dataset).__name__, dataset.locations
        paths = [locations.of(item_index(i, len(locations), owner)) for i in indices]
        results = self._reader.read(paths, self._cancel)
        self._count()
        for index, location, result in zip(indices, paths, results, strict=True):
            if isinstance(result, tuple):
                raise dataset.failure(index, location, *result)
        return results  # type: ignore[no-any-return]

    def read_one(self, index: Any) -> Any:
        return self.read([index])[0]

    def _count(self) -> None:
        """Add to the dataset's counters what the reader (shared by every thread and
        epoch) counted since this epoch last looked."""
        counts = self._reader.counters()
        counters = getattr(self._dataset, "counters", None)
        with self._lock:
            if counters is not None:
                counters.requests += counts[0] - self._seen[0]
                counters.retries += counts[1] - self._seen[1]
                counters.bytes += counts[2] - self._seen[2]
            self._seen = counts

    def close(self) -> None:
        self._cancel.cancel()
