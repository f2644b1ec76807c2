"""A reply's head (status line and header fields) and the framing of its body,
read within bounds: what the server sends that breaks HTTP/1.1 is a
``MalformedReply``, which the client turns into a ``FetchError`` naming the item
and URL (issue 49).

The bounds are hyper's defaults, which the rust backend's reqwest client keeps,
so that a reply is refused alike on every path."""

from __future__ import annotations

import asyncio
from typing import Any

from ._errors import ItemTooLargeError

__all__ = [
    "HTTP2_ONLY",
    "MAX_HEADER_FIELDS",
    "MAX_HEAD_BYTES",
    "Http2Only",
    "MalformedReply",
    "chunk_size",
    "content_length",
    "read_chunk_size",
    "read_chunked",
    "read_head",
    "read_to_end",
    "skip_trailers",
]

#: A reply's header fields together, each counted as its line, at most (hyper's
#: ``DEFAULT_MAX_BUFFER_SIZE``, 8192 + 4096 * 100 bytes; the rust backend checks
#: the same number, ``netio/src/http.rs``); the status line alone likewise.
MAX_HEAD_BYTES = 8192 + 4096 * 100
#: Header fields per reply at most (hyper's ``DEFAULT_MAX_HEADERS``).
MAX_HEADER_FIELDS = 100


#: What an HTTP/2-only server is told as (the rust backend's words too).
HTTP2_ONLY = "the server speaks HTTP/2 only; this client speaks HTTP/1.1"


class MalformedReply(Exception):
    """A reply that is not HTTP/1.1 as the client reads it."""


class Http2Only(MalformedReply):
    """The reply began with an HTTP/2 frame: not retried, the next one would too."""


def is_http2_frame(head: bytes) -> bool:
    """A SETTINGS or GOAWAY frame on stream 0: how an HTTP/2 server begins (and
    ends) a connection that did not start with its preface."""
    return len(head) >= 9 and head[3] in (4, 7) and head[5:9] == b"\0\0\0\0"


async def _line(reader: asyncio.StreamReader, what: str) -> bytes:
    try:
        return await reader.readline()
    except ValueError:  # asyncio's own limit on a line: far past ours
        raise MalformedReply(f"a {what} longer than {MAX_HEAD_BYTES} bytes") from None


async def read_head(reader: asyncio.StreamReader) -> tuple[bytes, dict[str, str]]:
    """The status line (``b""`` if the connection closed first) and the header
    fields, lower-cased names; ``EOFError`` if the connection closes inside them."""
    status_line = await _line(reader, "status line")
    if is_http2_frame(status_line[:9]):
        raise Http2Only(HTTP2_ONLY)
    if len(status_line) > MAX_HEAD_BYTES:
        raise MalformedReply(f"a status line longer than {MAX_HEAD_BYTES} bytes")
    used = 0
    fields: dict[str, str] = {}
    count = 0
    while status_line:
        line = await _line(reader, "header line")
        used += len(line)
        if used > MAX_HEAD_BYTES:
            raise MalformedReply(f"headers of more than {MAX_HEAD_BYTES} bytes")
        if line in (b"\r\n", b"\n"):
            break
        if not line:
            raise EOFError
        count += 1
        if count > MAX_HEADER_FIELDS:
            raise MalformedReply(f"more than {MAX_HEADER_FIELDS} header fields")
        name, colon, value = line.decode("latin-1").partition(":")
        if not colon or not name.strip():
            raise MalformedReply(f"a header line without a name: {line[:80]!r}")
        fields[name.strip().lower()] = value.strip()
    return status_line, fields


def content_length(fields: dict[str, str]) -> int | None:
    """``Content-Length`` as an int; ``None`` when absent."""
    value = fields.get("content-length")
    if value is None:
        return None
    if not (value.isascii() and value.isdigit()) or len(value) > 19:
        raise MalformedReply(f"Content-Length {value[:80]!r} is not a byte count")
    return int(value)


def chunk_size(line: bytes) -> int:
    """A chunked body's size line as an int."""
    text = line.split(b";")[0].strip()
    if not text or len(text) > 16 or not all(c in b"0123456789abcdefABCDEF" for c in text):
        raise MalformedReply(f"chunk size {line[:80]!r} is not hexadecimal")
    return int(text, 16)


async def skip_trailers(reader: asyncio.StreamReader) -> None:
    """A chunked body's trailer fields, read within the head's bounds and dropped."""
    used = 0
    while (line := await _line(reader, "trailer line")) not in (b"\r\n", b"\n", b""):
        used += len(line)
        if used > MAX_HEAD_BYTES:
            raise MalformedReply(f"trailers of more than {MAX_HEAD_BYTES} bytes")


async def read_chunk_size(reader: asyncio.StreamReader) -> int | None:
    """The next chunk's size; ``None`` if the connection closed before it."""
    line = await _line(reader, "chunk size line")
    return chunk_size(line) if line else None


async def read_chunked(
    reader: asyncio.StreamReader, limit: int | None, ok: bool, index: Any, where: str
) -> bytes:
    """A chunked body, refused past ``limit`` (an error body: cut there)."""
    body = bytearray()
    while True:
        size = await read_chunk_size(reader)
        if size is None:
            raise asyncio.IncompleteReadError(bytes(body), None)
        if size == 0:
            await skip_trailers(reader)
            return bytes(body)
        if limit is not None and len(body) + size > limit:
            if ok:
                raise ItemTooLargeError(index, where, f"more than max_bytes={limit} bytes")
            return bytes(body)
        body += await reader.readexactly(size)
        await reader.readexactly(2)


async def read_to_end(
    reader: asyncio.StreamReader, limit: int | None, index: Any, where: str
) -> bytes:
    """A body that ends with the connection, refused as soon as it passes ``limit``."""
    body = bytearray()
    while part := await reader.read(1 << 16):
        body += part
        if limit is not None and len(body) > limit:
            raise ItemTooLargeError(index, where, f"more than max_bytes={limit} bytes")
    return bytes(body)
