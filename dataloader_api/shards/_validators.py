"""A remote shard's identity beyond its length: the validator (strong ETag, else
Last-Modified) of the reply it was indexed from, kept with its index, and
checked with one small range request before a kept index is used again
(every kept shard's at once, when the dataset is made).

A shard replaced on the server by one of the same length (another shard of
the same layout, written again with other samples) has another ETag: its
kept index would hand out other samples' bytes, so it is indexed again.
A server that sends neither header leaves only the length to check (a
warning says so, once per dataset). The check is made with the reference's
client when the dataset is made, whichever backend then streams the shards
(the rust reader does not hand its reply's headers back).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from ..io._base import run_sync
from ..io._progressive import ProgressiveBytes
from ._tar_index import ShardError

__all__ = ["Tail", "current", "read_whole"]


class Tail(ProgressiveBytes):
    """A sink that starts at ``start``: a client resuming into it asks for the rest
    only (``Range: bytes=start-``); ``size`` is what the reply says the whole is,
    which must reach ``end`` (where an index's last member ends); ``validator``
    the reply's strong ETag or Last-Modified."""

    def __init__(self, start: int, end: int, shard: str) -> None:
        mismatch: Callable[[int], BaseException] = lambda total: ShardError(  # noqa: E731
            shard, total, f"ends before its index's last member ends, at {end}"
        )
        super().__init__(0, mismatch)
        self.size = self._received = start
        self.data = bytearray()
        self._start, self._end = start, end

    def expect_total(self, total: int) -> None:
        if total < self._end:
            raise self._mismatch(total)
        self.size = total

    def read(self, offset: int, length: int) -> bytes:
        """``length`` bytes at ``offset`` of the shard (fewer at its end)."""
        at = offset - self._start
        if at < 0:  # not asked for: check_coverage reads from first_read on
            raise AssertionError(f"offset {offset} before the range read from {self._start}")
        return bytes(self.data[at : at + length])

    def write(self, chunk: bytes | bytearray | memoryview) -> None:
        self.data += chunk
        self._received += len(chunk)

    def matches(self, offset: int, chunk: bytes) -> bool:
        """A whole reply's first bytes: those before ``start`` were not asked for
        (the range was ignored); those received before a cut must be the same."""
        at = offset - self._start
        return at < 0 or bytes(self.data[at : at + len(chunk)]) == chunk


def read_whole(source: Any, shard: int, name: str) -> tuple[bytes, str | None]:
    """Shard ``shard`` read whole, and its reply's validator."""
    whole = Tail(0, 0, name)
    run_sync(source.read(shard, source.locations.of(shard), whole))
    return bytes(whole.data), whole.validator


def current(source: Any, shards: list[tuple[int, str, int]]) -> dict[int, tuple[int, str | None]]:
    """The length and validator now of each ``(shard, name, indexed size)``: one range
    request for its last byte each (a server that ignores the range sends it all),
    all at once within the client's connection limits."""

    async def one(shard: int, name: str, size: int) -> tuple[int, tuple[int, str | None]]:
        probe = Tail(max(size - 1, 0), 0, name)
        await source.read(shard, source.locations.of(shard), probe)
        return shard, (probe.size, probe.validator)

    async def every() -> list[tuple[int, tuple[int, str | None]]]:
        return await asyncio.gather(*(one(*shard) for shard in shards))

    return dict(run_sync(every()))
