"""The per-host limit against loopback servers made here (issue 46), on the
reference's reads and the native ones: a latency tail does not halve the
requests in flight, a small-backlog server drops no connect once the limit has
settled, and a new dataset starts at the limit learned. Nothing is timed: the
servers count requests in flight and the kernel counts dropped connects."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from rawserver import RawServer

from dataloader_api import DataLoader
from dataloader_api.io import HttpDataset

CEILING = 16
TAILS = {5, 70, 150}  # items answered 1 s late (1.6 %)
# The rest in 100 ms: a wave of 16 requests arrives well within one reply, also on a
# loaded machine, and 1 s is still past 8 times the typical reply (the old rule's too).
FAST = 0.1


class TailServer:
    """Counts the requests in flight as each arrives, and whether a tail reply
    had been sent by then."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.in_flight = 0
        self.tail_sent = False
        self.arrivals: list[tuple[bool, int]] = []  # (after a tail reply, in flight)

    def reply(self, head: bytes) -> list[bytes]:
        item = int(head.split(b" ")[1].rsplit(b"/", 1)[1])
        with self.lock:
            self.in_flight += 1
            self.arrivals.append((self.tail_sent, self.in_flight))
        time.sleep(1.0 if item in TAILS else FAST)
        with self.lock:
            self.in_flight -= 1
            self.tail_sent |= item in TAILS
        body = item.to_bytes(4, "little") * 100
        head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        return [head.encode() + body]


def epoch(url: str, count: int, backend: str) -> list[bytes]:
    data = HttpDataset(url + "/{i}", columns={"i": list(range(count))}, max_connections=CEILING)
    loader = DataLoader(data, batch_size=CEILING, num_workers=2, prefetch_factor=4,
                        backend=backend, collate_fn=list)  # fmt: skip
    return [item for batch in loader for item in batch]


def test_a_latency_tail_does_not_halve_the_requests_in_flight(reads):
    server = TailServer()
    with RawServer(server.reply) as raw:
        got = epoch(raw.url, 192, reads)
        assert got == [i.to_bytes(4, "little") * 100 for i in range(192)]
        after = [n for tail_sent, n in server.arrivals if tail_sent]
        # Halved on the 1 s replies (the old rule), at most 8 then one more a round.
        assert max(after) == CEILING
        server.arrivals.clear()
        epoch(raw.url, 2 * CEILING, reads)  # a new dataset: at the limit learned, not at 8
        assert max(n for _, n in server.arrivals[:CEILING]) == CEILING


# Run in a network namespace of its own, so that the kernel's count of the
# connects a listener dropped (TcpExt ListenOverflows) is this server's alone.
_SMALL_BACKLOG = r"""
import socket, subprocess, sys, threading, time
from dataloader_api import DataLoader
from dataloader_api.io import HttpDataset

subprocess.run(["ip", "link", "set", "lo", "up"], check=True)

def overflows():
    lines = [line.split() for line in open("/proc/net/netstat") if line.startswith("TcpExt:")]
    return int(lines[1][lines[0].index("ListenOverflows")])

# As Python's http.server: one connection at a time, here behind a backlog of 1
# (2 waiting connections; 3 in all). The next connection is taken from the queue
# before a reply goes, so a client holding 3 never finds the queue full.
listener = socket.create_server(("127.0.0.1", 0), backlog=1)
port = listener.getsockname()[1]

def serve():
    connection = listener.accept()[0]
    while True:
        head = b""
        while b"\r\n\r\n" not in head:
            head += connection.recv(65536)
        time.sleep(0.01)
        listener.setblocking(False)
        try:
            following = listener.accept()[0]
        except BlockingIOError:
            following = None
        listener.setblocking(True)
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        connection.close()
        connection = following if following is not None else listener.accept()[0]
        connection.setblocking(True)

threading.Thread(target=serve, daemon=True).start()
drops = []
for count in (150, 100):  # the first dataset learns the limit, the second starts at it
    data = HttpDataset(f"http://127.0.0.1:{port}/{{i}}", columns={"i": list(range(count))})
    before = overflows()
    loader = DataLoader(data, batch_size=16, num_workers=2, backend=sys.argv[1], collate_fn=list)
    assert sum(len(batch) for batch in loader) == count
    drops.append(overflows() - before)
print(drops)
"""


def test_a_small_backlog_drops_no_connect_once_the_limit_has_settled(reads):
    unshare = shutil.which("unshare")
    if unshare is None or subprocess.run([unshare, "-n", "true"]).returncode != 0:
        pytest.skip("needs a network namespace of its own (unshare -n: root)")
    if shutil.which("ip") is None:
        pytest.skip("needs ip(8) to bring the namespace's loopback up")
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": root}
    done = subprocess.run([unshare, "-n", sys.executable, "-c", _SMALL_BACKLOG, reads],
                          env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    first, second = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    assert first > 0  # the server does drop past its backlog: the limit had to learn it
    # The second dataset starts at the limit learned. A connect that races the
    # server's close can still overflow its queue of 2 now and then on a loaded
    # machine (1 of 100 seen in CI on 3.13t), never the first dataset's dozens.
    assert second * 5 <= first, (first, second)
