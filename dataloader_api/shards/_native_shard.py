"""Remote shards streamed by the backend's own reader (the rust backend's
``open_reader``: crate dataloader-netio), without the interpreter, instead of
the reference's Python client: the same bytes, the same exceptions.

The loader tells the dataset which reader its backend offers when an epoch
starts (``_epoch.native_reads``); ``DATALOADER_NATIVE_IO=0`` keeps the reference.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from ..contract import process_id
from ..io._native import count_reads

__all__ = ["NativeShard", "NativeStreams"]


class NativeStreams:
    """An ``io`` dataset's reader in this process, and the cancel handle that ends
    its streams when the dataset is freed."""

    def __init__(self, source: Any, open_reader: Callable[..., Any]) -> None:
        self.source = source
        self.owner = getattr(open_reader, "__self__", open_reader)
        self.pid = process_id()
        self.shared = source._reader(open_reader, None)
        self.cancel = self.shared.reader.new_cancel()
        weakref.finalize(self, self.cancel.cancel)

    def serves(self, open_reader: Callable[..., Any]) -> bool:
        return self.pid == process_id() and self.owner is getattr(
            open_reader, "__self__", open_reader
        )

    def start(
        self,
        shard: int,
        size: int,
        mismatch: Callable[[int], BaseException],
        expected: tuple[str, Callable[[str], BaseException]] | None = None,
    ) -> NativeShard:
        """Stream shard ``shard`` of ``size`` bytes; ``expected``: the validator it was
        indexed with and what a first reply with another raises."""
        location = self.source.locations.of(shard)
        validator, replaced = expected if expected is not None else (None, None)
        native = self.shared.reader.stream(
            self.source.native_location(location), size, self.cancel, validator
        )
        return NativeShard(self, native, shard, location, mismatch, replaced)


class NativeShard:
    """A shard streaming natively, read as ``io._progressive.ProgressiveBytes`` is."""

    def __init__(
        self,
        streams: NativeStreams,
        native: Any,
        shard: int,
        location: str,
        mismatch: Callable[[int], BaseException],
        replaced: Callable[[str], BaseException] | None = None,
    ) -> None:
        self._streams, self._native = streams, native
        self._shard, self._location, self._mismatch = shard, location, mismatch
        self._replaced = replaced
        self.size: int = native.size

    @property
    def received(self) -> int:
        return int(self._native.received)

    @property
    def done(self) -> bool:
        return bool(self._native.done)

    @property
    def failed(self) -> bool:
        return bool(self._native.failed)

    def take(self, start: int, end: int) -> bytes:
        """Bytes ``start:end``, once they are there (waiting without the interpreter)."""
        taken = self._native.take(start, end)
        count_reads(self._streams.shared, self._streams.source)
        if isinstance(taken, bytes):
            return taken
        kind, message, status, attempts, errno, total = taken
        if kind == "changed":
            raise self._mismatch(total)
        if kind == "replaced" and self._replaced is not None:  # the message: its validator now
            raise self._replaced(message)
        source = self._streams.source
        raise source.failure(self._shard, self._location, kind, message, status, attempts, errno)
