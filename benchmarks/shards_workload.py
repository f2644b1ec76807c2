"""Workload 14: samples of tar shards (WebDataset convention, JPEG and label
fields), read shuffled with batch 64: ``TarShards`` with ``ShardSampler`` on
each backend (a 1000-sample shuffle buffer; and each window shuffled whole,
on the first backend), against webdataset's ``WebDataset`` (shards shuffled, a
1000-sample shuffle buffer, as its docs recommend; ``curl`` for URLs) through
torch's DataLoader with worker processes, and through ours. 14: on local
disk; 14b: behind the loopback server in another process, 20 ms per reply."""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import peers
from measure import Entry, Table, rates_table
from photos import write_jpegs
from remote import LATENCY

from dataloader_api import DataLoader
from dataloader_api.shards import ShardSampler, TarShards

try:
    import webdataset
except ImportError:
    webdataset = None


def write_shards(folder: Path, shards: int, per_shard: int) -> tuple[str, str]:
    """``shards`` tar files of ``per_shard`` samples (a JPEG of 500x375 and a label)
    each, cut from 256 distinct photos; their brace pattern and the photos' origin."""
    origin, paths = write_jpegs(folder, min(256, shards * per_shard))
    photos = [p.read_bytes() for p in paths]
    for shard in range(shards):
        with tarfile.open(folder / f"train-{shard:06d}.tar", "w") as tar:
            for i in range(per_shard):
                key = shard * per_shard + i
                for extension, data in (("jpg", photos[key % len(photos)]), ("cls", b"%d" % key)):
                    member = tarfile.TarInfo(f"{key:08d}.{extension}")
                    member.size = len(data)
                    tar.addfile(member, io.BytesIO(data))
    return str(folder / f"train-{{000000..{shards - 1:06d}}}.tar"), origin


def count_samples(loader: Any) -> Callable[[], int]:
    def epoch() -> int:
        return sum(len(batch["__key__"]) for batch in loader)

    return epoch


def opens_per_epoch(epoch: Callable[[], int]) -> int:
    """Files this process opened during one epoch (an audit hook, threads included)."""
    opened = [0]
    active = [True]

    def hook(event: str, _: Any) -> None:
        if event == "open" and active[0]:
            opened[0] += 1

    sys.addaudithook(hook)  # cannot be removed: switched off below
    epoch()
    active[0] = False
    return opened[0]


def shards(s: Any) -> list[Table]:
    """``s``: workloads.Settings (names, runs, scale)."""
    count, per_shard = (8, 25) if s.quick else (64, 500)
    with tempfile.TemporaryDirectory() as folder:
        pattern, origin = write_shards(Path(folder), count, per_shard)
        what = (
            f"{count} shards x {per_shard} samples (JPEGs of 500x375 from {origin}, and a "
            "label), shuffled, batch 64"
        )
        local = _table(s, "shards", f"14. Tar shards on local disk: {what}", pattern, count)
        server = subprocess.Popen(
            [sys.executable, "-m", "dataloader_api.io.loopback", "--folder", folder,
             "--latency", str(LATENCY)],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert server.stdout is not None
            url = server.stdout.readline().strip()
            remote = _table(
                s, "shards_http",
                f"14b. Tar shards over HTTP, {LATENCY * 1000:g} ms per reply: {what}",
                url + "/" + Path(pattern).name, count,
            )  # fmt: skip
        finally:
            server.terminate()
            server.wait()
    return [local, remote]


def _table(s: Any, id: str, title: str, pattern: str, count: int) -> Table:
    remote = pattern.startswith("http")
    dataset = TarShards(pattern, decoders={"cls": "int"}, index_cache=False)
    # A 1000-sample shuffle buffer, as webdataset's below; then each window
    # shuffled whole (its shards all read before much of it goes), on one backend.
    samplers = [(name, 1000) for name in s.names] + [(name, None) for name in s.names[:1]]
    entries: list[Entry | None] = []
    reads: dict[str, int] = {}
    reference: tuple[str, list[float]] | None = None
    for name, buffer in samplers:
        sampler = ShardSampler(dataset, seed=0, window=4, buffer=buffer)
        loader: DataLoader[Any] = DataLoader(
            dataset, batch_size=64, sampler=sampler, num_workers=2, backend=name,
            persistent_workers=True,
        )  # fmt: skip
        shuffled = f"buffer={buffer}" if buffer else "window shuffled whole"
        label = f"TarShards + ShardSampler({shuffled}): {name}, 2 workers"
        entry = Entry(label, count_samples(loader), 2)
        entries.append(entry)
        reads[f"{name}, {shuffled}"] = requests_per_epoch(dataset, entry.epoch)
    if webdataset is not None:
        urls = f"pipe:curl -s -f {pattern}" if remote else pattern
        stream = (
            webdataset.WebDataset(urls, shardshuffle=count, empty_check=False, seed=0)
            .shuffle(1000)
            .map_dict(cls=int)
        )
        torch = peers.torch_entry(stream, 2, 64, count_samples)
        if torch is not None:
            torch.label = f"webdataset WebDataset: {torch.label}"
            entries.append(torch)
            reference = (torch.label, [])
        for name in s.names[:1]:
            loader = DataLoader(stream, batch_size=64, num_workers=2, backend=name,
                                persistent_workers=True)  # fmt: skip
            entries.append(Entry(f"webdataset WebDataset: {name}, 2 workers",
                                 count_samples(loader), 2))  # fmt: skip
    unit = "requests" if remote else "files opened"
    title += f"; {unit} per epoch: " + ", ".join(f"{n} {r}" for n, r in reads.items())
    title += f"; webdataset {count} (one stream per shard)" if webdataset else ""
    return rates_table(id, "shards", title, entries, s.runs, reference)


def requests_per_epoch(dataset: TarShards, epoch: Callable[[], int]) -> int:
    """Requests one epoch sent (remote shards), or files it opened (local ones)."""
    source = dataset._remote.source if dataset._remote is not None else None
    if source is None:
        return opens_per_epoch(epoch)
    before = source.counters.requests
    epoch()
    return int(source.counters.requests - before)
