"""Workload 10d's server (and ``http_closing.py``'s): HTTP/1.0, one request
per connection, each reply ``--latency`` seconds (give or take up to
``--spread``, uniformly) after its request arrived, serving ``/{index}``
objects as the loopback server generates them. Prints its URL.

Written on epoll directly rather than on asyncio, as a production server's
event loop is: the loopback server (``dataloader_api.io.loopback --close``)
spends about 0.35 ms of one Python thread per connection (a Task per accept,
eight callbacks), so near 3,200 connections/s it is the bound, for curl as
for us (see benchmarks/README.md, "Workload 10d taken apart"). Here a connection
is an accept, a read, a timer in a heap and a send.

The spread: replies that all take exactly 20 ms keep 64 transfers in lockstep,
so a client with one thread (curl, an asyncio loop) meets 64 replies at once
and connects again late; a spread of 1 ms either way breaks up the convoy and
leaves the mean, and so the latency-bound ideal, as it is.

With ``--processes N``, N processes accept on one listening socket, as nginx's
or gunicorn's workers do; the others exit when the first does.

    python benchmarks/closing_server.py --objects N --size BYTES --latency SECONDS \
        [--spread SECONDS] [--processes N]
"""

from __future__ import annotations

import argparse
import contextlib
import heapq
import itertools
import os
import random
import select
import socket
import time

from dataloader_api.io.loopback import generated_object

_HEAD = (
    "HTTP/1.0 {code} {reason}\r\nContent-Length: {length}\r\n"
    "Content-Type: application/octet-stream\r\n\r\n"
)


class ClosingServer:
    """Serves ``objects`` generated objects of ``size`` bytes on ``url``."""

    def __init__(self, objects: int, size: int, latency: float, spread: float = 0.0) -> None:
        self.objects, self.latency, self.spread = objects, latency, spread
        self._tail = generated_object(0, size)[8:]
        self._ok = _HEAD.format(code=200, reason="OK", length=size).encode()
        missing = b"no such object\n"
        self._missing = _HEAD.format(code=404, reason="Not Found", length=len(missing)).encode()
        self._missing += missing
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(1024)
        self._listener.setblocking(False)
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._poll: select.epoll  # each process makes its own, in serve_forever
        #: connections by descriptor: reading their request, or writing what is left
        self._reading: dict[int, tuple[socket.socket, bytes]] = {}
        self._writing: dict[int, tuple[socket.socket, memoryview]] = {}
        #: (when, arrival, connection, reply): a heap, the next reply first
        self._due: list[tuple[float, int, socket.socket, list[bytes]]] = []
        self._arrivals = itertools.count()
        self._random = random.Random()

    def serve_forever(self, parent: int | None = None) -> None:
        """Serve until killed or, given ``parent`` (a pipe's read end), until the
        process holding its write end exits."""
        self._poll = select.epoll()
        self._random.seed(os.getpid())  # each process its own spread
        # EPOLLEXCLUSIVE: a connection wakes one of the processes, not all.
        self._poll.register(self._listener, select.EPOLLIN | select.EPOLLEXCLUSIVE)
        if parent is not None:
            self._poll.register(parent, select.EPOLLIN)
        while True:
            for fd, _ in self._wait():
                if fd == parent:
                    return
                if fd == self._listener.fileno():
                    self._accept()
                elif fd in self._reading:
                    self._read(fd)
                elif fd in self._writing:
                    self._write(fd)
            now = time.monotonic()
            while self._due and self._due[0][0] <= now:
                _, _, connection, reply = heapq.heappop(self._due)
                self._send(connection, reply)

    def _wait(self) -> list[tuple[int, int]]:
        """Ready descriptors, by the first reply's time to the microsecond: epoll's
        own timeout is in whole milliseconds, rounded up (20 ms would be 20-21)."""
        if not self._due:
            return self._poll.poll()
        timeout = self._due[0][0] - time.monotonic()
        if timeout > 0:
            select.select([self._poll], [], [], timeout)
        return self._poll.poll(0)

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except BlockingIOError:
                return
            connection.setblocking(False)
            # As asyncio and most servers do: without it, Nagle holds the reply's
            # last segment until the client ACKs the first (delayed ACKs: 40 ms).
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._reading[connection.fileno()] = (connection, b"")
            self._poll.register(connection, select.EPOLLIN)

    def _read(self, fd: int) -> None:
        connection, received = self._reading[fd]
        try:
            data = connection.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:  # the client left before its request was complete
            self._close(fd, self._reading.pop(fd)[0])
            return
        received += data
        if b"\r\n\r\n" not in received:
            self._reading[fd] = (connection, received)
            return
        del self._reading[fd]
        self._poll.unregister(fd)
        parts = received.split(b"\r\n", 1)[0].split(b" ")
        path = parts[1] if len(parts) == 3 else b"/"
        index = int(path[1:]) if path[1:].isdigit() else -1
        if 0 <= index < self.objects:
            reply = [self._ok, index.to_bytes(8, "little"), self._tail]
        else:
            reply = [self._missing]
        late = self.latency + self._random.uniform(-self.spread, self.spread)
        heapq.heappush(
            self._due, (time.monotonic() + late, next(self._arrivals), connection, reply)
        )

    def _send(self, connection: socket.socket, reply: list[bytes]) -> None:
        try:
            sent = connection.sendmsg(reply)
        except BlockingIOError:
            sent = 0
        except OSError:  # reset by the client: nothing left to tell it
            connection.close()
            return
        if sent == sum(map(len, reply)):
            connection.close()
            return
        self._writing[connection.fileno()] = (connection, memoryview(b"".join(reply))[sent:])
        self._poll.register(connection, select.EPOLLOUT)

    def _write(self, fd: int) -> None:
        connection, left = self._writing[fd]
        try:
            sent = connection.send(left)
        except BlockingIOError:
            return
        except OSError:
            sent = len(left)  # reset by the client: drop the rest
        if sent < len(left):
            self._writing[fd] = (connection, left[sent:])
            return
        self._close(fd, self._writing.pop(fd)[0])

    def _close(self, fd: int, connection: socket.socket) -> None:
        self._poll.unregister(fd)
        connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--size", type=int, default=100 * 1024)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--spread", type=float, default=0.0, help="+- on each latency")
    parser.add_argument("--processes", type=int, default=1, help="accepting on one socket")
    args = parser.parse_args()
    if args.processes < 1:
        parser.error(f"--processes must be at least 1, not {args.processes!r}")
    if not 0 <= args.spread <= args.latency:
        parser.error(
            f"--spread must be from 0 to --latency ({args.latency!r}), not {args.spread!r}"
        )
    server = ClosingServer(args.objects, args.size, args.latency, args.spread)
    parent, alive = os.pipe()  # its read end sees EOF when this process exits
    for _ in range(args.processes - 1):
        if os.fork() == 0:
            os.close(alive)
            try:
                server.serve_forever(parent)
            finally:
                os._exit(0)
    os.close(parent)
    print(server.url, flush=True)  # once every process is there to accept
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()


if __name__ == "__main__":
    main()
