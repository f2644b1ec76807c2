"""Workload 14: samples of tar shards (WebDataset convention, JPEG and label
fields), read shuffled with batch 64: ``TarShards`` with ``ShardSampler`` on
each backend (a 1000-sample shuffle buffer; and each window shuffled whole,
on the first backend), against webdataset's ``WebDataset`` (shards shuffled, a
1000-sample shuffle buffer, as its docs recommend; ``curl`` for URLs) through
torch's DataLoader with worker processes, and through ours. 14: on local
disk (also read whole, ``local_reads="shard"``); 14b: behind the loopback
server in another process, 20 ms per reply; 14c: in moto's S3 server (where
``$DATALOADER_S3_SERVER`` names it), webdataset reading presigned URLs with
``curl``. Each table's title says the requests (or files opened) per epoch
and the most shard memory that was alive at once against its bound."""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import peers
from measure import Entry, Table, rates_table
from photos import write_jpegs
from remote import LATENCY

from dataloader_api import DataLoader
from dataloader_api.io import ObjectStoreDataset
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
        tables = [local, remote]
        s3 = os.environ.get("DATALOADER_S3_SERVER")
        if s3:
            tables.append(_s3_table(s, s3, Path(folder), count, what))
        else:
            print("14c skipped: no S3 server ($DATALOADER_S3_SERVER; nox -s bench sets it)")
    return tables


def _s3_table(s: Any, command: str, folder: Path, count: int, what: str) -> Table:
    """The shards uploaded to moto's server on loopback, read from there."""
    import boto3

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(
        [command, "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    endpoint = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        keys = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench-secret"}
        os.environ.update(keys)
        client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
        client.create_bucket(Bucket="shards")
        names = [f"train-{shard:06d}.tar" for shard in range(count)]
        for name in names:
            client.upload_file(str(folder / name), "shards", name)
        store = ObjectStoreDataset("s3://shards/", endpoint_url=endpoint, region="us-east-1",
                                   keys=names)  # fmt: skip
        presigned = [
            client.generate_presigned_url(
                "get_object", Params={"Bucket": "shards", "Key": n}, ExpiresIn=86400
            )
            for n in names
        ]
        title = f"14c. Tar shards in moto's S3 server on loopback: {what}"
        return _table(s, "shards_s3", title, store, count, urls=presigned)
    finally:
        server.terminate()
        server.wait()


def _table(
    s: Any, id: str, title: str, source: Any, count: int, urls: list[str] | None = None
) -> Table:
    """``source``: a brace pattern (local or http) or an ``io`` dataset (S3, whose
    objects webdataset reads from ``urls``)."""
    remote = not isinstance(source, str) or source.startswith("http")
    dataset = TarShards(source, decoders={"cls": "int"}, index_cache=False)
    # A 1000-sample shuffle buffer, as webdataset's below; then each window
    # shuffled whole (its shards all read before much of it goes), on one backend.
    samplers = [(name, 1000, dataset) for name in s.names]
    samplers += [(name, None, dataset) for name in s.names[:1]]
    whole = None
    if not remote:  # local shards read whole, once each, on the first backend
        whole = TarShards(source, decoders={"cls": "int"}, index_cache=False, local_reads="shard")
        samplers += [(name, 1000, whole) for name in s.names[:1]]
    entries: list[Entry | None] = []
    reads: dict[str, int] = {}
    reference: tuple[str, list[float]] | None = None
    for name, buffer, read in samplers:
        sampler = ShardSampler(read, seed=0, window=4, buffer=buffer)
        loader: DataLoader[Any] = DataLoader(
            read, batch_size=64, sampler=sampler, num_workers=2, backend=name,
            persistent_workers=True,
        )  # fmt: skip
        shuffled = f"buffer={buffer}" if buffer else "window shuffled whole"
        shuffled += ", local_reads=shard" if read is whole else ""
        label = f"TarShards + ShardSampler({shuffled}): {name}, 2 workers"
        entry = Entry(label, count_samples(loader), 2)
        entries.append(entry)
        reads[f"{name}, {shuffled}"] = requests_per_epoch(read, entry.epoch)
    if webdataset is not None:
        if urls is not None:
            shards: Any = [f"pipe:curl -s -f '{url}'" for url in urls]
        else:
            shards = f"pipe:curl -s -f {source}" if remote else source
        stream = (
            webdataset.WebDataset(shards, shardshuffle=count, empty_check=False, seed=0)
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
    table = rates_table(id, "shards", title, entries, s.runs, reference)
    shown = [d for d in (dataset, whole) if d is not None and d.shards_in_memory]
    table.title += "; shard memory alive at most " + ", ".join(
        f"{d.memory()[1] / 2**20:.0f} MiB{' (local_reads=shard)' if d is whole else ''}"
        for d in shown
    )
    largest = max(index.size for index in dataset._indexes)
    table.title += (
        f" (bound: max_shards_in_memory={dataset.max_shards_in_memory}, "
        f"{dataset.max_shards_in_memory * largest / 2**20:.0f} MiB of the largest shard)"
    )
    return table


def requests_per_epoch(dataset: TarShards, epoch: Callable[[], int]) -> int:
    """Requests one epoch sent (remote shards), or files it opened (local ones)."""
    source = dataset._remote.source if dataset._remote is not None else None
    if source is None:
        return opens_per_epoch(epoch)
    before = source.counters.requests
    epoch()
    return int(source.counters.requests - before)
