"""An asyncio HTTP/1.1 client for item reads: pooled keep-alive connections
per host, one GET per item, the retry policy, and counters.

Written on asyncio's streams so that one event loop keeps many requests in
flight for a few worker threads; it needs nothing outside the standard library.
"""

from __future__ import annotations

import asyncio
import base64
import random
import re
import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import SplitResult, unquote, urljoin, urlsplit, urlunsplit

from ._errors import FetchError, ItemTooLargeError, downgrade
from ._host_limit import HostLimit
from ._http_head import (
    Http2Only,
    MalformedReply,
    content_length,
    read_chunked,
    read_head,
    read_to_end,
)
from ._progressive import ProgressiveBytes, range_start, stream_body
from ._proxy import Proxies, open_via, proxy_authorization
from ._retry import RetryPolicy, parse_retry_after

__all__ = ["MAX_REDIRECTS", "Counters", "HttpClient", "redact"]

#: Redirects followed per item at most (as requests; curl follows 50).
MAX_REDIRECTS = 10
_REDIRECTS = frozenset({301, 302, 303, 307, 308})

_SECRET_QUERY = re.compile(r"(signature|token|secret|password|credential|key|sig|auth)", re.I)
# Error bodies are read up to this size for the message (S3 puts its code there).
_ERROR_BODY = 4096


def redact(url: str) -> str:
    """``url`` without credentials: no user info, secret-looking query values hidden."""
    parts = urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2] if "@" in parts.netloc else parts.netloc
    if "@" in parts.netloc:
        netloc = "***@" + netloc
    query = "&".join(
        f"{k}=***" if _SECRET_QUERY.search(k) else f"{k}={v}" if sep else k
        for k, sep, v in (pair.partition("=") for pair in parts.query.split("&") if pair)
    )
    return urlunsplit(parts._replace(netloc=netloc, query=query))


@dataclass
class Counters:
    """What a dataset's reads did (updated on the event loop's thread only)."""

    requests: int = 0
    retries: int = 0
    redirects: int = 0
    connections: int = 0
    bytes: int = 0


class _Transient(Exception):
    """One attempt failed in a way worth retrying."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.retry_after = retry_after


class _Response:
    __slots__ = ("body", "headers", "reason", "replied", "reusable", "status")

    def __init__(self, version: str, status: int, reason: str, headers: dict[str, str]) -> None:
        self.status, self.reason, self.headers = status, reason, headers
        self.replied = time.monotonic()  # made as the status line arrives
        self.body = b""
        # HTTP/1.0 closes after each reply unless the server says keep-alive.
        keep = headers.get("connection", "").lower()
        self.reusable = keep == "keep-alive" if version == "HTTP/1.0" else keep != "close"


Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class HttpClient:
    """Keep-alive connections per (scheme, host, port), at most ``max_connections`` each."""

    def __init__(
        self,
        *,
        timeout: float,
        retry: RetryPolicy,
        max_bytes: int | None,
        max_connections: int,
        counters: Counters,
    ) -> None:
        self.timeout, self.retry, self.max_bytes = timeout, retry, max_bytes
        self.max_connections = max_connections
        self.counters = counters
        self._idle: dict[tuple[str, str, int], list[Connection]] = {}
        self._limits: dict[tuple[str, str, int], HostLimit] = {}
        self._rng = random.Random()
        self._ssl: ssl.SSLContext | None = None
        self._proxies = Proxies()  # the environment's, read once as reqwest reads them

    async def get(
        self,
        url: str,
        index: Any,
        headers: Mapping[str, str] | Callable[[], Mapping[str, str]] = {},  # noqa: B006
        shown: str | None = None,
        detail: Callable[[bytes], str] | None = None,
        sink: ProgressiveBytes | None = None,
    ) -> bytes:
        """The body of ``url``, retrying transient failures and following redirects;
        ``shown`` names it in errors. With a ``sink`` the body goes there as it
        arrives (``b""`` is returned), and a retry resumes where it was cut."""
        parts = _checked(url, index)
        where = shown if shown is not None else f"GET {redact(url)}"
        origin = _origin(parts)
        auth = _basic_auth(parts)
        attempt = redirects = 0
        while True:
            extra = headers() if callable(headers) else headers
            if _origin(parts) != origin:
                extra = {}  # as curl and requests: no credentials for another host
            elif auth is not None and not any(k.lower() == "authorization" for k in extra):
                extra = {**extra, "Authorization": auth}
            extra = {**extra, **range_start(sink)}
            before = sink.received if sink is not None else 0
            try:
                response = await self._attempt(parts, extra, index, where, sink)
            except _Transient as failure:
                # A streamed body that moved on before it was cut resumes without
                # using up a retry: a large object on a slow link needs several.
                progressed = sink is not None and sink.received > before
                if attempt >= self.retry.max_retries and not progressed:
                    raise FetchError(
                        index,
                        where,
                        f"failed after {attempt + 1} attempts; last: {failure}",
                        attempts=attempt + 1,
                        status=_status_of(failure),
                    ) from None
                await asyncio.sleep(self.retry.delay(attempt, failure.retry_after, self._rng))
                attempt += 0 if progressed else 1
                self.counters.retries += 1
                continue
            if response.status == 200 or (sink is not None and response.status == 206):
                self.counters.bytes += len(response.body) if sink is None else sink.size
                return response.body
            target = response.headers.get("location")
            if response.status in _REDIRECTS and target and redirects < MAX_REDIRECTS:
                hop = _checked(urljoin(urlunsplit(parts), target), index)
                if parts.scheme == "https" and hop.scheme == "http":
                    raise FetchError(index, where, downgrade(hop))
                redirects += 1
                self.counters.redirects += 1
                parts = hop
                continue
            text = f"HTTP {response.status} {response.reason}".rstrip()
            if response.status in _REDIRECTS:
                text += f" after {redirects} redirects" if target else " without a Location"
            elif detail is not None and response.body:
                text += f": {detail(response.body)}"
            raise FetchError(
                index,
                where,
                f"{text} (not retried)",
                status=response.status,
                attempts=attempt + 1,
            )

    async def _attempt(
        self,
        parts: SplitResult,
        headers: Mapping[str, str],
        index: Any,
        where: str,
        sink: ProgressiveBytes | None,
    ) -> _Response:
        """One request: a transient failure raises ``_Transient``."""
        key = _origin(parts)
        limit = self._limits.get(key)
        if limit is None:
            limit = self._limits[key] = HostLimit(self.max_connections, key)
        started, replied = await limit.acquire(), None
        try:
            idle = self._idle.setdefault(key, [])
            # A pooled connection the server has closed fails before any reply: the
            # request then goes once more on a new connection, not counted as a retry.
            # So does a connect that stalls (a SYN the server dropped), a few times.
            quick = _QUICK_RECONNECTS
            while True:
                reused = bool(idle)
                connection = idle.pop() if reused else None
                try:
                    async with asyncio.timeout(self.timeout):
                        if connection is None:
                            deadline = limit.connect_deadline() if quick else None
                            connection = await self._connect(key, limit, deadline)
                        response = await self._exchange(
                            connection, parts, headers, index, where, sink
                        )
                except _SlowConnect:
                    limit.stalled(started, first=quick == _QUICK_RECONNECTS)
                    quick -= 1
                    continue
                except TimeoutError:
                    _close(connection)
                    raise _Transient(f"timed out after {self.timeout:g} s") from None
                except _Stale:
                    _close(connection)
                    if reused:
                        continue
                    raise _Transient("the server closed the connection before replying") from None
                except (_Transient, FetchError):
                    _close(connection)
                    raise
                except Http2Only as error:
                    _close(connection)  # not transient: the server speaks it every time
                    raise FetchError(index, where, f"{error} (not retried)") from None
                except MalformedReply as error:
                    _close(connection)
                    raise _Transient(f"a malformed reply: {error}") from None
                except ssl.SSLCertVerificationError as error:
                    _close(connection)  # not transient: the same certificate comes again
                    reason = f"certificate verification failed: {error.verify_message}"
                    raise FetchError(index, where, f"{reason} (not retried)") from None
                except (ConnectionError, OSError, asyncio.IncompleteReadError) as error:
                    _close(connection)
                    raise _Transient(_describe(error)) from None
                except BaseException:
                    _close(connection)
                    raise
                replied = response.replied
                if response.reusable:
                    idle.append(connection)
                else:
                    _close(connection)
                if response.status in self.retry.statuses:
                    raise _Transient(
                        f"HTTP {response.status} {response.reason}".rstrip(),
                        parse_retry_after(response.headers.get("retry-after")),
                    )
                return response
        finally:
            limit.release(started, replied)

    async def _connect(
        self, key: tuple[str, str, int], limit: HostLimit, deadline: float | None
    ) -> Connection:
        scheme, host, port = key
        proxy = self._proxies.for_url(scheme, host, port)
        context = None
        if scheme == "https" or (proxy is not None and proxy.scheme == "https"):
            if self._ssl is None:
                self._ssl = ssl.create_default_context()
            context = self._ssl  # an https proxy's roots are the origins' roots
        begun = time.monotonic()
        opening = (
            open_via(proxy, scheme, host, port, context)
            if proxy is not None
            else asyncio.open_connection(host, port, ssl=context, limit=2**20)
        )
        try:
            connection = await asyncio.wait_for(opening, deadline)
        except TimeoutError:
            raise _SlowConnect from None
        limit.connected(time.monotonic() - begun)
        self.counters.connections += 1
        return connection

    async def _exchange(
        self,
        connection: Connection,
        parts: SplitResult,
        headers: Mapping[str, str],
        index: Any,
        where: str,
        sink: ProgressiveBytes | None,
    ) -> _Response:
        reader, writer = connection
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        host = parts.netloc.rpartition("@")[2]
        proxy = None if parts.scheme == "https" else self._proxies.for_url(*_origin(parts))
        if proxy is not None:  # absolute form, to the proxy (its credentials to it only)
            target = f"http://{host}{target}"
            headers = {**headers, **proxy_authorization(proxy)}
        lines = [f"GET {target} HTTP/1.1", f"Host: {host}", "Accept-Encoding: identity"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        self.counters.requests += 1
        try:
            status_line, fields = await read_head(reader)
        except EOFError:
            raise _Transient("the connection closed inside the reply's headers") from None
        if not status_line:
            raise _Stale
        version, _, rest = status_line.decode("latin-1").rstrip("\r\n").partition(" ")
        code, _, reason = rest.partition(" ")
        if not version.startswith("HTTP/1.") or not (code.isascii() and code.isdigit()):
            raise MalformedReply(f"not an HTTP/1.x reply: {status_line[:80]!r}")
        response = _Response(version, int(code), reason, fields)
        if sink is not None and response.status in (200, 206):
            await self._stream(reader, response, sink, index, where)
            return response
        ok = response.status == 200
        limit = self.max_bytes if ok else _ERROR_BODY
        if "chunked" in fields.get("transfer-encoding", "").lower():
            response.body = await read_chunked(reader, limit, ok, index, where)
        elif (size := content_length(fields)) is not None:
            if ok and limit is not None and size > limit:
                response.reusable = False
                raise ItemTooLargeError(index, where, f"{size} bytes, more than max_bytes={limit}")
            if ok or size <= _ERROR_BODY:
                response.body = await reader.readexactly(size)
            else:
                response.reusable = False
        else:
            response.reusable = False
            response.body = (
                await read_to_end(reader, limit, index, where)
                if ok
                else (await reader.read(_ERROR_BODY))
            )
        return response

    async def _stream(
        self,
        reader: asyncio.StreamReader,
        response: _Response,
        sink: ProgressiveBytes,
        index: Any,
        where: str,
    ) -> None:
        fields = response.headers
        if self.max_bytes is not None and sink.size > self.max_bytes:
            response.reusable = False
            raise ItemTooLargeError(
                index, where, f"{sink.size} bytes, more than max_bytes={self.max_bytes}"
            )

        def refuse(reason: str) -> FetchError:
            status = response.status
            return FetchError(index, where, f"{reason} (not retried)", status=status)

        await stream_body(reader, response.status, fields, sink, _Transient, refuse)
        if (
            "content-length" not in fields
            and "chunked" not in fields.get("transfer-encoding", "").lower()
        ):
            response.reusable = False  # the body ended with the connection

    def close(self) -> None:
        for idle in self._idle.values():
            for connection in idle:
                _close(connection)
        self._idle.clear()


class _Stale(Exception):
    """A connection that ended before the first byte of the reply."""


class _SlowConnect(Exception):
    """A connect past the host's deadline: a SYN the server dropped, sent again now."""


# Connects tried again at once per attempt before one waits as long as the system does.
_QUICK_RECONNECTS = 3


def _checked(url: str, index: Any) -> SplitResult:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"item {index!r}: {redact(url)!r} is not an http(s) URL")
    return parts


def _origin(parts: SplitResult) -> tuple[str, str, int]:
    return (parts.scheme, parts.hostname or "", parts.port or _default_port(parts.scheme))


def _basic_auth(parts: SplitResult) -> str | None:
    """``user:password@`` in a URL as the ``Authorization`` header (curl, requests)."""
    if parts.username is None:
        return None
    pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
    return "Basic " + base64.b64encode(pair.encode()).decode("ascii")


def _default_port(scheme: str) -> int:
    return 443 if scheme == "https" else 80


def _close(connection: Connection | None) -> None:
    if connection is not None:
        connection[1].transport.abort()


def _describe(error: BaseException) -> str:
    if isinstance(error, asyncio.IncompleteReadError):
        expected = "" if error.expected is None else f" of {error.expected}"
        return f"the body was cut short ({len(error.partial)}{expected} bytes)"
    return f"{type(error).__name__}: {error}"


def _status_of(failure: _Transient) -> Any:
    text = str(failure)
    return int(text[5:8]) if text.startswith("HTTP ") and text[5:8].isdigit() else None
