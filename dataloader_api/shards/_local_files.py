"""Local shards read whole (``TarShards(local_reads="shard")``): one sequential
read per shard per epoch instead of one ``pread`` per sample, for file systems
where a shard read front to back is much faster than reads scattered over it
(network file systems, disks that are not warm).

``ShardFiles`` is a source for ``_streamed.StreamedShards``, as an ``io``
dataset is for remote shards: a shard is read on a small pool of threads
(the system's reads release the interpreter's lock) straight into the
buffer its samples are taken from, after its size and modification time are
checked against its index.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from ..contract import process_id
from ..io._locations import Locations
from ..io._progressive import ProgressiveBytes
from ._tar_index import ShardError, ShardIndex

__all__ = ["ShardFiles"]

# Two readers keep a disk or a network file system busy without a thread per shard.
_READERS = 2
_pool_lock = threading.Lock()
_pool: tuple[int, ThreadPoolExecutor] | None = None


def _readers() -> ThreadPoolExecutor:
    """This process's pool (a forked child makes its own: the parent's threads are not there)."""
    global _pool
    with _pool_lock:
        if _pool is None or _pool[0] != process_id():
            _pool = (process_id(), ThreadPoolExecutor(_READERS, "dataloader-shard-read"))
        return _pool[1]


class ShardFiles:
    """Local tar shards, each read whole into the sink it is asked for."""

    def __init__(self, indexes: Sequence[ShardIndex]) -> None:
        self.indexes = tuple(indexes)
        self.locations = Locations([i.shard for i in self.indexes], owner="TarShards")

    def __len__(self) -> int:
        return len(self.indexes)

    def shown(self, location: str) -> str:
        return location

    def reads_natively(self) -> bool:
        return False  # the system's reads on the pool: nothing for a backend to add

    def start_streaming(self, shard: int, sink: ProgressiveBytes) -> None:
        _readers().submit(read_whole, self.indexes[shard], sink)


def read_whole(index: ShardIndex, sink: ProgressiveBytes) -> None:
    """Shard ``index.shard`` into ``sink``, or the reason it cannot be, to its readers."""
    try:
        try:
            file = open(index.shard, "rb", buffering=0)  # noqa: SIM115 (closed below)
        except FileNotFoundError as error:
            raise FileNotFoundError(error.errno, "tar shard not found", index.shard) from None
        with file:
            status = os.fstat(file.fileno())
            if (status.st_size, status.st_mtime_ns) != (index.size, index.mtime_ns):
                raise ShardError(
                    index.shard,
                    0,
                    f"changed since it was indexed ({index.size} bytes then, {status.st_size} "
                    "now, or a newer modification time): make the dataset again",
                )
            try:
                sink.fill_from(file)
            except EOFError:
                raise ShardError(
                    index.shard, sink.received, "the file ends inside a sample (cut short?)"
                ) from None
    except BaseException as error:  # it reaches the readers, who raise it
        sink.fail(error)
