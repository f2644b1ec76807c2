"""Workload 15: what workers cost items that hold the GIL (issue 45). Trivial
items (identity collate) and NumPy items (3x64x64 float32, ``np.stack``), batch
32, at 0, 1, 2 and 4 workers, ours on each backend and dataloader-rs, in turns.
Each row says its rate against our own calling thread (``num_workers=0``: the
goal is >= 0.9x at any worker count) and the process's voluntary context
switches per batch (every thread's, from ``/proc/self/task/*/status``): each one
is a thread that slept and was woken, the hand-off the issue counts.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import peers
from measure import Entry, Table, rates_table
from synthetic import Arrays, Trivial

WORKERS = (0, 1, 2, 4)
BATCH = 32


def identity(batch: Any) -> Any:
    return batch


def voluntary_switches() -> int:
    """Voluntary context switches of every thread of this process so far (threads
    that ended since are not counted: measure around epochs of persistent pools)."""
    total = 0
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/status") as status:
                for line in status:
                    if line.startswith("voluntary_ctxt_switches:"):
                        total += int(line.split()[1])
        except FileNotFoundError:  # a thread that ended meanwhile
            continue
    return total


def counted(entry: Entry, batches: int, into: list[float]) -> Entry:
    """``entry`` whose epochs also record switches per batch into ``into``."""
    epoch = entry.epoch

    def measured() -> int:
        before = voluntary_switches()
        items = epoch()
        into.append((voluntary_switches() - before) / batches)
        return items

    return Entry(entry.label, measured, entry.workers, entry.peer)


def _entries(dataset: Any, names: list[str], collate: Callable[..., Any] | None) -> list[Entry]:
    kw = {} if collate is None else {"collate_fn": collate}
    rows: list[Entry | None] = []
    for workers in WORKERS:
        backends: list[str | None] = [None] if workers == 0 else list(names)
        rows += [peers.ours(dataset, name, workers, BATCH, **kw) for name in backends]
        rows.append(peers.rs_entry(dataset, workers, BATCH, collate or np.stack))
    return [row for row in rows if row is not None]


def handoff(s: Any) -> list[Table]:
    tables = []
    for id, what, dataset, collate in (
        ("handoff_trivial", "trivial items, identity collate", Trivial(100_000 // s.scale),
         identity),
        ("handoff_numpy", "NumPy items 3x64x64 float32, default collate (dataloader-rs: "
         "np.stack)", Arrays(4096 // s.scale, (3, 64, 64), "float32"), None),
    ):  # fmt: skip
        batches = -(-len(dataset) // BATCH)
        switches: dict[str, list[float]] = {}
        entries: list[Entry | None] = [
            counted(e, batches, switches.setdefault(e.label, []))
            for e in _entries(dataset, s.names, collate)
        ]
        title = (
            f"15. Workers and the GIL: {what}, batch {BATCH}, 0-4 workers "
            "(row: voluntary context switches per batch, median)"
        )
        calling = "dataloader_api, calling thread"
        table = rates_table(id, "handoff", title, entries, s.runs, (calling, []))
        for row in table.rows:
            seen = sorted(switches.get(row["label"], []))
            if seen:
                row["label"] += f" ({seen[len(seen) // 2]:.2f} switches/batch)"
        tables.append(table)
    return tables
