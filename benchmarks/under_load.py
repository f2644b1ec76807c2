"""Workload 13: short epochs, quiet and beside a CPU load of 4 busy processes per core.

A training job shares its machine (a data-parallel sibling, a compiler, another
user's job). What such a neighbour costs a loader is its rate beside
``scripts/cpu_load.py`` divided by its rate on the quiet machine, both taken in the
same run; the quiet and loaded rounds alternate so that both see the same drift.
Two shapes: epochs of a persistent loader, and a new loader per epoch (its pool
taken from the idle ones a finished epoch leaves).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from measure import Table, run_ratio, timed_row
from synthetic import Trivial

from dataloader_api import DataLoader

CPU_LOAD = Path(__file__).resolve().parent.parent / "scripts" / "cpu_load.py"
ITEMS, BATCH, WORKERS = 64, 8, 2


@contextmanager
def cpu_load(per_core: int = 4) -> Iterator[None]:
    """``per_core`` busy processes per core while the block runs."""
    processes = per_core * (os.cpu_count() or 1)
    load = subprocess.Popen(
        [sys.executable, str(CPU_LOAD), str(processes)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert load.stdout is not None and load.stdin is not None
    load.stdout.readline()  # "loaded: ...": the processes run
    try:
        yield
    finally:
        load.stdin.close()
        load.wait()


def _epochs(backend: str, new_loader: bool) -> Callable[[], int]:
    """Items of 50 short epochs: one persistent loader's, or each a new loader's."""
    dataset = Trivial(ITEMS)
    options: dict[str, Any] = {"batch_size": BATCH, "num_workers": WORKERS, "backend": backend}
    loader = None if new_loader else DataLoader(dataset, persistent_workers=True, **options)

    def rounds() -> int:
        total = 0
        for _ in range(50):
            for batch in loader or DataLoader(dataset, **options):
                total += len(batch)
        return total

    return rounds


def _rates(epochs: Callable[[], int], seconds: float) -> float:
    """Items per second of ``epochs`` repeated for about ``seconds``."""
    items, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        items += epochs()
    return items / (time.perf_counter() - start)


def under_load(names: list[str], runs: int, quick: bool) -> list[Table]:
    seconds = 0.2 if quick else 2.0
    tables = []
    for id, new_loader, title in (
        ("load_epochs", False, "13a. Short epochs of a persistent loader, quiet and under load"),
        ("load_new_loaders", True, "13b. A new loader per short epoch, quiet and under load"),
    ):
        epochs = {name: _epochs(name, new_loader) for name in names}
        quiet: dict[str, list[float]] = {name: [] for name in names}
        loaded: dict[str, list[float]] = {name: [] for name in names}
        for name in names:
            epochs[name]()  # warm-up
        for _ in range(runs):
            for name in names:
                quiet[name].append(_rates(epochs[name], seconds))
            with cpu_load():
                for name in names:
                    loaded[name].append(_rates(epochs[name], seconds))
        rows = []
        for name in names:
            rows.append(timed_row(f"{name}, {WORKERS} workers, quiet", WORKERS, "", quiet[name]))
            rows.append(timed_row(f"{name}, {WORKERS} workers, loaded", WORKERS, "", loaded[name]))
        derived = {
            "loaded_over_quiet": {n: run_ratio(loaded[n], quiet[n]) for n in names},
            "cpu_load_processes": 4 * (os.cpu_count() or 1),
        }
        title += f" ({ITEMS} trivial items, batch {BATCH}, 4 busy processes per core)"
        tables.append(Table(id, "under_load", "load", title, "items/s", rows, derived=derived))
    return tables
