"""An object's bytes as they arrive: readers take a part once it is there,
without waiting for the rest (a tar shard's samples while the shard streams).

``ProgressiveBytes`` is a buffer of the object's known size, filled in order
by one writer (the event loop reading the reply) and read by any thread.
Every slice of the shared view is made and released under the lock: on
free-threaded 3.13 a view's export count is not atomic (CPython's
memoryobject.c), so slices made and dropped in two threads at once can count it
down to zero and release the view for good.

``stream_body`` is the client's side: it writes a reply's body into one,
resuming where an earlier attempt was cut. Nothing but the object's bytes
ever reaches a reader: a resumed reply must be the range asked for (206 with
a ``Content-Range`` starting there), or the whole object again (200), whose
bytes already received are checked, not trusted.
"""

from __future__ import annotations

import asyncio
import mmap
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

from ._http_head import content_length, read_chunk_size, skip_trailers

__all__ = ["ProgressiveBytes", "range_start", "stream_body"]

# Bytes read from the socket per step: a sample waits for at most this much more.
_STEP = 1 << 18
# Buffers from this size on are pages mapped for them alone (see _buffer).
_MAPPED_FROM = 1 << 20


def _buffer(size: int) -> bytearray | mmap.mmap:
    """``size`` zero bytes to fill. A large one is an anonymous mapping of its own,
    unmapped when freed: glibc's malloc raises its mmap threshold to the size of a
    mapped block freed, after which blocks that size come from its heaps and stay
    there once freed, so a process cycling through shard buffers under a bound in
    bytes grew by several times the bound (measured: 17 shards' worth for a bound
    of 3), whatever the bound."""
    return mmap.mmap(-1, size) if size >= _MAPPED_FROM else bytearray(size)


class ProgressiveBytes:
    """``size`` bytes filled in order; ``take(start, end)`` waits for ``end``.

    ``mismatch(total)`` makes the exception raised when a reply announces
    another total size (the object changed since its size was known).
    """

    def __init__(self, size: int, mismatch: Callable[[int], BaseException]) -> None:
        self.size = size
        self._mismatch = mismatch
        self._data = _buffer(size)
        self._view = memoryview(self._data)
        self._received = 0
        self._error: BaseException | None = None
        self._changed = threading.Condition()
        #: the first reply's strong ETag (or Last-Modified): a resumed read sends it
        #: as If-Range, so a server whose object changed answers with all of it
        self.validator: str | None = None
        #: the validator the object must have (it was indexed with it), if known: a
        #: reply with another raises ``replaced(validator)``
        self.expected: str | None = None
        self.replaced: Callable[[str], BaseException] | None = None

    @classmethod
    def complete(cls, data: bytes) -> ProgressiveBytes:
        """Bytes already all there (a shard read whole to index it)."""
        whole = cls(len(data), lambda total: AssertionError(total))
        whole._view[:] = data
        whole._received = len(data)
        return whole

    @property
    def received(self) -> int:
        return self._received

    @property
    def done(self) -> bool:
        return self._received == self.size or self._error is not None

    @property
    def failed(self) -> bool:
        return self._error is not None

    def expect_total(self, total: int) -> None:
        """A reply says the object has ``total`` bytes: it must be ``size``."""
        if total != self.size:
            raise self._mismatch(total)

    def write(self, chunk: bytes | bytearray | memoryview) -> None:
        """The next bytes (the writer's thread only)."""
        start = self._received
        end = start + len(chunk)
        if end > self.size:
            raise self._mismatch(end)
        self._view[start:end] = chunk
        with self._changed:
            self._received = end
            self._changed.notify_all()

    def fill_from(self, file: Any) -> None:
        """Read the rest from ``file`` (its ``readinto``) straight into the buffer, a
        step at a time so readers go as their parts arrive (the writer's thread only)."""
        while self._received < self.size:
            start = self._received
            with self._changed:
                part = self._view[start : min(self.size, start + _STEP * 4)]
            try:
                count = file.readinto(part)
            finally:
                with self._changed:
                    part.release()
            if not count:
                raise EOFError(f"ended after {start} of {self.size} bytes")
            with self._changed:
                self._received = start + count
                self._changed.notify_all()

    def matches(self, offset: int, chunk: bytes) -> bool:
        """Whether bytes already received at ``offset`` equal ``chunk`` (a reply
        that starts over is checked against them)."""
        with self._changed:
            part = self._view[offset : offset + len(chunk)]
            try:
                return part == chunk
            finally:
                part.release()

    def fail(self, error: BaseException) -> None:
        """The read failed for good: every reader waiting, or to come, raises ``error``."""
        with self._changed:
            if self._error is None and self._received < self.size:
                self._error = error
            self._changed.notify_all()

    def take(self, start: int, end: int) -> bytes:
        """Bytes ``start:end``, once they are there."""
        with self._changed:  # also orders the writer's bytes before this read
            while end > self._received and self._error is None:
                self._changed.wait()
            if end > self._received:
                assert self._error is not None
                raise self._error
            part = self._view[start:end]
            try:
                return bytes(part)
            finally:
                part.release()


def range_start(sink: ProgressiveBytes | None) -> dict[str, str]:
    """The header that resumes a read cut short (none for a first attempt)."""
    if sink is None or sink.received == 0:
        return {}
    resume = {"Range": f"bytes={sink.received}-"}
    if sink.validator is not None:
        resume["If-Range"] = sink.validator
    return resume


async def stream_body(
    reader: asyncio.StreamReader,
    status: int,
    headers: dict[str, str],
    sink: ProgressiveBytes,
    cut: Callable[[str], BaseException],
    refuse: Callable[[str], BaseException],
) -> None:
    """Write a 200 or 206 reply's body into ``sink``. ``cut(reason)`` is raised when
    the body ends early (retried: the next attempt resumes), ``refuse(reason)``
    when the reply is not the bytes asked for (not retried)."""
    chunked = "chunked" in headers.get("transfer-encoding", "").lower()
    resumed_at = sink.received
    skip = 0  # bytes of a 200 reply that the sink already holds: checked
    if status == 206:
        first, total = _content_range(headers.get("content-range", ""))
        if first != resumed_at:
            raise refuse(
                f"answered a range request for bytes {resumed_at}- with bytes from "
                f"{first} (Content-Range: {headers.get('content-range')!r})"
            )
        if total is not None:
            sink.expect_total(total)
        if sink.validator is None:  # a first reply that is a range (an index's end)
            sink.validator = _validator(headers)
    else:
        skip = resumed_at
        sink.validator = _validator(headers)
        if (total := content_length(headers)) is not None and not chunked:
            sink.expect_total(total)
        validator, replaced = sink.validator, sink.replaced
        checked = not resumed_at and None not in (sink.expected, validator)
        if checked and validator != sink.expected and replaced is not None:
            # the first reply: of the same length, but not the object indexed (a
            # resumed one's bytes already received are compared instead)
            raise replaced(validator or "")
    length = None if chunked else content_length(headers)
    chunks = _chunked(reader) if chunked else None
    read = 0
    while length is None or read < length:
        if chunks is not None:
            part = await anext(chunks, b"")
        else:
            part = await reader.read(_STEP if length is None else min(_STEP, length - read))
        if not part:
            break
        offset = read + (resumed_at if status == 206 else 0)
        read += len(part)
        if skip:
            known = part[:skip]
            if not sink.matches(offset, known):
                raise refuse(
                    f"sent other bytes at offset {offset} than before (changed while read?)"
                )
            part = part[len(known) :]
            skip -= len(known)
        if part:
            sink.write(part)
    if sink.received < sink.size:
        of = f" of {length}" if length is not None else ""
        raise cut(f"the body was cut short ({read}{of} bytes)")
    if length is not None and read < length:
        raise cut(f"the body was cut short ({read} of {length} bytes)")


def _validator(headers: dict[str, str]) -> str | None:
    """A reply's strong ETag, else its Last-Modified (what ``If-Range`` takes)."""
    etag = headers.get("etag", "")
    return etag if etag.startswith('"') else headers.get("last-modified")


def _content_range(value: str) -> tuple[int | None, int | None]:
    """``bytes FIRST-LAST/TOTAL`` as (FIRST, TOTAL); ``None`` where it is not said."""
    unit, _, spec = value.strip().partition(" ")
    span, _, total = spec.partition("/")
    first = span.partition("-")[0]
    if unit.lower() != "bytes" or not first.isdigit():
        return None, None
    return int(first), int(total) if total.isdigit() else None


async def _chunked(reader: asyncio.StreamReader) -> AsyncIterator[bytes]:
    """A chunked body's data, a piece at a time."""
    while True:
        size = await read_chunk_size(reader)
        if size is None:
            return
        if size == 0:
            await skip_trailers(reader)
            return
        while size:
            part = await reader.read(min(size, _STEP))
            if not part:
                return
            size -= len(part)
            yield part
        await reader.readexactly(2)
