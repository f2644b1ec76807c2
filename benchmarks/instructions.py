"""Workload 12: instructions per batch, counted by valgrind's callgrind, which
a noisy machine does not move the way it moves wall-clock time.

Each loader runs in a child interpreter under ``valgrind --tool=callgrind``
twice, over ``short`` and ``long`` batches of trivial items (batch 32, identity
collate); the difference of the two totals over the difference in batches is
the cost of one batch, with start-up, imports and the interpreter's own exit
cancelled out. Every thread's instructions count (valgrind runs one at a
time), waits included: a spin-wait's count depends on how valgrind schedules
threads, so read the 2-worker figures as a cost, not as a constant to 1 %.

Run as ``python instructions.py LOADER WORKERS BATCHES`` it is the child.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from measure import Table

HERE = Path(__file__).resolve().parent
BATCH = 32


def identity(batch: Any) -> Any:
    return batch


def child(loader: str, workers: int, batches: int) -> None:
    """One epoch of ``batches`` batches with ``loader``: ours (a backend's name)
    or "dataloader-rs"."""
    sys.path.insert(0, str(HERE))
    from synthetic import Trivial

    dataset = Trivial(batches * BATCH)
    if loader == "dataloader-rs":
        import peers

        made = peers.rs_new(dataset, workers, batch_size=BATCH)
        assert made is not None
        epoch = made()
    else:
        from dataloader_api import DataLoader

        backend = loader if workers else None
        epoch = DataLoader(
            dataset, batch_size=BATCH, num_workers=workers, backend=backend, collate_fn=identity
        )
    total = sum(len(batch) for batch in epoch)
    assert total == batches * BATCH, total


def callgrind_total(argv: list[str]) -> int:
    """The total instructions (callgrind's Ir) of ``python ARGV...`` (every thread)."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "callgrind.out"
        command = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            sys.executable,
            *argv,
        ]
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=1800)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
        totals = re.search(r"^(?:summary|totals):\s+(\d+)", out.read_text(), re.MULTILINE)
        assert totals is not None, "no totals line in callgrind's output"
        return int(totals.group(1))


def _instructions(loader: str, workers: int, batches: int) -> int:
    """The total instructions of one child run."""
    return callgrind_total([str(Path(__file__).resolve()), loader, str(workers), str(batches)])


def instructions(names: list[str], quick: bool, rs_installed: bool) -> list[Table]:
    if shutil.which("valgrind") is None:
        print("\n12. skipped: valgrind is not installed (Debian: apt install valgrind)")
        return []
    # Two runs of one count differ by up to about 5 M instructions here (start-up),
    # so the counts differ by 3,000 batches: under 2 k instructions a batch.
    short, long = (20, 520) if quick else (100, 3100)
    # The calling thread is the same loop whatever the backend: measured once.
    loaders = [(names[0], 0)] + [(name, 2) for name in names]
    if quick:
        loaders = loaders[:2]
    elif rs_installed:
        loaders += [("dataloader-rs", 0), ("dataloader-rs", 2)]
    rows = []
    for loader, workers in loaders:
        low = _instructions(loader, workers, short)
        high = _instructions(loader, workers, long)
        per_batch = (high - low) / (long - short)
        peer = "dataloader-rs" if loader == "dataloader-rs" else ""
        label = f"{loader}, {workers} workers" if workers else f"{loader}, calling thread"
        if not workers and not peer:
            label = "dataloader_api, calling thread"
        row = {"label": label, "workers": workers, "peer": peer, "per_batch": per_batch}
        rows.append({**row, "batches": [short, long], "totals": [low, high]})
    title = (
        "12. Instructions per batch (callgrind): trivial items, batch 32, identity collate, "
        f"every thread counted ({short} and {long} batches)"
    )
    return [Table("instructions", "instructions", "instructions", title, "instructions", rows)]


if __name__ == "__main__":
    child(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
