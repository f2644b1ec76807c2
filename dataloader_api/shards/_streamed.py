"""Shards streamed over HTTP(S), from an object store, or read whole from
local files, one request or read each, and kept in memory while their
samples are read.

The bytes come from an ``io`` dataset whose item ``s`` is shard ``s``
(``HttpDataset``, ``ObjectStoreDataset``): its retries, limits, credentials
and exact-bytes rules apply. A shard streams on the io datasets' private
event loop into a buffer of its indexed size; a sample is handed out as soon
as its own bytes are there, not when the whole shard is. A read cut short
resumes where it stopped (a range request whose reply is checked). At most
``max_in_memory`` shards, and at most ``max_bytes`` of them, are kept (the
least recently used one goes first; one shard is always kept, whatever its
size);
a shard two workers need at once is requested once. With ``ShardSampler`` and
``max_in_memory`` at least twice its ``window``, every shard is requested once
per epoch. On a backend with native reads (rust) the shards stream through its
reader instead (``_native_shard``). Local shards come from
``_local_files.ShardFiles``, read whole on a pool of threads.

``in_memory`` and ``peak_bytes`` count every shard buffer still alive, kept
or not: one pushed out while it still arrives lives on for the samples
waiting on it.
"""

from __future__ import annotations

import dataclasses
import io
import threading
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ..io._errors import ItemTooLargeError
from ..io._progressive import ProgressiveBytes
from ._native_shard import NativeShard, NativeStreams
from ._tar_index import ShardIndex, scan_tar
from ._validators import read_whole

__all__ = ["StreamedShards"]


class StreamedShards:
    def __init__(self, source: Any, max_in_memory: int, max_bytes: int | None = None) -> None:
        self.source = source
        self.max_in_memory, self.max_bytes = max_in_memory, max_bytes
        self.peak_bytes = 0
        self._live: weakref.WeakSet[ProgressiveBytes | NativeShard] = weakref.WeakSet()
        self.names = [_shown(source, source.locations.of(s)) for s in range(len(source))]
        self._lock = threading.Lock()
        self._kept: OrderedDict[int, ProgressiveBytes | NativeShard] = OrderedDict()
        self._native: NativeStreams | None = None
        self._served: dict[int, int] = {}  # samples asked of each shard's latest read
        self._wasted = 0  # reads of a shard pushed out before most of its samples went
        self.warned = False

    def read_natively(self, open_reader: Callable[..., Any] | None) -> None:
        """Stream through ``open_reader``'s reader from now on (a backend's native
        reads), or through the reference's client (None)."""
        if open_reader is None or not self.source.reads_natively():
            self._native = None
        elif self._native is None or not self._native.serves(open_reader):
            self._native = NativeStreams(self.source, open_reader)

    def streamed(
        self,
        shard: int,
        size: int,
        mismatch: Callable[[int], BaseException],
        samples: int | None = None,
        expected: tuple[str, Callable[[str], BaseException]] | None = None,
    ) -> ProgressiveBytes | NativeShard:
        """Shard ``shard``'s bytes as they arrive: kept, streaming, or requested now.
        ``mismatch(total)`` is what a reply of another size than ``size`` raises;
        ``samples`` how many samples the shard holds (a shard read again before
        half of them were asked of its last read is counted: random access);
        ``expected`` the validator the shard was indexed with and what a first reply
        with another raises (checked by the reference's client and by the native
        reader alike)."""
        with self._lock:
            kept = self._kept.get(shard)
            if kept is not None and not kept.failed:  # a failed read is tried again
                self._kept.move_to_end(shard)
                if kept.size != size:
                    raise mismatch(kept.size)
                self._served[shard] = self._served.get(shard, 0) + 1
                return kept
            served = self._served.get(shard)
            if samples is not None and served is not None and 2 * served < samples:
                self._wasted += 1
                if not self.warned and self._wasted >= max(4, len(self.names)):
                    self.warned = True
                    self._warn_random_access()
            self._served[shard] = 1
            native = self._native
            streaming: ProgressiveBytes | NativeShard
            self._kept.pop(shard, None)  # a failed read: not counted against the bounds
            limit = getattr(self.source, "max_bytes", None)
            if limit is not None and size > limit:  # before its buffer is made (issue 49)
                raise ItemTooLargeError(
                    shard, self.names[shard], f"{size} bytes, more than max_bytes={limit}"
                )
            self._make_room(size)
            if native is not None:  # started under the lock: one request per shard
                streaming = native.start(shard, size, mismatch, expected)
            else:
                streaming = ProgressiveBytes(size, mismatch)
                if expected is not None:
                    streaming.expected, streaming.replaced = expected
            self._admit(streaming, shard)
        if isinstance(streaming, ProgressiveBytes):
            self.source.start_streaming(shard, streaming)
        return streaming

    def scan(self, shard: int, allow_truncated: bool = False) -> ShardIndex:
        """Index a shard, read whole (its size is not known before); it is kept. The
        index holds the reply's validator (``_validators``)."""
        data, validator = read_whole(self.source, shard, self.names[shard])
        with self._lock:
            self._make_room(len(data))
            self._admit(ProgressiveBytes.complete(data), shard)
        index = scan_tar(self.names[shard], io.BytesIO(data), len(data), 0, allow_truncated)
        return dataclasses.replace(index, validator=validator)

    def _warn_random_access(self) -> None:
        bytes_bound = "" if self.max_bytes is None else f" and {self.max_bytes} bytes"
        warnings.warn(
            f"TarShards: shards read whole were read again {self._wasted} times after "
            "leaving memory before half their samples were taken (at most "
            f"{self.max_in_memory} shards{bytes_bound} are kept): random access, as "
            "shuffle=True or a RandomSampler gives, reads each shard about once per "
            "sample. Use sampler=ShardSampler(dataset) (shards in turn, samples shuffled "
            "within a window of shards), or a larger max_shards_in_memory/"
            "max_bytes_in_memory",
            RuntimeWarning,
            stacklevel=4,
        )

    def _make_room(self, size: int) -> None:
        """Push out the least recently used shards (their readers still hold them)
        until one more of ``size`` bytes fits the bounds, or none is left (under the lock)."""
        while self._kept and (
            len(self._kept) >= self.max_in_memory
            or (self.max_bytes is not None and self._kept_bytes() + size > self.max_bytes)
        ):
            self._kept.popitem(last=False)

    def _admit(self, streaming: ProgressiveBytes | NativeShard, shard: int) -> None:
        self._kept[shard] = streaming
        self._live.add(streaming)
        self.peak_bytes = max(self.peak_bytes, self.in_memory())

    def _kept_bytes(self) -> int:
        return sum(kept.size for kept in self._kept.values())

    def in_memory(self) -> int:
        """Bytes of every shard buffer alive now, kept or still read from."""
        return sum(streaming.size for streaming in list(self._live))

    def kept(self) -> list[int]:
        """The shards in memory now (or arriving), least recently used first."""
        with self._lock:
            return list(self._kept)

    def __getstate__(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "max_in_memory": self.max_in_memory,
            "max_bytes": self.max_bytes,
            "names": self.names,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._kept = OrderedDict()
        self._native = None
        self._served, self._wasted, self.warned = {}, 0, False
        self.peak_bytes = 0
        self._live = weakref.WeakSet()


def _shown(source: Any, location: str) -> str:
    shown = str(source.shown(location))
    return shown.removeprefix("GET ")
