"""Workload 14: samples of tar shards on local disk (WebDataset convention, JPEG
and label fields), read shuffled with batch 64: ``TarShards`` with
``ShardSampler`` on each backend, against webdataset's ``WebDataset`` (shards
shuffled, a 1000-sample shuffle buffer, as its docs recommend) through torch's
DataLoader with worker processes, and through ours."""

from __future__ import annotations

import io
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import peers
from measure import Entry, Table, rates_table
from photos import write_jpegs

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
        dataset = TarShards(pattern, decoders={"cls": "int"}, index_cache=False)
        sampler = ShardSampler(dataset, seed=0, window=4)
        entries: list[Entry | None] = []
        opens: dict[str, int] = {}
        reference: tuple[str, list[float]] | None = None
        for name in s.names:
            loader: DataLoader[Any] = DataLoader(
                dataset, batch_size=64, sampler=sampler, num_workers=2, backend=name,
                persistent_workers=True,
            )  # fmt: skip
            label = f"TarShards + ShardSampler: {name}, 2 workers"
            entry = Entry(label, count_samples(loader), 2)
            entries.append(entry)
            opens[label] = opens_per_epoch(entry.epoch)
        if webdataset is not None:
            stream = (
                webdataset.WebDataset(pattern, shardshuffle=count, empty_check=False, seed=0)
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
        title = (
            f"14. Tar shards: {count} shards x {per_shard} samples on local disk (JPEGs of "
            f"500x375 from {origin}, and a label), shuffled, batch 64; files opened per epoch: "
            + ", ".join(f"{label.split(': ')[1]} {n}" for label, n in opens.items())
            + (f"; webdataset {count} (one stream per shard)" if webdataset else "")
        )
        table = rates_table("shards", "shards", title, entries, s.runs, reference)
    return [table]
