"""A small HTTP/1.1 server on 127.0.0.1 with injected faults and latency, for
tests and benchmarks of ``HttpDataset`` (and anything else that reads HTTP).

    with LoopbackServer({"/a": b"..."}) as server:
        server.fail("/a", Status(503, retry_after=0.1), Reset(after=10), Redirect("/b"))
        HttpDataset([server.url + "/a"])[0]

Faults queued for a path are used by its next requests, one each; then the
object is served. ``python -m dataloader_api.io.loopback --objects N --size
BYTES --latency SECONDS`` serves ``/{index}`` objects from another process
(for benchmarks) and prints its base URL; with ``--folder PATH``, that
folder's files as ``/{name}`` instead.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import random
import select
import selectors
import threading
from collections import defaultdict, deque
from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path

__all__ = [
    "Delay",
    "IgnoreRange",
    "LoopbackServer",
    "Redirect",
    "Replace",
    "Reset",
    "Status",
    "generated_object",
]

_PORTS_USED: set[int] = set()  # what this process's servers listened on
_CODES = set(HTTPStatus)


@dataclass(frozen=True)
class Status:
    """Reply with this status (and ``Retry-After`` when given) instead of the object."""

    code: int
    retry_after: float | None = None


@dataclass(frozen=True)
class Reset:
    """Send the headers and ``after`` bytes of the body, then reset the connection."""

    after: int = 0


@dataclass(frozen=True)
class Delay:
    """Reply ``seconds`` late (past a client's timeout, for instance)."""

    seconds: float


@dataclass(frozen=True)
class Redirect:
    """Reply ``code`` with ``Location: to`` (omitted when ``to`` is None)."""

    to: str | None
    code: int = 302


@dataclass(frozen=True)
class IgnoreRange:
    """Answer a range request with 200 and the whole object, as some servers do."""


@dataclass(frozen=True)
class Replace:
    """Answer with 200 and ``body`` in full, ranges ignored: the object changed."""

    body: bytes


Fault = Status | Reset | Delay | Redirect | IgnoreRange | Replace


def generated_object(index: int, size: int) -> bytes:
    """The bytes ``--objects`` serves at ``/{index}``: the index, then a fixed pattern."""
    head = index.to_bytes(8, "little")
    return head + bytes((i * 31 + 7) % 251 for i in range(max(0, size - 8)))


class LoopbackServer:
    """Serves ``objects`` (path -> bytes) on ``url``, from a thread of its own."""

    def __init__(
        self,
        objects: Mapping[str, bytes] | None = None,
        *,
        latency: float = 0.0,
        generate: tuple[int, int] | None = None,
        port: int = 0,
        close: bool = False,
        fault_rate: float = 0.0,
    ) -> None:
        self.objects = dict(objects or {})
        #: answer as HTTP/1.0 servers do: one reply per connection, then close it
        self.close = close
        #: send ETag and Last-Modified with each object (False: neither, as some servers)
        self.validators = True
        #: the share of requests (without a queued fault) answered 503, at random
        self.fault_rate = fault_rate
        self._random = random.Random(0)
        self.latency = latency
        self._generate = generate
        self._tail = generated_object(0, generate[1])[8:] if generate else b""
        self._faults: dict[str, deque[Fault]] = defaultdict(deque)
        #: requests per path, connections accepted, and each request's headers
        self.requests: dict[str, int] = defaultdict(int)
        self.connections = 0
        #: requests received and not yet answered, now and at most
        self.in_flight = 0
        self.peak_in_flight = 0
        self.headers_seen: list[dict[str, str]] = []
        self._open: set[_Protocol] = set()
        self._port = port
        self._loop = _new_loop()
        self._server: asyncio.base_events.Server | None = None
        self._thread = threading.Thread(target=self._run, name="loopback-http", daemon=True)
        self._started = threading.Event()
        self.url = ""

    @property
    def open_connections(self) -> int:
        """Client connections open now (closed ones leave on the server's thread)."""
        return len(self._open)

    def fail(self, path: str, *faults: Fault) -> None:
        """Queue ``faults`` for the next requests of ``path``."""
        self._loop.call_soon_threadsafe(self._faults[path].extend, faults)

    def start(self) -> LoopbackServer:
        self._thread.start()
        self._started.wait()
        return self

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server, port = self._loop.run_until_complete(self._listen())
        _wake_at_most_once(self._server)
        self.url = f"http://127.0.0.1:{port}"
        self._started.set()
        try:
            self._loop.run_forever()
        finally:
            self._loop.close()

    async def _listen(self) -> tuple[asyncio.Server, int]:
        """A port no server of this process had: clients keep what they learn of a
        host (``io/_host_limit.py``) by port, so a reused one carried an earlier
        test's limit into the next (16 requests at once where a new host gets 8)."""
        held: list[asyncio.Server] = []  # kept bound meanwhile: the kernel picks another
        while True:
            server = await self._loop.create_server(
                lambda: _Protocol(self), "127.0.0.1", self._port
            )
            port = server.sockets[0].getsockname()[1]
            if self._port or port not in _PORTS_USED or len(held) >= 64:
                break
            held.append(server)
        for earlier in held:
            earlier.close()
        _PORTS_USED.add(port)
        return server, port

    def stop(self) -> None:
        """Close the listening socket and every connection, then the loop."""
        if self._server is None or self._loop.is_closed() or not self._thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    async def _shutdown(self) -> None:
        assert self._server is not None
        self._server.close()
        await asyncio.sleep(0.05)  # connections being accepted finish (cancelled, they leak)
        for protocol in list(self._open):
            if protocol.transport is not None:
                protocol.transport.abort()
        abort_clients = getattr(self._server, "abort_clients", None)  # 3.13+
        if abort_clients is not None:
            abort_clients()  # also those accepted but never connected to a protocol
        current = asyncio.current_task()
        tasks = [t for t in asyncio.all_tasks() if t is not current]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.sleep(0.01)  # aborted transports close their sockets in callbacks

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def validators_of(self, path: str, body: bytes) -> str:
        """The ETag and Last-Modified header lines of an object (its whole body), as
        object stores send them with every reply (clients resuming a read, or
        checking a kept index, compare them): the ETag a hash of the content, so an
        object replaced by one of the same length has another; none when
        ``validators`` is False."""
        if not self.validators:
            return ""
        if self._generate is not None and path not in self.objects:
            tag = f"{path[1:]}-{len(body):x}"  # generated: the index and size say it all
        else:
            tag = hashlib.blake2b(body, digest_size=12).hexdigest()
        return f'ETag: "{tag}"\r\nLast-Modified: Thu, 01 Jan 2026 00:00:00 GMT\r\n'

    def body_of(self, path: str) -> bytes | None:
        if path in self.objects:
            return self.objects[path]
        if self._generate is not None and path[1:].isdigit():
            index = int(path[1:])
            if index < self._generate[0]:
                return index.to_bytes(8, "little") + self._tail
        return None


class _Protocol(asyncio.Protocol):
    def __init__(self, server: LoopbackServer) -> None:
        self.server = server
        self.buffer = b""
        self.transport: asyncio.Transport | None = None
        self.queue: deque[tuple[str, dict[str, str]]] = deque()
        self.busy = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.server.connections += 1
        self.server._open.add(self)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while b"\r\n\r\n" in self.buffer:
            head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            parts = lines[0].split(" ")
            path = parts[1] if len(parts) == 3 else "/"
            headers = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            self.queue.append((path, headers))
        self._next()

    def _next(self) -> None:
        if self.busy or not self.queue or self.transport is None:
            return
        self.busy = True
        path, headers = self.queue.popleft()
        server = self.server
        server.requests[path] += 1
        server.in_flight += 1
        server.peak_in_flight = max(server.peak_in_flight, server.in_flight)
        server.headers_seen.append(headers)
        faults = server._faults.get(path)
        fault = faults.popleft() if faults else None
        if fault is None and server.fault_rate and server._random.random() < server.fault_rate:
            fault = Status(503)
        delay = server.latency + (fault.seconds if isinstance(fault, Delay) else 0.0)
        if delay > 0:
            asyncio.get_running_loop().call_later(delay, self._reply, path, fault, headers)
        else:
            self._reply(path, fault, headers)

    def _reply(self, path: str, fault: Fault | None, headers: dict[str, str]) -> None:
        self.server.in_flight -= 1
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        if isinstance(fault, Status):
            extra = (
                f"Retry-After: {fault.retry_after:g}\r\n" if fault.retry_after is not None else ""
            )
            self._send(transport, fault.code, b"injected fault\n", extra)
            return
        if isinstance(fault, Redirect):
            extra = f"Location: {fault.to}\r\n" if fault.to is not None else ""
            self._send(transport, fault.code, b"moved\n", extra)
            return
        body = fault.body if isinstance(fault, Replace) else self.server.body_of(path)
        if body is None:
            self._send(transport, 404, b"no such object\n", "")
            return
        code, extra = 200, self.server.validators_of(path, body)
        first = _range_start(headers.get("range", ""))
        if first is not None and first < len(body) and not isinstance(fault, IgnoreRange | Replace):
            extra += f"Content-Range: bytes {first}-{len(body) - 1}/{len(body)}\r\n"
            code = 206
            body = body[first:]
        if isinstance(fault, Reset):
            transport.write(_head(code, len(body), extra))
            transport.write(body[: fault.after])
            transport.abort()
            return
        self._send(transport, code, body, extra)

    def _send(self, transport: asyncio.Transport, code: int, body: bytes, extra: str) -> None:
        if self.server.close:
            transport.writelines([_head(code, len(body), extra, "HTTP/1.0"), body])
            transport.close()
            return
        transport.writelines([_head(code, len(body), extra), body])
        self.busy = False
        self._next()

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        self.server._open.discard(self)


def _new_loop() -> asyncio.AbstractEventLoop:
    """An event loop whose timers fire to the microsecond where the system's
    default is epoll, which sleeps in whole milliseconds, rounded up: a 20 ms
    latency then came out 20 to 21 ms, later for clients whose requests arrive
    together (the loop sleeps until the timer) than for clients that trickle in
    (each arrival wakes it). Benchmarks compare clients against 20 ms exactly."""
    if not hasattr(selectors, "EpollSelector"):
        return asyncio.new_event_loop()
    return asyncio.SelectorEventLoop(_MicrosecondEpoll())


if hasattr(selectors, "EpollSelector"):  # Linux

    class _MicrosecondEpoll(selectors.EpollSelector):
        """epoll, slept on with select(), whose timeout is in microseconds: an epoll
        descriptor is readable when one of its descriptors is ready."""

        def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
            if timeout is not None and timeout > 0:
                try:
                    select.select([self.fileno()], [], [], timeout)
                except ValueError:
                    pass  # a descriptor past select()'s FD_SETSIZE: epoll's own timeout
                else:
                    timeout = 0
            return super().select(timeout)


def _wake_at_most_once(server: asyncio.Server) -> None:
    """asyncio's Server wakes its waiters when its last transport detaches after
    close(), and sets them to None. A transport accepted while the server closed
    (its accept cancelled) is detached again by its __del__ whenever the GC frees
    it, and a second wake-up raises "TypeError: 'NoneType' object is not
    iterable" from that __del__ (seen on 3.13t, where the GC clears the weak
    reference first). A second wake-up has nobody to wake: skip it."""
    wake = server._wakeup  # type: ignore[attr-defined]

    def wake_once() -> None:
        if server._waiters is not None:  # type: ignore[attr-defined]
            wake()

    server._wakeup = wake_once  # type: ignore[attr-defined]


def _range_start(value: str) -> int | None:
    """N of ``Range: bytes=N-`` (the only form clients here send)."""
    spec = value.strip().removeprefix("bytes=")
    first, dash, last = spec.partition("-")
    return int(first) if dash and first.isdigit() and not last else None


def _head(code: int, length: int, extra: str, version: str = "HTTP/1.1") -> bytes:
    reason = HTTPStatus(code).phrase if code in _CODES else "Status"
    return (
        f"{version} {code} {reason}\r\nContent-Length: {length}\r\n"
        f"Content-Type: application/octet-stream\r\n{extra}\r\n"
    ).encode("latin-1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--size", type=int, default=100 * 1024)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--close", action="store_true", help="one reply per connection")
    parser.add_argument("--fault-rate", type=float, default=0.0, help="share answered 503")
    parser.add_argument("--folder", default=None, help="serve this folder's files as /NAME")
    args = parser.parse_args()
    files = Path(args.folder).iterdir() if args.folder else ()
    server = LoopbackServer(
        {f"/{file.name}": file.read_bytes() for file in files if file.is_file()},
        latency=args.latency,
        generate=None if args.folder else (args.objects, args.size),
        port=args.port,
        close=args.close,
        fault_rate=args.fault_rate,
    ).start()
    print(server.url, flush=True)
    try:
        server._thread.join()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
