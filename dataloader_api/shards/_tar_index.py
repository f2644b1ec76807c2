"""What a tar shard holds, found by reading its headers once: its samples,
each a key and its fields' (offset, size) in the file.

Members are grouped into samples as webdataset groups them: a member's name
splits into a key (up to the first dot of its last path component) and an
extension (the rest, lowercased); consecutive members with one key make one
sample. Names without a dot, directories, links, and webdataset's metadata
names (``__...__``) are skipped; an extension twice in a sample is an error.
A header that cannot be parsed, or data cut short, is an error naming the
shard and the offset: a shard is never silently read in part. So is a shard
that ends without its end-of-archive block (a copy cut where a member's
header would start loses whole samples and still parses), unless the caller
allows truncated shards; then it is read as it is, with a warning.
"""

from __future__ import annotations

import os
import re
import tarfile
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import BinaryIO

__all__ = [
    "Sample",
    "ShardError",
    "ShardIndex",
    "group_members",
    "scan_shard",
    "scan_tar",
    "split_name",
    "tar_members",
    "truncated_message",
    "warn_truncated",
]

_BLOCK = 512
_NAME = re.compile(r"^((?:.*/|)[^.]+)[.]([^/]*)$")
_META = re.compile(r"__[^/]*__($|/)")


class ShardError(ValueError):
    """A tar shard cannot be read as indexed: corrupt, cut short, duplicate
    fields in a sample, or changed since it was indexed. Names the shard and
    the byte offset."""

    def __init__(self, shard: str, offset: int, message: str) -> None:
        super().__init__(f"tar shard {shard!r} at offset {offset}: {message}")
        self.shard = shard
        self.offset = offset

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild, (self.args[0], self.shard, self.offset))


def _rebuild(text: str, shard: str, offset: int) -> ShardError:
    error = ShardError.__new__(ShardError)
    ValueError.__init__(error, text)
    error.shard, error.offset = shard, offset
    return error


def split_name(name: str) -> tuple[str, str] | None:
    """``(key, extension)`` of a member's name, None when it has no extension."""
    if "/" not in name and name.startswith("__") and name.endswith("__"):
        return None
    if _META.match(name):
        return None
    found = _NAME.match(name)
    if not found:
        return None
    return found.group(1), found.group(2).lower()


@dataclass(frozen=True)
class Sample:
    key: str
    # extension -> (data offset, size), in the shard's order
    fields: tuple[tuple[str, int, int], ...]

    @property
    def span(self) -> tuple[int, int]:
        """The bytes holding every field: one read covers them."""
        start = min(offset for _, offset, _ in self.fields)
        end = max(offset + size for _, offset, size in self.fields)
        return start, end - start


@dataclass(frozen=True)
class ShardIndex:
    shard: str
    size: int
    mtime_ns: int
    samples: tuple[Sample, ...]
    # read from a companion index file: each field's tar header is checked as it is read
    from_companion: bool = False
    # without its end-of-archive block, read as it is (allow_truncated=True)
    truncated: bool = False
    # a remote shard's strong ETag or Last-Modified when it was indexed (None: not sent)
    validator: str | None = None


def _check_end(
    shard: str, file: BinaryIO, offset: int, size: int, samples: tuple[Sample, ...], allow: bool
) -> bool:
    """tarfile stops quietly at a bad header past the first, and at the file's end
    where a header would start: the archive must end with a zero block there.
    Whether it is cut short (allowed by ``allow``: ``warn_truncated`` says so)."""
    block = b""
    if offset < size:
        file.seek(offset)
        block = file.read(_BLOCK)
        if len(block) == _BLOCK and block.count(0) == _BLOCK:
            return False  # the end-of-archive zeros
        if block.count(0) != len(block):
            if len(block) < _BLOCK:
                raise ShardError(
                    shard, offset, f"a tar header cut short ({len(block)} of 512 bytes)"
                )
            raise ShardError(shard, offset, "not a valid tar header (corrupt shard)")
    where = "inside its end-of-archive block" if block else "without its end-of-archive block"
    problem = truncated_message(where, samples)
    if not allow:
        raise ShardError(shard, offset, f"{problem}; pass allow_truncated=True to read the "
                         f"{len(samples)} samples there as they are")  # fmt: skip
    return True


def warn_truncated(index: ShardIndex) -> None:
    """Say that ``index``'s shard, cut short, is read as it is (``allow_truncated``)."""
    problem = truncated_message("without its whole end-of-archive block", index.samples)
    warnings.warn(f"TarShards: tar shard {index.shard!r} ({index.size} bytes): {problem}; "
                  "read as it is (allow_truncated=True)", RuntimeWarning, stacklevel=3)  # fmt: skip


def truncated_message(where: str, samples: tuple[Sample, ...]) -> str:
    """Why a shard ending ``where`` is refused, naming its last samples."""
    if not samples:
        last = "no sample before it"
    elif len(samples) == 1:
        last = f"its one sample there, {samples[-1].key!r}, may lack fields cut off"
    else:
        last = (f"the last whole sample there is {samples[-2].key!r} ({samples[-1].key!r} "
                "after it may lack fields cut off)")  # fmt: skip
    return (f"the archive ends {where} (512 zero bytes): a copy cut short, whose "
            f"later samples are missing; {last}")  # fmt: skip


def group_members(shard: str, members: Sequence[tuple[str, int, int, int]]) -> tuple[Sample, ...]:
    samples: list[Sample] = []
    key: str | None = None
    fields: list[tuple[str, int, int]] = []
    for name, header_offset, data_offset, size in members:
        split = split_name(name)
        if split is None:
            continue
        member_key, extension = split
        if member_key != key:
            if fields:
                samples.append(Sample(key, tuple(fields)))  # type: ignore[arg-type]
            key, fields = member_key, []
        if any(extension == seen for seen, _, _ in fields):
            raise ShardError(
                shard,
                header_offset,
                f"member {name!r}: a second {extension!r} field of sample {key!r}",
            )
        fields.append((extension, data_offset, size))
    if fields:
        samples.append(Sample(key, tuple(fields)))  # type: ignore[arg-type]
    return tuple(samples)


def scan_shard(shard: str, allow_truncated: bool = False) -> ShardIndex:
    """Read ``shard``'s headers (a local tar file) into its index."""
    try:
        file = open(shard, "rb")  # noqa: SIM115 (closed by the with below)
    except FileNotFoundError as error:
        raise FileNotFoundError(error.errno, "tar shard not found", shard) from None
    with file:
        status = os.fstat(file.fileno())
        return scan_tar(shard, file, status.st_size, status.st_mtime_ns, allow_truncated)


def scan_tar(
    shard: str, file: BinaryIO, size: int, mtime_ns: int, allow_truncated: bool = False
) -> ShardIndex:
    """The index of the tar ``file`` (seekable, ``size`` bytes) named ``shard``."""
    _, samples, truncated = tar_members(shard, file, size, allow_truncated)
    return ShardIndex(shard, size, mtime_ns, samples, truncated=truncated)


def tar_members(
    shard: str, file: BinaryIO, size: int, allow_truncated: bool = False
) -> tuple[list[tuple[str, int, int, int]], tuple[Sample, ...], bool]:
    """Every regular member of the tar ``file`` (name, header offset, data offset,
    size; pax and long-name headers read as tar reads them), its samples, and
    whether it ends without its end-of-archive block (``allow_truncated``)."""
    try:
        # Not closed: closing it would close `file`, which the caller owns.
        tar = tarfile.open(fileobj=file, mode="r:")  # noqa: SIM115
    except tarfile.ReadError as error:
        raise ShardError(shard, 0, f"not a tar file ({error})") from None
    members: list[tuple[str, int, int, int]] = []
    while True:
        offset = tar.offset
        try:
            info = tar.next()
        except tarfile.ReadError as error:
            last = f" (member {members[-1][0]!r} ends past the file's {size} bytes)"
            raise ShardError(shard, offset, f"{error}{last if members else ''}") from None
        except (ValueError, OverflowError) as error:  # a size past what a seek takes
            raise ShardError(shard, offset, f"not a valid tar header ({error})") from None
        if info is None:
            break
        if info.isreg() and info.offset_data + info.size > size:
            raise ShardError(shard, offset, f"member {info.name!r} of {info.size} bytes "
                             f"ends past the file's {size} bytes")  # fmt: skip
        tar.members = []  # type: ignore[attr-defined]  # an index, not tarfile's list, holds what we keep
        if info.isreg():
            members.append((info.name, info.offset, info.offset_data, info.size))
    samples = group_members(shard, members)
    truncated = _check_end(shard, file, tar.offset, size, samples, allow_truncated)
    return members, samples, truncated
