"""The workloads: what each table measures, over which loaders and
datasets (synthetic.py), at which sizes. Each workload has a number (``--only``)
and a stable id, and returns its tables as data (measure.Table), measured but
not rendered.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import peers
from handoff import handoff
from image_workload import images
from import_time import import_times
from instructions import instructions
from measure import (
    Entry,
    Table,
    measure,
    rates_table,
    startup_times,
    timed_row,
    tree_pss_mib,
)
from remote import remote
from remote_nginx import nginx
from scaling import scaling
from shards_workload import shards
from synthetic import Arrays, Blobs, PythonWork, Sleepy, Trivial, TrivialBatches
from under_load import under_load


def identity(batch: Any) -> Any:
    return batch


@dataclass(frozen=True)
class Settings:
    names: list[str]  # our backends to measure
    runs: int  # timed epochs per figure
    quick: bool  # tiny sizes: proves the runner works

    @property
    def scale(self) -> int:
        """What --quick divides the datasets' lengths by."""
        return 20 if self.quick else 1


@dataclass(frozen=True)
class Workload:
    number: str  # what --only selects, and the tables' title prefix
    id: str  # stable: recorded with each table in the JSON
    run: Callable[[Settings], list[Table]]


def bare_loop(dataset: Trivial, batch_size: int) -> Callable[[], int]:
    def epoch() -> int:
        total = 0
        for start in range(0, len(dataset), batch_size):
            batch = [dataset[i] for i in range(start, min(start + batch_size, len(dataset)))]
            total += len(identity(batch))
        return total

    return epoch


def overhead(s: Settings) -> list[Table]:
    dataset = Trivial(200_000 // s.scale)
    bare = measure([Entry("bare", bare_loop(dataset, 32), 0)], s.runs)["bare"]
    entries: list[Entry | None] = [peers.ours(dataset, None, 0, 32, collate_fn=identity)]
    entries += [
        peers.torch_entry(dataset, 0, 32, collate_fn=identity),
        peers.rs_entry(dataset, 0, 32),
    ]
    for name in s.names:
        entries.append(peers.ours(dataset, name, 2, 32, collate_fn=identity))
    entries += [
        peers.torch_entry(dataset, 2, 32, collate_fn=identity),
        peers.rs_entry(dataset, 2, 32),
    ]
    entries += [
        peers.spdl_entry(dataset, 2, 32, limit=16384 // s.scale),  # slow here
        peers.grain_entry(dataset, 0, 32, identity),
        peers.grain_entry(dataset, 2, 32, identity),
    ]
    title = "1. Loader overhead: trivial items, batch 32, identity collate"
    reference = ("bare Python loop over `__getitem__`", bare)
    return [
        rates_table("overhead", "overhead", title, entries, s.runs, reference),
        _overhead_getitems(s),
    ]


def _overhead_getitems(s: Settings) -> Table:
    """Workload 1 with ``__getitems__`` (one call per batch), the way dataloader-rs's
    docs recommend for batched access; torch and ours call it too."""
    dataset = TrivialBatches(200_000 // s.scale)
    entries: list[Entry | None] = [peers.ours(dataset, None, 0, 32, collate_fn=identity)]
    entries += [peers.rs_entry(dataset, 0, 32)]
    entries += [peers.ours(dataset, name, 2, 32, collate_fn=identity) for name in s.names]
    entries += [
        peers.torch_entry(dataset, 2, 32, collate_fn=identity),
        peers.rs_entry(dataset, 2, 32),
    ]
    title = "1b. Loader overhead with `__getitems__`: trivial items, batch 32, identity collate"
    return rates_table("overhead_getitems", "overhead", title, entries, s.runs)


def io_bound(s: Settings) -> list[Table]:
    tables = []
    for workers in (8, 32):
        dataset = Sleepy(workers * 32 * (1 if s.quick else 16), 0.002)
        ideal = [workers / 0.002] * s.runs
        entries: list[Entry | None] = [
            peers.ours(dataset, name, workers, 32, collate_fn=identity) for name in s.names
        ]
        entries += [
            peers.torch_entry(dataset, workers, 32, collate_fn=identity),
            peers.rs_entry(dataset, workers, 32),
            peers.spdl_entry(dataset, workers, 32),
        ]
        title = f"2. I/O-bound: each item sleeps 2 ms (GIL released), batch 32, {workers} workers"
        reference = (f"ideal ({workers} / 2 ms)", ideal)
        tables.append(
            rates_table(f"io_{workers}_workers", "io_bound", title, entries, s.runs, reference)
        )
    return tables


def numpy_items(s: Settings) -> list[Table]:
    tables = []
    for id, name, shape, dtype, length in (
        ("numpy_float32", "3x64x64 float32", (3, 64, 64), "float32", 8192),
        ("numpy_uint8", "224x224x3 uint8", (224, 224, 3), "uint8", 2048),
    ):
        dataset = Arrays(length // s.scale, shape, dtype)
        entries: list[Entry | None] = [peers.ours(dataset, n, 2, 32) for n in s.names]
        entries += [
            peers.torch_entry(dataset, 2, 32),
            peers.rs_entry(dataset, 2, 32, np.stack),
            peers.spdl_entry(dataset, 2, 32, np.stack),
            peers.grain_entry(dataset, 2, 32),
        ]
        title = (
            f"3. NumPy items {name}, batch 32, default collate (dataloader-rs: np.stack), 2 workers"
        )
        tables.append(rates_table(id, "numpy", title, entries, s.runs))
    return tables


def loops_for_a_millisecond() -> int:
    """How many PythonWork loop turns take about 1 ms on this interpreter."""
    probe = PythonWork(1, 100_000)
    start = time.perf_counter()
    probe[0]
    return max(1, int(100_000 * 0.001 / (time.perf_counter() - start)))


def gil_enabled() -> bool:
    check = getattr(sys, "_is_gil_enabled", None)
    return True if check is None else bool(check())


def cpu_bound(s: Settings) -> list[Table]:
    loops = loops_for_a_millisecond()
    dataset = PythonWork(max(64, 1024 // s.scale), loops)
    entries: list[Entry | None] = [peers.ours(dataset, None, 0, 8, collate_fn=identity)]
    for workers in range(1, (os.cpu_count() or 2) + 1):
        entries += [peers.ours(dataset, name, workers, 8, collate_fn=identity) for name in s.names]
        entries += [
            peers.torch_entry(dataset, workers, 8, collate_fn=identity),
            peers.rs_entry(dataset, workers, 8),
        ]
    gil = "GIL build" if gil_enabled() else "free-threaded build: no GIL"
    title = (
        f"4. CPU-bound: about 1 ms of pure Python per item ({loops:,} loop turns), batch 8, "
        f"{gil}; 1 to nproc workers"
    )
    reference = ("dataloader_api, calling thread", [])
    return [rates_table("cpu_bound", "cpu_bound", title, entries, s.runs, reference)]


def startup(s: Settings) -> list[Table]:
    dataset = Trivial(10)
    tables = []
    for id, items, title in (
        ("first_batch", None, "5a. Time to first batch: a new loader, 2 workers, batch 1"),
        (
            "startup_epoch",
            10,
            "5b. Start-up: a new loader's whole epoch of 10 items, 2 workers, batch 1",
        ),
    ):
        makers = [
            (f"{name}, 2 workers", "", peers.ours_new(dataset, name, 2, collate_fn=identity))
            for name in s.names
        ]
        for label, peer, make in (
            (
                "torch DataLoader, 2 workers",
                "torch",
                peers.torch_new(dataset, 2, collate_fn=identity),
            ),
            ("dataloader-rs, 2 workers", "dataloader-rs", peers.rs_new(dataset, 2)),
        ):
            if make is not None:
                makers.append((label, peer, make))
        times = startup_times(makers, s.runs, items)
        rows = [timed_row(label, 2, peer, times[label]) for label, peer, _ in makers]
        tables.append(Table(id, "startup", "startup", title, "ms", rows))
    return tables


def _pss_after_epoch(label: str, peer: str, make: Callable[[], Any]) -> dict[str, Any]:
    """PSS of the process tree before ``make()`` and after one epoch of its loader."""
    before = tree_pss_mib()
    loader = make()
    sum(len(batch) for batch in loader)
    after = tree_pss_mib()  # torch's persistent workers are still alive here
    return {
        "label": label,
        "workers": 4,
        "peer": peer,
        "before": before,
        "after": after,
        "added": after - before,
    }


def _memory_ours_and_torch(names: list[str], megabytes: int) -> list[dict[str, Any]]:
    """One dataset for all: it is freed when this returns."""
    dataset = Blobs(megabytes)
    kw = {"batch_size": 256, "collate_fn": identity, "persistent_workers": True}
    makers = [(f"{name}, 4 workers", "", peers.ours_new(dataset, name, 4, **kw)) for name in names]
    if (torch := peers.torch_new(dataset, 4, **kw)) is not None:
        makers.append(("torch DataLoader, 4 workers", "torch", torch))
    return [_pss_after_epoch(label, peer, make) for label, peer, make in makers]


def memory(s: Settings) -> list[Table]:
    """PSS of the whole process tree after one epoch with 4 workers, over a 1 GiB dataset:
    what each loader adds on top of the memory just before it was made."""
    megabytes = 64 if s.quick else 1024
    rows = _memory_ours_and_torch(s.names, megabytes)
    # Its dataset must be a PyDataset: a second copy, made (and measured) on its own.
    if peers.installed("dataloader-rs"):
        rs = peers.rs_new(Blobs(megabytes), 4, batch_size=256)
        assert rs is not None
        rows.append(_pss_after_epoch("dataloader-rs, 4 workers", "dataloader-rs", rs))
    title = (
        f"6. Memory: a {megabytes} MiB in-memory dataset (4 KiB bytes objects), "
        "4 workers: PSS of the process and its children after an epoch"
    )
    return [Table("memory", "memory", "memory", title, "MiB", rows)]


ATTACH_VARIABLES = {"rust": "DATALOADER_RUST_ATTACH", "cffi": "DATALOADER_CFFI_ATTACH"}


def attach_once(s: Settings) -> list[Table]:
    """Native pools with their threads attached once, against a new thread state per job."""
    dataset = Trivial(100_000 // s.scale)
    entries = []
    for name in [n for n in s.names if n in ATTACH_VARIABLES]:
        variable = ATTACH_VARIABLES[name]
        for mode in ("once", "per-task"):
            os.environ[variable] = mode
            entry = peers.ours(dataset, name, 2, 32, collate_fn=identity)
            entry.label = f"{name}, 2 workers, attach {mode}"
            entry.epoch()  # the mode is read when the (persistent) pool is made: now
            entries.append(entry)
        os.environ.pop(variable)
    if not entries:
        return []
    rates = measure(entries, s.runs)
    rows, per_batch_us = [], {}
    for once, per_task in zip(entries[::2], entries[1::2], strict=True):
        name = once.label.split(",")[0]
        for entry, mode in ((once, "once"), (per_task, "per-task")):
            row = timed_row(entry.label, 2, "", rates[entry.label])
            rows.append({**row, "backend": name, "attach": mode})
        a, b = rates[once.label], rates[per_task.label]
        per_batch_us[name] = statistics.median(
            (32 / y - 32 / x) * 1e6 for x, y in zip(a, b, strict=True)
        )
    title = "7. Attach once vs a new thread state per job: trivial items, batch 32"
    derived = {"per_task_attach_us_per_batch": per_batch_us}
    return [Table("attach", "attach", "attach", title, "items/s", rows, None, derived)]


WORKLOADS = [
    Workload("1", "overhead", overhead),
    Workload("2", "io_bound", io_bound),
    Workload("3", "numpy", numpy_items),
    Workload("4", "cpu_bound", cpu_bound),
    Workload("5", "startup", startup),
    Workload("6", "memory", memory),
    Workload("7", "attach", attach_once),
    Workload("8", "import", lambda s: import_times(s.runs)),
    Workload("9", "images", images),
    Workload("10", "remote", lambda s: [*remote(s), *nginx(s)]),
    Workload("11", "scaling", lambda s: scaling(s.names, s.runs, s.quick)),
    Workload(
        "12",
        "instructions",
        lambda s: instructions(s.names, s.quick, peers.installed("dataloader-rs")),
    ),
    Workload("13", "under_load", lambda s: under_load(s.names, s.runs, s.quick)),
    Workload("14", "shards", shards),
    Workload("15", "handoff", handoff),
]
