"""Workload 10a's keep-alive server, taken apart: where native reads lose to
the reference's at 64 in flight.

Rows, in turns for ``rounds`` rounds against one server (``remote.start_server``,
10 000 objects of 100 KiB, 20 ms per reply): the rust backend's loader with
native reads and with the reference's, the native reader alone (no loader: 313
jobs of 32 started at once, then waited for in order), and the bare asyncio
client. Prints each row's rates and median as a share of 64 / 20 ms.

    python benchmarks/http_keepalive.py [rounds]   # in a venv with the rust backend
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable

import remote

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
        rows: dict[str, Callable[[], int]] = {
            "loader, native reads": remote.ours(HttpDataset(urls), "rust", 2, "", **options).epoch,
            "loader, the reference's reads": remote.reference_reads(
                remote.ours(HttpDataset(urls), "rust", 2, "", **options)
            ).epoch,
            "native reader, no loader": native_reader(urls),
            "bare asyncio client, no loader": remote.bare_client(urls, remote.CONCURRENCY).epoch,
        }
        for epoch in rows.values():
            epoch()  # warm: connections made, pools filled
        rates: dict[str, list[float]] = {label: [] for label in rows}
        for _ in range(rounds):
            for label, epoch in rows.items():
                start = time.perf_counter()
                items = epoch()
                rates[label].append(items / (time.perf_counter() - start))
        ideal = remote.CONCURRENCY / remote.LATENCY
        for label, taken in rates.items():
            median = statistics.median(taken)
            shown = " ".join(f"{r:,.0f}" for r in taken)
            print(f"{label:32} {median:7,.0f} items/s  {median / ideal:4.0%}  ({shown})")
    finally:
        process.terminate()
        process.wait(10)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
