"""Workload 11: what grows with the work. A shuffled epoch over 10 k, 10 M and
1 G items (a dataset that holds nothing: item i is i), batch 1, 32 and 256,
1, 2 and all the machine's workers: the time to the first batch of a new
loader, the cost of each batch after it, and the memory the epoch added.
"""

from __future__ import annotations

import os
import time
from typing import Any

from measure import Table, tree_pss_mib

from dataloader_api import DataLoader, RandomSampler

SIZES = (10_000, 10_000_000, 1_000_000_000)
BATCH_SIZES = (1, 32, 256)
# Batches timed after the first: enough that a batch's cost is not the noise
# of one wake-up, few enough that batch 256 stays well under a second.
TIMED_ITEMS = 64_000


class Indices:
    """``n`` items that take no memory: item ``i`` is ``i``."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> int:
        return index


def identity(batch: Any) -> Any:
    return batch


def _one_epoch(loader: DataLoader, batches: int) -> tuple[float, float, float]:
    """(ms to the first batch, µs per later batch, MiB added) of a new epoch."""
    before = tree_pss_mib()
    start = time.perf_counter()
    iterator = iter(loader)
    next(iterator)
    first = time.perf_counter()
    taken = 0
    for _ in iterator:
        taken += 1
        if taken == batches:
            break
    end = time.perf_counter()
    added = tree_pss_mib() - before
    iterator.close()
    return 1e3 * (first - start), 1e6 * (end - first) / max(1, taken), added


def _cell(loader_of: Any, batches: int, runs: int) -> dict[str, Any]:
    _one_epoch(loader_of(), batches)  # warm-up: imports, first allocations
    figures = [_one_epoch(loader_of(), batches) for _ in range(runs)]
    first, per_batch, added = (list(column) for column in zip(*figures, strict=True))
    return {"first_ms": first, "per_batch_us": per_batch, "added_mib": max(added)}


def _rows(
    name: str, n: int, batch: int, workers: int, runs: int, quick: bool
) -> list[dict[str, Any]]:
    batches = max(8, TIMED_ITEMS // batch // (20 if quick else 1))
    kw = {"batch_size": batch, "num_workers": workers, "collate_fn": identity}
    if workers:
        kw["backend"] = name
    rows = []
    shuffles = [("bijection" if n >= 1 << 20 else "permutation", None)]
    if n == 10_000_000 and batch == 32:
        shuffles.append(("permutation", False))  # the default below 2**20, at this size
    for label, index_shuffle in shuffles:

        def make(label: str = label, index_shuffle: bool | None = index_shuffle) -> DataLoader:
            sampler = RandomSampler(Indices(n), seed=0, index_shuffle=index_shuffle)
            return DataLoader(Indices(n), sampler=sampler, **kw)

        cell = _cell(make, batches, runs)
        rows.append(
            {
                "label": name,
                "items": n,
                "batch": batch,
                "workers": workers,
                "shuffle": label,
                "peer": "",
                **cell,
            }
        )
    return rows


def scaling(names: list[str], runs: int, quick: bool) -> list[Table]:
    name = names[0]  # the fastest installed backend
    cores = os.cpu_count() or 1
    worker_counts = sorted({1, 2, cores})
    sizes = SIZES[:2] if quick else SIZES
    rows = []
    for n in sizes:
        for batch in BATCH_SIZES:
            for workers in worker_counts:
                rows += _rows(name, n, batch, workers, runs, quick)
    title = (
        f"11. Scaling: a new shuffled loader ({name}), trivial items, identity collate: "
        "first batch, later batches, memory"
    )
    return [Table("scaling", "scaling", "scaling", title, "ms", rows)]
