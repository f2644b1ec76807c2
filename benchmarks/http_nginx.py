"""nginx as the server of the HTTP workloads (issue 46): Debian's nginx 1.22
with its echo module holding each reply 20 ms (``nginx_server.py``), 2,000
objects of 100 KiB, against the same server in turns (``measure.rates_table``):
the loader with the rust backend's native reads, its native reader alone, and
curl ``--parallel`` (the reference client in C), 64 in flight.

Servers: keep-alive (10a's shape), closing every connection (10d's), and a
latency tail: keep-alive with every 64th item (1.6 %) held 1 s, read with the
window opened to the whole epoch (``prefetch_factor=32``) so that in-order
delivery is not what limits. Prints a Markdown table against 64 / 20 ms; the
machine's other load shows in every row alike, so compare rows of one run.

    python benchmarks/http_nginx.py [rounds]   # in a venv with the rust backend
"""

from __future__ import annotations

import sys

import remote
import render
from http_keepalive import native_reader
from measure import Entry, rates_table
from nginx_server import Nginx, Site

from dataloader_api.io import HttpDataset

OBJECTS = 2_000
TAIL_EVERY = 64
SITES = {
    "nginx keep-alive": Site(),
    "nginx closing": Site(keepalive=False),
    "nginx keep-alive, 1.6 % 1 s tail": Site(),
}


def urls_of(base: str, tail: bool) -> list[str]:
    return [
        f"{base}/tail/{i}" if tail and i % TAIL_EVERY == TAIL_EVERY // 2 else f"{base}/{i}"
        for i in range(OBJECTS)
    ]


def main(rounds: int) -> None:
    server = Nginx(OBJECTS, remote.SIZE, SITES)
    entries: list[Entry | None] = []
    try:
        for name, base in server.urls.items():
            urls = urls_of(base, "tail" in name)
            prefetch = 32 if "tail" in name else 4
            options = {"max_concurrency": remote.CONCURRENCY, "prefetch_factor": prefetch}
            loader = remote.ours(HttpDataset(urls), "rust", 2, "loader, native reads", **options)
            clients = [
                loader,
                Entry("native reader, no loader", native_reader(urls), 0),
                remote.curl_client(urls, remote.CONCURRENCY),
            ]
            for client in filter(None, clients):
                entries.append(Entry(f"{name}: {client.label}", client.epoch, client.workers))
        ideal = [remote.CONCURRENCY / remote.LATENCY] * rounds
        label = f"ideal ({remote.CONCURRENCY} in flight / {remote.LATENCY * 1e3:g} ms)"
        title = f"nginx 1.22 (Debian, echo module): {OBJECTS} objects of 100 KiB, 20 ms per reply"
        table = rates_table("http_nginx", "remote", title, entries, rounds, (label, ideal))
    finally:
        server.stop()
    print("\n".join(render.lines(table)))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
