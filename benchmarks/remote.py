"""Workload 10: bytes over HTTP from a loopback server with injected latency,
and from local files, through ``dataloader_api.io`` against ``urllib`` or
``open()`` in ``__getitem__`` under torch's DataLoader and dataloader-rs.

The server runs in another process (``python -m dataloader_api.io.loopback``)
so that its work does not share our interpreter's lock; it still shares the
machine's cores with the loaders.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import peers
from measure import Entry, Table, rates_table, timed_row

from dataloader_api import DataLoader
from dataloader_api.io import FileDataset, HttpDataset

SIZE = 100 * 1024
LATENCY = 0.020
CONCURRENCY = 64


def identity(batch: Any) -> Any:
    return batch


class UrlGet:
    """What a user writes today: one blocking ``urllib`` GET per ``__getitem__``
    (a keep-alive opener per process would need a third-party client)."""

    def __init__(self, urls: list[str]) -> None:
        super().__init__()  # dataloader-rs's PyDataset needs its __init__
        self.urls = urls
        self.args: tuple[Any, ...] = (urls,)

    def __len__(self) -> int:
        return len(self.urls)

    def __getitem__(self, index: int) -> bytes:
        with urllib.request.urlopen(self.urls[index], timeout=30) as response:
            return response.read()  # type: ignore[no-any-return]


class UrlGetRetrying(UrlGet):
    """``UrlGet`` with the retry loop a user adds for 5xx replies (urllib has none):
    up to 5 attempts, 10 ms apart, as the loaders' retry policy here."""

    def __getitem__(self, index: int) -> bytes:
        for attempt in range(5):
            try:
                return super().__getitem__(index)
            except urllib.error.HTTPError as error:
                if error.code < 500 or attempt == 4:
                    raise
                time.sleep(0.01)
        raise AssertionError("unreachable")


class OpenRead(UrlGet):
    """``open(path, "rb").read()`` in ``__getitem__``."""

    def __getitem__(self, index: int) -> bytes:
        with open(self.urls[index], "rb") as file:
            return file.read()


def start_server(objects: int, *extra: str) -> tuple[subprocess.Popen[str], str]:
    """The loopback server (or ``extra[0]`` when it is a script path) in a process."""
    script = ["-m", "dataloader_api.io.loopback"]
    if extra and extra[0].endswith(".py"):
        script, extra = [extra[0]], extra[1:]
    process = subprocess.Popen(
        [sys.executable, *script, "--objects", str(objects), "--size", str(SIZE),
         "--latency", str(LATENCY), *extra],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def ours(dataset: Any, name: str, workers: int, what: str, **kw: Any) -> Entry:
    loader = DataLoader(dataset, batch_size=32, num_workers=workers, backend=name,
                        persistent_workers=True, collate_fn=identity, **kw)  # fmt: skip
    return Entry(f"{what}: {name}, {workers} workers", _count(loader), workers)


def bare_client(urls: list[str], connections: int) -> Entry:
    """The server's own ceiling: no loader, ``connections`` asyncio tasks each
    getting its share of the URLs one after another (the reference's HTTP client)."""
    import asyncio

    from dataloader_api.io import RetryPolicy
    from dataloader_api.io._http_client import Counters, HttpClient

    async def run() -> int:
        client = HttpClient(timeout=30, retry=RetryPolicy(), max_bytes=None,
                            max_connections=connections, counters=Counters())  # fmt: skip

        async def task(first: int) -> int:
            return sum([len(await client.get(url, i)) > 0
                        for i, url in enumerate(urls[first::connections])])  # fmt: skip

        try:
            return sum(await asyncio.gather(*(task(k) for k in range(connections))))
        finally:
            client.close()

    return Entry(
        f"bare asyncio client, {connections} connections, no loader", lambda: asyncio.run(run()), 0
    )


def thread_pool_client(urls: list[str], threads: int) -> Entry:
    """What a user writes without a loader: ``urllib`` GETs (retrying 5xx) on a
    ``ThreadPoolExecutor`` of ``threads``: few connections at once, so a server
    with a small listen backlog drops none."""
    from concurrent.futures import ThreadPoolExecutor

    get = UrlGetRetrying(urls)

    def epoch() -> int:
        with ThreadPoolExecutor(threads) as pool:
            return sum(len(body) > 0 for body in pool.map(get.__getitem__, range(len(urls))))

    return Entry(f"urllib, {threads} threads, no loader", epoch, 0)


def curl_client(urls: list[str], transfers: int) -> Entry | None:
    """A client in C, no loader: curl with ``transfers`` at once, connections
    opened at once (``--parallel --parallel-immediate``, curl's own way to fetch
    many URLs); None without a curl that has them (7.68 or later)."""
    curl = shutil.which("curl")
    options = (
        subprocess.run([curl, "--help", "all"], capture_output=True, text=True).stdout
        if curl
        else ""
    )
    if curl is None or "--parallel-immediate" not in options:
        print("curl 7.68 or later is not on PATH: its rows are missing", file=sys.stderr)
        return None
    config = "".join(f'url = "{url}"\noutput = "/dev/null"\n' for url in urls)
    command = [curl, "--silent", "--parallel", "--parallel-immediate", "--parallel-max",
               str(transfers), "--write-out", "%{http_code}\\n", "--config", "-"]  # fmt: skip

    def epoch() -> int:
        done = subprocess.run(command, input=config, capture_output=True, text=True, check=True)
        codes = done.stdout.split()
        if codes.count("200") != len(urls):  # a rate is only for every item read
            raise RuntimeError(f"curl: {len(urls)} URLs, replies {sorted(set(codes))}")
        return len(urls)

    return Entry(f"curl --parallel, {transfers} transfers, no loader", epoch, 0)


def reference_reads(entry: Entry) -> Entry:
    """``entry`` with the rust backend's native reads turned off: the reference's."""
    epoch = entry.epoch

    def with_reference() -> int:
        os.environ["DATALOADER_NATIVE_IO"] = "0"
        try:
            return epoch()
        finally:
            del os.environ["DATALOADER_NATIVE_IO"]

    return Entry(entry.label, with_reference, entry.workers)


def _count(loader: Any) -> Any:
    def epoch() -> int:
        return sum(len(batch) for batch in loader)

    return epoch


def _peer_rows(dataset: Any, workers: list[int], what: str) -> list[Entry | None]:
    entries: list[Entry | None] = []
    for count in workers:
        torch = peers.torch_entry(dataset, count, 32, collate_fn=identity)
        if torch is not None:
            torch.label = f"{what}: {torch.label}"
        entries.append(torch)
    rs = peers.rs_entry(dataset, 2, 32, identity)
    if rs is not None:
        rs.label = f"{what}: {rs.label}"
    return [*entries, rs]


def http(s: Any) -> Table:
    objects = 10_000 // s.scale
    process, base = start_server(objects)
    try:
        urls = [f"{base}/{i}" for i in range(objects)]
        entries: list[Entry | None] = [
            ours(
                HttpDataset(urls),
                name,
                2,
                f"HttpDataset, max_concurrency={CONCURRENCY}",
                max_concurrency=CONCURRENCY,
                prefetch_factor=4,
            )
            for name in s.names
        ]
        if "rust" in s.names:
            entries.append(reference_reads(ours(HttpDataset(urls), "rust", 2,
                "HttpDataset, reference reads", max_concurrency=CONCURRENCY,
                prefetch_factor=4)))  # fmt: skip
        entries += [bare_client(urls, CONCURRENCY), curl_client(urls, CONCURRENCY)]
        # One at a time per worker: 50 items/s each, so fewer objects keep epochs short.
        slow = UrlGet(urls[: max(64, objects // 10)])
        entries += _peer_rows(slow, [2, 16], "urllib in __getitem__")
        title = (
            f"10a. HTTP: {objects} objects of {SIZE // 1024} KiB from a loopback server "
            f"with {LATENCY * 1e3:g} ms latency per request, batch 32"
        )
        ideal = [CONCURRENCY / LATENCY] * s.runs
        reference = (f"ideal ({CONCURRENCY} in flight / {LATENCY * 1e3:g} ms)", ideal)
        return rates_table("http", "remote", title, entries, s.runs, reference)
    finally:
        process.terminate()
        process.wait(10)


def _drop_page_cache() -> bool:
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as control:
            control.write("1\n")
        return True
    except OSError:
        return False


def files(s: Any) -> list[Table]:
    count = 10_000 // s.scale
    with tempfile.TemporaryDirectory() as folder:
        paths = []
        block = os.urandom(SIZE)
        for i in range(count):
            path = Path(folder) / f"{i:06d}.bin"
            path.write_bytes(i.to_bytes(8, "little") + block[8:])
            paths.append(str(path))
        entries: list[Entry | None] = [
            ours(FileDataset(paths), name, 2, "FileDataset") for name in s.names
        ]
        if "rust" in s.names:
            entries.append(
                reference_reads(ours(FileDataset(paths), "rust", 2, "FileDataset, reference reads"))
            )
        entries += _peer_rows(OpenRead(paths), [2], "open() in __getitem__")
        title = f"10b. Local files, page cache warm: {count} files of {SIZE // 1024} KiB, batch 32"
        warm = rates_table("files_warm", "remote", title, entries, s.runs)
        present = [e for e in entries if e is not None]
        if not _drop_page_cache():
            return [warm]
        rates: dict[str, list[float]] = {e.label: [] for e in present}
        for _ in range(s.runs):
            for entry in present:
                _drop_page_cache()
                start = time.perf_counter()
                items = entry.epoch()
                rates[entry.label].append(items / (time.perf_counter() - start))
        rows = [timed_row(e.label, e.workers, e.peer, rates[e.label]) for e in present]
        title = title.replace("page cache warm", "page cache dropped before each epoch")
        cold = Table("files_cold", "remote", "rates", title, "items/s", rows, None)
        return [warm, cold]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (all its threads)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def concurrency_sweep(s: Any) -> Table:
    """Native reads at growing concurrency: the share of the latency-bound ideal
    reached, and how busy the machine's cores were (ours and the server's CPU time
    over the epoch's wall time, out of 2 cores)."""
    objects = 4_000 // s.scale
    process, base = start_server(objects)
    try:
        urls = [f"{base}/{i}" for i in range(objects)]
        entries: list[Entry | None] = []
        cpu: dict[str, list[float]] = {}
        for concurrency in (8, 16, 32, 64, 128):
            data = HttpDataset(urls, max_connections=concurrency)
            entry = ours(data, "rust", 2, f"native, max_concurrency={concurrency}",
                         max_concurrency=concurrency, prefetch_factor=4)  # fmt: skip
            entries.append(_with_cpu(entry, process.pid, cpu.setdefault(entry.label, [])))
        title = (
            f"10c. HTTP, native reads at growing concurrency: {objects} objects of "
            f"{SIZE // 1024} KiB, {LATENCY * 1e3:g} ms latency, batch 32, 2 workers "
            "(row: % of that concurrency's ideal; cores busy, ours + server, of 2)"
        )
        table = rates_table("http_concurrency", "remote", title, entries, s.runs)
    finally:
        process.terminate()
        process.wait(10)
    for row in table.rows:
        concurrency = int(row["label"].split("max_concurrency=")[1].split(":")[0])
        ideal = concurrency / LATENCY
        busy = statistics.median(cpu[row["label"]]) if cpu[row["label"]] else 0.0
        row["label"] += f" ({row['median'] / ideal:.0%} of {ideal:,.0f}/s; cores {busy:.0%})"
    return table


def _with_cpu(entry: Entry, server: int, into: list[float]) -> Entry:
    epoch = entry.epoch

    def measured() -> int:
        ours_before, server_before = time.process_time(), cpu_seconds(server)
        start = time.perf_counter()
        items = epoch()
        wall = time.perf_counter() - start
        used = time.process_time() - ours_before + cpu_seconds(server) - server_before
        into.append(used / wall / 2)
        return items

    return Entry(entry.label, measured, entry.workers)


# (what the server does, its command-line options or script, objects at scale 1)
CLOSING = str(Path(__file__).with_name("closing_server.py"))
SERVERS = [
    (
        "a server that closes every connection (HTTP/1.0; epoll, 2 processes, 20 ± 1 ms)",
        (CLOSING, "--processes", "2", "--spread", "0.001"),
        4_000,
    ),
    ("a server answering 2 % of requests 503", ("--fault-rate", "0.02"), 4_000),
    (
        "Python's http.server (HTTP/1.0, listen backlog 5)",
        (str(Path(__file__).with_name("stdlib_server.py")),),
        1_000,
    ),
]


def other_servers(s: Any) -> list[Table]:
    """10d: native reads and the reference's against servers unlike the keep-alive
    one of 10a, beside urllib in 8 torch worker processes."""
    tables = []
    for letter, (what, options, count) in zip("def", SERVERS, strict=True):
        objects = count // s.scale
        process, base = start_server(objects, *options)
        try:
            urls = [f"{base}/{i}" for i in range(objects)]
            kw = {"max_concurrency": CONCURRENCY, "prefetch_factor": 4}
            entries: list[Entry | None] = []
            if "rust" in s.names:
                entries.append(ours(HttpDataset(urls), "rust", 2, "native reads", **kw))
                reference = ours(HttpDataset(urls), "rust", 2, "reference", **kw)
                entries.append(reference_reads(reference))
            entries.append(ours(HttpDataset(urls), "threads", 2, "reference", **kw))
            # 10d only: curl retries 10e's 503s a second later at the soonest, and its
            # 64 connects at once wait out 10f's dropped SYNs (27/s).
            if options[0] == CLOSING:
                entries.append(curl_client(urls, CONCURRENCY))
            else:  # 10e, 10f: a user's thread pool (10f's small backlog is read best slowly)
                entries.append(thread_pool_client(urls, 8))
            slow = UrlGetRetrying(urls[: max(64, objects // 4)])
            entries += [e for e in _peer_rows(slow, [8], "urllib in __getitem__")[:1] if e]
            title = (
                f"10{letter}. HTTP from {what}: {objects} objects of {SIZE // 1024} KiB, "
                f"{LATENCY * 1e3:g} ms per reply, batch 32, {CONCURRENCY} in flight at most"
            )
            ideal = [CONCURRENCY / LATENCY] * s.runs
            bound = (f"ideal ({CONCURRENCY} in flight / {LATENCY * 1e3:g} ms)", ideal)
            tables.append(
                rates_table(f"http_servers_{letter}", "remote", title, entries, s.runs, bound)
            )
        finally:
            process.terminate()
            process.wait(10)
    return tables


def remote(s: Any) -> list[Table]:
    return [http(s), concurrency_sweep(s), *other_servers(s), *files(s)]
