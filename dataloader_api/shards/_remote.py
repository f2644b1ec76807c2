"""Shards read whole, with one request each, over HTTP(S) or from an object
store, and kept in memory while their samples are read.

The bytes come from an ``io`` dataset whose item ``s`` is shard ``s``
(``HttpDataset``, ``ObjectStoreDataset``): its retries, limits, credentials
and exact-bytes rules apply. At most ``max_in_memory`` shards are kept (the
least recently used one goes first); a shard two workers need at once is
requested once, the second waits for the first's reply. With ``ShardSampler``
and ``max_in_memory`` at least twice its ``window``, every shard is requested
once per epoch.
"""

from __future__ import annotations

import io
import threading
from collections import OrderedDict
from typing import Any

from ._tar_index import ShardIndex, scan_tar

__all__ = ["RemoteShards"]


class RemoteShards:
    def __init__(self, source: Any, max_in_memory: int) -> None:
        self.source = source
        self.max_in_memory = max_in_memory
        self.names = [_shown(source, source.locations.of(s)) for s in range(len(source))]
        self._changed = threading.Condition()
        self._kept: OrderedDict[int, bytes] = OrderedDict()
        self._loading: set[int] = set()

    def whole(self, shard: int) -> bytes:
        """Shard ``shard``'s bytes: kept, being requested by another thread, or requested now."""
        with self._changed:
            while True:
                data = self._kept.get(shard)
                if data is not None:
                    self._kept.move_to_end(shard)
                    return data
                if shard not in self._loading:
                    self._loading.add(shard)
                    break
                self._changed.wait()
        try:
            data = bytes(self.source[shard])
        except BaseException:
            with self._changed:
                self._loading.discard(shard)
                self._changed.notify_all()
            raise
        with self._changed:
            self._loading.discard(shard)
            self._kept[shard] = data
            while len(self._kept) > self.max_in_memory:
                self._kept.popitem(last=False)
            self._changed.notify_all()
        return data

    def scan(self, shard: int) -> ShardIndex:
        data = self.whole(shard)
        return scan_tar(self.names[shard], io.BytesIO(data), len(data), 0)

    def kept(self) -> list[int]:
        """The shards in memory now, least recently used first."""
        with self._changed:
            return list(self._kept)

    def __getstate__(self) -> dict[str, Any]:
        return {"source": self.source, "max_in_memory": self.max_in_memory, "names": self.names}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._changed = threading.Condition()
        self._kept = OrderedDict()
        self._loading = set()


def _shown(source: Any, location: str) -> str:
    shown = str(source.shown(location))
    return shown.removeprefix("GET ")
