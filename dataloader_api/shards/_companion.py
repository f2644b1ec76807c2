"""Companion index files: NVIDIA DALI's webdataset index (its ``tools/wds2idx.py``),
next to a local shard, read instead of the shard's headers.

DALI's format v1.2: a first line ``v1.2 <samples>``, then one line per sample
holding, for each of its members, ``<extension> <data offset> <size> <name>``.
The names give the samples' keys, so a v1.1 index (no names) is refused,
naming the tool that writes v1.2. The file is where DALI's tool puts it by
default: the shard's path up to the first dot of its file name, then
``.idx`` (``train-000001.tar`` next to ``train-000001.idx``).

An index file is not trusted blindly: one older than its shard is not used
(with a warning); its fields must lie in the shard, in order, each past a
header block; it must cover its whole shard (``_coverage.check_coverage``,
when the dataset is made); and the tar header before each field is checked
when the field is read (``_coverage.check_header``): a checksum that holds,
the member's name and the indexed size. A wrong index raises ``ShardError``,
never hands out other bytes.
"""

from __future__ import annotations

import os
import warnings

from ._coverage import Members, check_coverage
from ._tar_index import Sample, ShardError, ShardIndex, group_members

__all__ = ["companion_path", "parse_index", "parse_members", "read_companion"]

_BLOCK = 512


def companion_path(shard: str) -> str:
    """Where DALI's ``wds2idx.py`` writes ``shard``'s index by default."""
    name_start = shard.rfind("/") + 1
    dot = shard.find(".", name_start + 1)  # a leading dot is part of the name
    return (shard[:dot] if dot >= 0 else shard) + ".idx"


def read_companion(
    shard: str, size: int, mtime_ns: int, allow_truncated: bool = False
) -> ShardIndex | None:
    """``shard``'s index from its companion file, or None when it has none (or a
    stale one, which warns); it must cover the whole shard."""
    path = companion_path(shard)
    try:
        with open(path, "rb") as file:
            status = os.fstat(file.fileno())
            text = file.read()
    except FileNotFoundError:
        return None
    if status.st_mtime_ns < mtime_ns:
        warnings.warn(
            f"TarShards: the index {path!r} is older than its shard {shard!r}, so it is "
            "not used (the shard's headers are read instead): write it again with "
            "DALI's wds2idx.py, or delete it",
            RuntimeWarning,
            stacklevel=5,
        )
        return None
    members = parse_members(path, text, size)
    descriptor = os.open(shard, os.O_RDONLY)
    try:
        truncated = check_coverage(
            path, shard, members, lambda at, n: os.pread(descriptor, n, at), allow_truncated
        )
    finally:
        os.close(descriptor)
    samples = group_members(path, members)
    return ShardIndex(shard, size, mtime_ns, samples, from_companion=True, truncated=truncated)


def parse_index(path: str, text: bytes, size: int | None) -> tuple[Sample, ...]:
    """The samples an index file names, each member checked to lie in a shard of
    ``size`` bytes (None: not known yet, the caller checks)."""
    return group_members(path, parse_members(path, text, size))


def parse_members(path: str, text: bytes, size: int | None) -> Members:
    """The members an index file names: (name, header offset, data offset, size)."""
    lines = text.split(b"\n")
    header = lines[0].split()
    if len(header) != 2 or not header[1].isdigit():
        raise ShardError(path, 0, "not a DALI webdataset index (its first line should be "
                         f"'v1.2 <samples>', not {lines[0][:40]!r})")  # fmt: skip
    version, count = header[0].decode("ascii", "replace"), int(header[1])
    if version != "v1.2":
        raise ShardError(path, 0, f"index version {version!r}: only v1.2 (DALI's current "
                         "one, with member names) is read; write it again with DALI's "
                         "tools/wds2idx.py")  # fmt: skip
    members: list[tuple[str, int, int, int]] = []
    offset = len(lines[0]) + 1
    end = 0
    rows = [line for line in lines[1:] if line.strip()]
    if len(rows) != count:
        raise ShardError(path, 0, f"says {count} samples but has {len(rows)} lines")
    for number, line in enumerate(lines[1:], start=2):
        words = line.split()
        if len(words) % 4:
            raise ShardError(path, offset, f"line {number}: not '<extension> <offset> <size> "
                             "<name>' groups (a name with a space cannot be indexed)")  # fmt: skip
        for at in range(0, len(words), 4):
            try:
                data, length = int(words[at + 1]), int(words[at + 2])
                name = words[at + 3].decode("utf-8", "surrogateescape")
            except ValueError:
                raise ShardError(path, offset, f"line {number}: an offset or size that is "
                                 "not a number") from None  # fmt: skip
            past = size is not None and data + length > size
            if data % _BLOCK or data < end + _BLOCK or length < 0 or past:
                within = f", in a {size}-byte shard" if size is not None else ""
                raise ShardError(path, offset, f"line {number}: member {name!r} at "
                                 f"{data} ({length} bytes) is not where a member can be "
                                 f"(a block past {end}{within})")  # fmt: skip
            end = data + length
            members.append((name, data - _BLOCK, data, length))
        offset += len(line) + 1
    return members
