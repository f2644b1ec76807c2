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

__all__ = ["NativeReads", "count_reads"]


class NativeReads:
    """Mixin of the I/O datasets: ``reader_spec`` and ``native_fetch``."""

    locations: Locations

    def reader_spec(self) -> dict[str, Any]:  # pragma: no cover - each dataset's own
        raise NotImplementedError

    def shown(self, location: str) -> str:
        """How errors name a location (credentials redacted)."""
        return location

    def native_location(self, location: str) -> str | bytes:
        """A location as the backend's reader takes it (``FileDataset``: bytes)."""
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

    def _reader(self, open_reader: Callable[..., Any], concurrency: int | None) -> _Shared:
        cache: dict[tuple[int, int, int | None], _Shared] = self.__dict__.setdefault("_readers", {})
        # Keyed by the backend, not by ``open_reader``: a bound method is a new
        # object on each access, so its id gave every epoch a new reader (new
        # connections, the host limit starting over) and kept the old ones.
        owner = getattr(open_reader, "__self__", open_reader)
        key = (id(owner), process_id(), concurrency)
        shared = cache.get(key)
        if shared is None or shared.owner is not owner:
            shared = cache[key] = _Shared(owner, open_reader(self.reader_spec(), concurrency))
        return shared

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
    """One epoch's reads through a backend's reader. As with async datasets, a
    job's reads start when the backend takes the job from the plan (``start``),
    so the whole window's items are in flight while workers wait (``fetch``);
    ``close`` ends the reads still running (a ``break``)."""

    def __init__(self, dataset: NativeReads, shared: _Shared, batched: bool) -> None:
        self._dataset, self._shared, self._batched = dataset, shared, batched
        self._reader = shared.reader
        self._cancel = shared.reader.new_cancel()

    def start(self, indices: Any) -> StartedReads:
        """Start the reads of a job (its indices, or its one index without batching)."""
        dataset = self._dataset
        owner, locations = type(dataset).__name__, dataset.locations
        batch = indices if self._batched else [indices]
        paths = [locations.of(item_index(i, len(locations), owner)) for i in batch]
        native = [dataset.native_location(path) for path in paths]
        return StartedReads(indices, batch, paths, self._reader.start(native, self._cancel))

    def fetch(self, started: StartedReads) -> Any:
        """On a worker thread: wait for a job's reads; its items, or its first failure."""
        results = started.pending.wait()
        self._count()
        for index, location, result in zip(started.batch, started.paths, results, strict=True):
            if isinstance(result, tuple):
                raise self._dataset.failure(index, location, *result)
        return results if self._batched else results[0]

    def fetch_now(self, indices: Any) -> Any:
        """The calling thread's epochs (and one item of ``items_in_parallel``)."""
        return self.fetch(self.start(indices))

    def item_fetch(self, index: Any) -> Any:
        """One item, whatever the batching (``MapWork.getitem``)."""
        started = self.start([index] if self._batched else index)
        results = self.fetch(started)
        return results[0] if self._batched else results

    def _count(self) -> None:
        count_reads(self._shared, self._dataset)

    def close(self) -> None:
        """End the reads still running, and close the reader's idle connections
        (as the reference's ``aclose``: none stays open after a ``break``)."""
        self._cancel.cancel()
        close_idle = getattr(self._reader, "close_idle", None)
        if close_idle is not None:  # a backend's reader may keep no connections
            close_idle()


def count_reads(shared: _Shared, dataset: Any) -> None:
    """Add to the dataset's counters what its reader (shared by every thread and
    epoch) counted since anyone last looked."""
    reader = shared.reader
    with shared.lock:
        counts = reader.counters()
        counters = getattr(dataset, "counters", None)
        if counters is not None:
            counters.requests += counts[0] - shared.seen[0]
            counters.retries += counts[1] - shared.seen[1]
            counters.bytes += counts[2] - shared.seen[2]
            if len(counts) > 3:  # a reader that follows redirects counts them
                counters.redirects += counts[3] - shared.seen[3]
            if len(counts) > 4:  # and one that sees its connections opened
                counters.connections += counts[4] - shared.seen[4]
        shared.seen = tuple(counts) + (0,) * (5 - len(counts))


class _Shared:
    """A dataset's reader in this process, and how much of its counts the dataset's
    counters already hold."""

    def __init__(self, owner: object, reader: Any) -> None:
        self.owner, self.reader = owner, reader
        self.lock = threading.Lock()
        self.seen: tuple[int, ...] = (0, 0, 0, 0, 0)


class StartedReads:
    """A job whose reads run (``BatchJob.started``): its ``indices``, the items'
    locations, and the backend's handle."""

    __slots__ = ("batch", "indices", "paths", "pending")

    def __init__(self, indices: Any, batch: list[Any], paths: list[str], pending: Any) -> None:
        self.indices, self.batch, self.paths, self.pending = indices, batch, paths, pending
