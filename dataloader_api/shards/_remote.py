"""Shards streamed over HTTP(S) or from an object store, one request each,
and kept in memory while their samples are read.

The bytes come from an ``io`` dataset whose item ``s`` is shard ``s``
(``HttpDataset``, ``ObjectStoreDataset``): its retries, limits, credentials
and exact-bytes rules apply. A shard streams on the io datasets' private
event loop into a buffer of its indexed size; a sample is handed out as soon
as its own bytes are there, not when the whole shard is. A read cut short
resumes where it stopped (a range request whose reply is checked). At most
``max_in_memory`` shards are kept (the least recently used one goes first);
a shard two workers need at once is requested once. With ``ShardSampler`` and
``max_in_memory`` at least twice its ``window``, every shard is requested once
per epoch. On a backend with native reads (rust) the shards stream through its
reader instead (``_native_shard``).
"""

from __future__ import annotations

import io
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ..io._progressive import ProgressiveBytes
from ._native_shard import NativeShard, NativeStreams
from ._tar_index import ShardIndex, scan_tar

__all__ = ["RemoteShards"]


class RemoteShards:
    def __init__(self, source: Any, max_in_memory: int) -> None:
        self.source = source
        self.max_in_memory = max_in_memory
        self.names = [_shown(source, source.locations.of(s)) for s in range(len(source))]
        self._lock = threading.Lock()
        self._kept: OrderedDict[int, ProgressiveBytes | NativeShard] = OrderedDict()
        self._native: NativeStreams | None = None

    def read_natively(self, open_reader: Callable[..., Any] | None) -> None:
        """Stream through ``open_reader``'s reader from now on (a backend's native
        reads), or through the reference's client (None)."""
        if open_reader is None or not self.source.reads_natively():
            self._native = None
        elif self._native is None or not self._native.serves(open_reader):
            self._native = NativeStreams(self.source, open_reader)

    def streamed(
        self, shard: int, size: int, mismatch: Callable[[int], BaseException]
    ) -> ProgressiveBytes | NativeShard:
        """Shard ``shard``'s bytes as they arrive: kept, streaming, or requested now.
        ``mismatch(total)`` is what a reply of another size than ``size`` raises."""
        with self._lock:
            kept = self._kept.get(shard)
            if kept is not None and not kept.failed:  # a failed read is tried again
                self._kept.move_to_end(shard)
                if kept.size != size:
                    raise mismatch(kept.size)
                return kept
            native = self._native
            streaming: ProgressiveBytes | NativeShard
            if native is not None:  # started under the lock: one request per shard
                streaming = self._kept[shard] = native.start(shard, size, mismatch)
            else:
                streaming = self._kept[shard] = ProgressiveBytes(size, mismatch)
            while len(self._kept) > self.max_in_memory:
                self._kept.popitem(last=False)  # its readers still hold it
        if isinstance(streaming, ProgressiveBytes):
            self.source.start_streaming(shard, streaming)
        return streaming

    def scan(self, shard: int) -> ShardIndex:
        """Index a shard, read whole (its size is not known before); it is kept."""
        data = bytes(self.source[shard])
        with self._lock:
            self._kept[shard] = ProgressiveBytes.complete(data)
            while len(self._kept) > self.max_in_memory:
                self._kept.popitem(last=False)
        return scan_tar(self.names[shard], io.BytesIO(data), len(data), 0)

    def kept(self) -> list[int]:
        """The shards in memory now (or arriving), least recently used first."""
        with self._lock:
            return list(self._kept)

    def __getstate__(self) -> dict[str, Any]:
        return {"source": self.source, "max_in_memory": self.max_in_memory, "names": self.names}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._kept = OrderedDict()
        self._native = None


def _shown(source: Any, location: str) -> str:
    shown = str(source.shown(location))
    return shown.removeprefix("GET ")
