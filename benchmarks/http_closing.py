"""Workload 10d's closing server, taken apart: how much of the shortfall is the
server's, and how much the clients'.

Four servers at once, each closing every connection (HTTP/1.0), 4,000 objects
of 100 KiB, 20 ms per reply: 10d's own (the loopback server's ``--close``: asyncio,
one thread) and ``closing_server.py`` (epoll) in one process, in two, and in two
with each reply 19-21 ms late (``--spread``; the mean, and so the ideal, stay).
Against each, in turns for ``rounds`` rounds (``measure.rates_table``): the rust
backend's native reader alone (no loader), curl ``--parallel``, and the bare
asyncio client (the reference's). Each label ends with the server's CPU time per
request, all its processes, median over the rounds. Prints a Markdown table
against 64 / 20 ms.

    python benchmarks/http_closing.py [rounds]   # in a venv with the rust backend
"""

from __future__ import annotations

import statistics
import subprocess
import sys
from pathlib import Path

import remote
import render
from http_keepalive import native_reader
from measure import Entry, rates_table

OBJECTS = 4_000
CLOSING = remote.CLOSING
SERVERS = {
    "asyncio, 1 thread (10d's)": ("--close",),
    "epoll, 1 process": (CLOSING,),
    "epoll, 2 processes": (CLOSING, "--processes", "2"),
    "epoll, 2 processes, 20 ± 1 ms": (CLOSING, "--processes", "2", "--spread", "0.001"),
}


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of ``pid`` and its children (the forked servers)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return sum(remote.cpu_seconds(p) for p in [pid, *map(int, children)])


def with_server_cpu(entry: Entry, pid: int, into: list[float]) -> Entry:
    """``entry``, recording the server's CPU seconds per item of each epoch."""
    epoch = entry.epoch

    def measured() -> int:
        before = cpu_seconds(pid)
        items = epoch()
        into.append((cpu_seconds(pid) - before) / items)
        return items

    return Entry(entry.label, measured, entry.workers)


def main(rounds: int) -> None:
    processes: list[subprocess.Popen[str]] = []
    entries: list[Entry | None] = []
    cpu: dict[str, list[float]] = {}
    try:
        for server, options in SERVERS.items():
            process, base = remote.start_server(OBJECTS, *options)
            processes.append(process)
            urls = [f"{base}/{i}" for i in range(OBJECTS)]
            clients = [
                Entry("native reader, no loader", native_reader(urls), 0),
                remote.curl_client(urls, remote.CONCURRENCY),
                remote.bare_client(urls, remote.CONCURRENCY),
            ]
            for client in filter(None, clients):
                label = f"{server}: {client.label}"
                client = Entry(label, client.epoch, client.workers)
                entries.append(with_server_cpu(client, process.pid, cpu.setdefault(label, [])))
        ideal = [remote.CONCURRENCY / remote.LATENCY] * rounds
        latency = f"{remote.LATENCY * 1e3:g} ms"
        label = f"ideal ({remote.CONCURRENCY} in flight / {latency})"
        size = f"{remote.SIZE // 1024} KiB"
        title = f"10d taken apart: {OBJECTS} objects of {size}, {latency} per reply"
        table = rates_table("http_closing", "remote", title, entries, rounds, (label, ideal))
    finally:
        for process in processes:
            process.terminate()
            process.wait(10)
    for row in table.rows:
        if cpu.get(row["label"]):
            row["label"] += f" (server {statistics.median(cpu[row['label']]) * 1e6:.0f} µs/req)"
    print("\n".join(render.lines(table)))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
