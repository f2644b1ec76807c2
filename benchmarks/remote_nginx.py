"""Workload 10g: the HTTP reads against nginx (issue 46), a server nobody here
wrote: Debian's nginx 1.22 with its echo module holding each reply 20 ms
(``nginx_server.py``), objects of 100 KiB, read in turns by the loader with the
rust backend's native reads, the loader with the reference's reads (threads)
and curl ``--parallel`` (the reference client in C), 64 in flight.

Three sites of one nginx: keep-alive (10a's shape), closing every connection
(10d's), and a latency tail: keep-alive with every 64th reply (1.6 %) held 1 s,
read with the window opened to the whole epoch (``prefetch_factor=32``) so
that in-order delivery is not what limits. Without nginx (no ``apt-get`` or no
Debian mirror) the table is left out with the reason printed.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import remote
from measure import Entry, Table, rates_table
from nginx_server import Nginx, Site

from dataloader_api.io import HttpDataset

#: objects per site at scale 1 (each site is read by every client, in turns)
OBJECTS = 2_000
#: every this many-th item is held 1 s on the tail site
TAIL_EVERY = 64
SITES = {
    "nginx keep-alive": Site(),
    "nginx closing": Site(keepalive=False),
    "nginx keep-alive, 1.6 % 1 s tail": Site(),
}


def urls_of(base: str, count: int, tail: bool) -> list[str]:
    return [
        f"{base}/tail/{i}" if tail and i % TAIL_EVERY == TAIL_EVERY // 2 else f"{base}/{i}"
        for i in range(count)
    ]


def clients(name: str, urls: list[str], names: list[str]) -> list[Entry]:
    """The loader's rows on the backends asked for, then curl's, each labelled
    with its site (report.py finds the rows by these labels)."""
    options = {
        "max_concurrency": remote.CONCURRENCY,
        "prefetch_factor": 32 if "tail" in name else 4,
    }
    rows: list[Entry | None] = []
    if "rust" in names:
        rows.append(remote.ours(HttpDataset(urls), "rust", 2, "native reads", **options))
    if "threads" in names:
        rows.append(remote.ours(HttpDataset(urls), "threads", 2, "reference reads", **options))
    rows.append(remote.curl_client(urls, remote.CONCURRENCY))
    return [Entry(f"{name}: {r.label}", r.epoch, r.workers) for r in rows if r is not None]


def nginx(s: Any) -> list[Table]:
    objects = OBJECTS // s.scale
    try:
        server = Nginx(objects, remote.SIZE, SITES)
    except (subprocess.CalledProcessError, RuntimeError, OSError) as error:
        detail = getattr(error, "stderr", "") or error
        print(f"10g: nginx could not be provisioned or started, its table is missing: {detail}",
              file=sys.stderr)  # fmt: skip
        return []
    try:
        entries: list[Entry | None] = []
        for name, base in server.urls.items():
            entries += clients(name, urls_of(base, objects, "tail" in name), s.names)
        title = (
            f"10g. HTTP from nginx 1.22 (Debian, echo module): {objects} objects of "
            f"{remote.SIZE // 1024} KiB per site, {remote.LATENCY * 1e3:g} ms per reply, "
            f"batch 32, 2 workers, {remote.CONCURRENCY} in flight at most"
        )
        ideal = [remote.CONCURRENCY / remote.LATENCY] * s.runs
        label = f"ideal ({remote.CONCURRENCY} in flight / {remote.LATENCY * 1e3:g} ms)"
        return [rates_table("http_nginx", "remote", title, entries, s.runs, (label, ideal))]
    finally:
        server.stop()
