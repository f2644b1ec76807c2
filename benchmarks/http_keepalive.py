"""Workload 10a's keep-alive server, taken apart: native reads against
the reference's at 64 in flight.

Rows, in turns for ``rounds`` rounds against one server (``remote.start_server``,
10 000 objects of 100 KiB, 20 ms per reply): the rust backend's loader with
native reads and with the reference's, the native reader alone (no loader: 313
jobs of 32 started at once, then waited for in order), and the bare asyncio
client. Prints the rows as a Markdown table (``render.lines``), each against
the latency-bound ideal of 64 / 20 ms.

    python benchmarks/http_keepalive.py [rounds]   # in a venv with the rust backend
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import remote
import render
from measure import Entry, rates_table

from dataloader_api.io import HttpDataset

OBJECTS = 10_000


def native_reader(urls: list[str]) -> Callable[[], int]:
    """The rust backend's reader with no loader around it."""
    import dataloader_rust

    reader = dataloader_rust.NativeReader(HttpDataset(urls).reader_spec(), remote.CONCURRENCY)
    cancel = reader.new_cancel()
    jobs = [[u.encode() for u in urls[i : i + 32]] for i in range(0, len(urls), 32)]

    def epoch() -> int:
        started = [reader.start(job, cancel) for job in jobs]
        return sum(len(pending.wait()) for pending in started)

    return epoch


def main(rounds: int) -> None:
    process, base = remote.start_server(OBJECTS)
    try:
        urls = [f"{base}/{i}" for i in range(OBJECTS)]
        options = {"max_concurrency": remote.CONCURRENCY, "prefetch_factor": 4}
        rows = [
            remote.ours(HttpDataset(urls), "rust", 2, "loader, native reads", **options),
            remote.reference_reads(
                remote.ours(
                    HttpDataset(urls), "rust", 2, "loader, the reference's reads", **options
                )
            ),
            Entry("native reader, no loader", native_reader(urls), 0),
            remote.bare_client(urls, remote.CONCURRENCY),
        ]
        ideal = [remote.CONCURRENCY / remote.LATENCY] * rounds
        latency = f"{remote.LATENCY * 1e3:g} ms"
        label = f"ideal ({remote.CONCURRENCY} in flight / {latency})"
        size = f"{remote.SIZE // 1024} KiB"
        title = f"10a taken apart: {OBJECTS} objects of {size}, {latency} per reply"
        table = rates_table("http_keepalive", "remote", title, rows, rounds, (label, ideal))
        print("\n".join(render.lines(table)))
    finally:
        process.terminate()
        process.wait(10)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
