"""Tar shards written for a test: the samples' members, one shard, a numbered set
of them. Shared by the shards tests (tests/shards/) and the io tests that read
a remote shard (tests/io/test_io_bounds.py); imported as ``shard_files``, as
``rawserver`` is."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path


def write_shard(path: Path, members: list[tuple[str, bytes]]) -> None:
    with tarfile.open(path, "w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def sample_members(key: int) -> list[tuple[str, bytes]]:
    return [
        (f"s/{key:05d}.jpg", bytes([key % 251]) * (key % 7 + 1)),
        (f"s/{key:05d}.CLS", str(key).encode()),
        (f"s/{key:05d}.meta.json", json.dumps({"key": key}).encode()),
    ]


def make_shards(folder: Path, shards: int, per_shard: list[int] | int) -> str:
    sizes = per_shard if isinstance(per_shard, list) else [per_shard] * shards
    key = 0
    for shard, size in enumerate(sizes):
        members = []
        for _ in range(size):
            members += sample_members(key)
            key += 1
        write_shard(folder / f"train-{shard:03d}.tar", members)
    return str(folder / f"train-{{000..{shards - 1:03d}}}.tar")
