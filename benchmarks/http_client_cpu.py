"""The client's CPU time per item (issue 46): the rust backend's native reader
alone (no loader) against curl ``--parallel`` (its CPU time as a child), 64 in
flight, from nginx (``nginx_server.py``) keep-alive and closing every
connection, replies after 2 ms, objects of 100 KiB; with the reader's minor page
faults per item (this process's ``ru_minflt``). CPU time, not wall time: a busy
machine moves it little.

    python benchmarks/http_client_cpu.py [rounds] [objects]   # venv with the rust backend
"""

from __future__ import annotations

import resource
import sys
import time

import remote
from http_keepalive import native_reader
from nginx_server import Nginx, Site


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main(rounds: int, objects: int) -> None:
    sites = {
        "closing every connection": Site(latency=0.002, keepalive=False),
        "keep-alive": Site(latency=0.002),
    }
    server = Nginx(objects, remote.SIZE, sites)
    print("| nginx site | client | CPU per item, µs (each round) | minor faults per item |")
    print("|---|---|---|---:|")
    try:
        for site, base in server.urls.items():
            urls = [f"{base}/{i}" for i in range(objects)]
            epoch = native_reader(urls)
            epoch()  # connections and buffers as in a steady run
            cpu, faults = [], []
            for _ in range(rounds):
                before, started = resource.getrusage(resource.RUSAGE_SELF), time.process_time()
                epoch()
                cpu.append((time.process_time() - started) / objects * 1e6)
                faults.append((resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                               - before.ru_minflt) / objects)  # fmt: skip
            shown = ", ".join(f"{c:.0f}" for c in cpu)
            print(f"| {site} | native reader | {shown} | {max(faults):.1f} |")
            curl = remote.curl_client(urls, remote.CONCURRENCY)
            if curl is None:
                continue
            spent = []
            for _ in range(rounds):
                before_cpu = children_cpu()
                curl.epoch()
                spent.append((children_cpu() - before_cpu) / objects * 1e6)
            print(f"| {site} | curl --parallel | {', '.join(f'{c:.0f}' for c in spent)} | |")
    finally:
        server.stop()


if __name__ == "__main__":
    main(
        int(sys.argv[1]) if len(sys.argv) > 1 else 3,
        int(sys.argv[2]) if len(sys.argv) > 2 else 2_000,
    )
