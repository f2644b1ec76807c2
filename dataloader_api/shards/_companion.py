"""Companion index files: NVIDIA DALI's webdataset index (its ``tools/wds2idx.py``),
next to a local shard, read instead of the shard's headers.

DALI's format v1.2: a first line ``v1.2 <samples>``, then one line per sample
holding, for each of its members, ``<extension> <data offset> <size> <name>``.
The names give the samples' keys, so a v1.1 index (no names) is refused,
naming the tool that writes v1.2. The file is the shard's path with its last
extension replaced by ``.idx`` (``train-000001.tar`` next to
``train-000001.idx``, where DALI's tool puts it too; ``set.v2-000.tar`` next
to ``set.v2-000.idx``). DALI's tool names it by the path up to the first dot
of the file name (``set.idx`` for ``set.v2-000.tar`` and ``set.v2-001.tar``
alike): that name is read too, when no other shard of the dataset has it.
``python -m dataloader_api.shards index SHARD...`` (``write_index``) writes
an index this package accepts: every regular member where tar puts it (pax
and long-name headers read, as DALI's tool with GNU tar does not).

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
import tempfile
import warnings

from ._coverage import REWRITE, Members, check_coverage
from ._tar_index import Sample, ShardError, ShardIndex, group_members, split_name, tar_members

__all__ = [
    "companion_path",
    "companion_paths",
    "dali_path",
    "parse_index",
    "parse_members",
    "read_companion",
    "write_index",
]

_BLOCK = 512


def companion_path(shard: str) -> str:
    """Where ``shard``'s own index is: its path with its last extension replaced by
    ``.idx`` (``.idx`` added to a name without one)."""
    name_start = shard.rfind("/") + 1
    dot = shard.rfind(".")
    return (shard[:dot] if dot > name_start else shard) + ".idx"


def dali_path(shard: str) -> str:
    """Where DALI's ``wds2idx.py`` writes ``shard``'s index by default: the path up to
    the first dot of the file name, then ``.idx``."""
    name_start = shard.rfind("/") + 1
    dot = shard.find(".", name_start + 1)  # a leading dot is part of the name
    return (shard[:dot] if dot >= 0 else shard) + ".idx"


def companion_paths(shard: str, shared: bool) -> list[str]:
    """The index files of ``shard`` to look for, in order: its own, then DALI's name
    unless another shard of the dataset has that one too (``shared``)."""
    own, dali = companion_path(shard), dali_path(shard)
    return [own] if dali == own or shared else [own, dali]


def read_companion(
    shard: str, size: int, mtime_ns: int, allow_truncated: bool = False, shared: bool = False
) -> ShardIndex | None:
    """``shard``'s index from its companion file, or None when it has none (or a
    stale one, which warns); it must cover the whole shard."""
    for path in companion_paths(shard, shared):
        try:
            with open(path, "rb") as file:
                status = os.fstat(file.fileno())
                text = file.read()
        except FileNotFoundError:
            continue
        break
    else:
        return None
    if status.st_mtime_ns < mtime_ns:
        warnings.warn(
            f"TarShards: the index {path!r} is older than its shard {shard!r}, so it is "
            "not used (the shard's headers are read instead): write it again with "
            f"python -m dataloader_api.shards index {shard}, or delete it",
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


def index_text(shard: str) -> tuple[bytes, int]:
    """The v1.2 index of the local tar ``shard`` (every regular member, one line per
    webdataset sample) and its number of samples; checked to cover the shard."""
    with open(shard, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        members, _, _ = tar_members(shard, file, size)
        lines: list[list[bytes]] = []
        last: str | None = None
        for name, header, data, length in members:
            if not name or any(c.isspace() for c in name):
                raise ShardError(shard, header, f"member {name!r}: a name with white space "
                                 "cannot be written in a v1.2 index")  # fmt: skip
            split = split_name(name)
            key, extension = split if split is not None else (name, name.rsplit("/", 1)[-1])
            if key != last or not lines:
                lines.append([])
                last = key
            words = (extension, str(data), str(length), name)
            lines[-1] += [w.encode("utf-8", "surrogateescape") for w in words]
        text = f"v1.2 {len(lines)}\n".encode() + b"".join(b" ".join(ln) + b"\n" for ln in lines)
        check_coverage("(new)", shard, parse_members(shard, text, size),
                       lambda at, n: os.pread(file.fileno(), n, at), False)  # fmt: skip
    return text, len(lines)


def write_index(shard: str) -> tuple[str, int]:
    """Write ``shard``'s index beside it (``companion_path``), atomically: its path
    and number of samples."""
    path = companion_path(shard)
    if os.path.abspath(path) == os.path.abspath(shard):
        raise ValueError(f"{shard!r} ends with .idx: give the tar shard, not its index")
    text, samples = index_text(shard)
    folder = os.path.dirname(os.path.abspath(path))
    descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=".idx-", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
    return path, samples


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
                         f"one, with member names) is read; {REWRITE}")  # fmt: skip
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
