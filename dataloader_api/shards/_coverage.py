"""A companion index must cover its whole shard: checked when the dataset is
made, by arithmetic on the index's offsets and sizes and a few 512-byte reads.

A tar is a run of members, each a 512-byte header then its data padded to a
multiple of 512, ending with a block of zeros. DALI's ``wds2idx.py`` indexes
every regular file, so an index that covers its shard names members whose
spans (header, data, padding) follow one another from offset 0 to the
end-of-archive block. The only bytes between two indexed spans (a gap) can be
headers of members it does not index: a pax or GNU long-name header before a
member (their data skipped), a directory or a link (a header alone). So:

- where one indexed span ends where the next begins (every shard without
  long names), nothing is read: the arithmetic is the proof;
- a gap's headers are read one by one (512 bytes each, a pax header's data
  skipped) and must be such members, ending where the next indexed header
  starts: a regular file there is a member the index leaves out;
- past the last indexed span the same walk must reach a zero block: members
  there are left out, and a file that ends first is cut short;
- the last indexed member's header is read and must be that member's (name,
  size, checksum): an index of another shard with the same layout (fixed
  field sizes) names other keys.

Every other field's header is still checked when it is read
(``check_header``), so an index whose entries point at the wrong
members never hands out their bytes. Locally these are ``pread`` calls on
the shard; remotely they are answered from one range request from the
first gap, or else from the last indexed member's header, to the end.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ._tar_index import ShardError, group_members, truncated_message

__all__ = ["REWRITE", "check_coverage", "check_header", "first_read"]

#: what every "this index is wrong" error says to do: DALI's wds2idx.py with GNU tar
#: writes the same wrong offsets again for a shard with pax headers
REWRITE = (
    "write it again with python -m dataloader_api.shards index SHARD, which indexes "
    "every member where tar puts it"
)
_BLOCK = 512
_DATA_SKIPPED = (b"x", b"g", b"L", b"K")  # pax and GNU long-name headers: data for the next
_HEADER_ONLY = (b"1", b"2", b"3", b"4", b"5", b"6")  # links, devices, directories, fifos
_REGULAR = (b"0", b"\0", b"7")

Members = Sequence[tuple[str, int, int, int]]  # name, header offset, data offset, size


def _padded(size: int) -> int:
    return -(-size // _BLOCK) * _BLOCK


def first_read(members: Members) -> int:
    """Where the reads ``check_coverage`` makes begin: the first gap, else the
    last indexed member's header (0 for an empty index)."""
    position = 0
    for _, header, data, size in members:
        if header != position:
            return position
        position = data + _padded(size)
    return members[-1][1] if members else 0


def check_coverage(
    index: str,
    shard: str,
    members: Members,
    read: Callable[[int, int], bytes],
    allow_truncated: bool,
) -> bool:
    """Raise ``ShardError`` unless the ``members`` ``index`` names cover the tar
    ``shard`` whose bytes ``read(offset, length)`` gives (fewer at its end).
    Whether it ends without its end-of-archive block (``allow_truncated``)."""
    position = 0
    for _, header, data, size in members:
        if header != position:
            _walk(index, shard, position, header, read)
        position = data + _padded(size)
    end = _walk(index, shard, position, None, read)
    if members:
        name, header, data, size = members[-1]
        try:
            check_header(shard, read(header, _BLOCK), data, size, name)
        except ShardError:
            raise ShardError(shard, header, f"the index {index!r} does not match this shard: "
                             f"no header of its member {name!r} ({size} bytes) here (is it "
                             f"another shard's index? {REWRITE})") from None  # fmt: skip
    if end is None:
        return False
    samples = group_members(index, members)
    where = "inside its end-of-archive block" if end else "without its end-of-archive block"
    problem = truncated_message(where, samples)
    if not allow_truncated:
        raise ShardError(shard, position, f"{problem} (its index {index!r} ends there too); "
                         "pass allow_truncated=True to read the samples there as they "
                         "are")  # fmt: skip
    return True


def _walk(
    index: str, shard: str, position: int, until: int | None, read: Callable[[int, int], bytes]
) -> int | None:
    """Read the headers from ``position`` up to the indexed header at ``until`` (None:
    to the end-of-archive block): each must be of a member an index leaves out.
    At the end: None for a whole zero block, else how many bytes of it there are."""
    while until is None or position < until:
        block = read(position, _BLOCK)
        if until is None and block.count(0) == len(block):
            return None if len(block) == _BLOCK else len(block)
        kind, name, size = _parse(block)
        if kind is None or kind not in _DATA_SKIPPED + _HEADER_ONLY:
            if kind in _REGULAR:
                problem = f"leaves out member {name!r} at offset {position}"
            elif kind is None:
                problem = f"has no tar header where it says one is, at offset {position}"
            else:
                problem = f"leaves out a member of type {kind!r} at offset {position}"
            raise ShardError(shard, position, f"the index {index!r} {problem}: it does not "
                             "cover its shard, whose samples it would leave out "
                             f"({REWRITE})")  # fmt: skip
        position += _BLOCK + (_padded(size) if kind in _DATA_SKIPPED else 0)
    if position != until:
        raise ShardError(shard, until, f"the index {index!r} puts a member's header "
                         "inside another member: it does not match its shard "
                         f"({REWRITE})")  # fmt: skip
    return None


def _parse(block: bytes) -> tuple[bytes | None, str, int]:
    """A tar header's type, name and size; type None when it is not a valid header."""
    if len(block) != _BLOCK:
        return None, "", 0
    try:
        recorded = int(block[148:156].split(b"\0", 1)[0].strip() or b"-1", 8)
        field = block[124:136]
        if field[0] & 0x80:  # GNU base-256
            size = int.from_bytes(field[1:], "big")
        else:
            size = int(field.split(b"\0", 1)[0].strip() or b"0", 8)
    except ValueError:
        return None, "", 0
    if recorded != sum(block[:148]) + 256 + sum(block[156:]):
        return None, "", 0
    named = block[:100].split(b"\0", 1)[0]
    prefix = block[345:500].split(b"\0", 1)[0] if block[257:263] == b"ustar\0" else b""
    name = (prefix + b"/" + named if prefix else named).decode("utf-8", "replace")
    return block[156:157], name, size


def check_header(shard: str, block: bytes, offset: int, size: int, member: str) -> None:
    """The tar header ``block`` before a field at ``offset`` must be ``member``'s (its
    key and extension, compared without case) with ``size`` bytes."""
    try:
        recorded = int(block[148:156].split(b"\0", 1)[0].strip() or b"-1", 8)
        stated = int(block[124:136].split(b"\0", 1)[0].strip() or b"-1", 8)
    except ValueError:
        recorded = stated = -1
    checksum = sum(block[:148]) + 256 + sum(block[156:])
    named = block[:100].split(b"\0", 1)[0]
    prefix = block[345:500].split(b"\0", 1)[0] if block[257:263] == b"ustar\0" else b""
    name = (prefix + b"/" + named if prefix else named).decode("utf-8", "replace").lower()
    # a name of 100 bytes or more is cut in this header (the whole one precedes it)
    same = name == member.lower() or (len(named) == 100 and member.lower().startswith(name))
    if len(block) != _BLOCK or recorded != checksum or stated != size or not same:
        raise ShardError(shard, offset - _BLOCK, f"no tar header of member {member!r} "
                         f"({size} bytes) here: the index file does not match the shard "
                         f"({REWRITE})")  # fmt: skip
