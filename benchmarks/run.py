"""Side-by-side loader benchmarks: every installed backend of ours, torch's
DataLoader and dataloader-rs where they are importable, in one run on one machine.

    python benchmarks/run.py [--runs N] [--quick] [--backends a,b] [--only 1,3]

Every loader of a table is warmed up once, then the loaders take turns, run
by run, in a fixed order; a figure is the median of --runs with min and max,
and a ratio is the median of the run-by-run ratios. Nothing here asserts
anything about speed.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import platform
import statistics
import sysconfig
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import dataloader_api
from dataloader_api import DataLoader
from dataloader_api.registry import PREFERENCE

try:
    import dataloader_rs
except ImportError:
    dataloader_rs = None
try:
    import torch.utils.data as torch_data
except ImportError:
    torch_data = None


# -- datasets ---------------------------------------------------------------


class Trivial:
    """``__getitem__`` returns the index: what is left is the loader's own cost."""

    def __init__(self, length: int) -> None:
        super().__init__()  # dataloader-rs's PyDataset needs its __init__
        self.length = length
        self.args: tuple[Any, ...] = (length,)

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> Any:
        return index


class Sleepy(Trivial):
    """Each item waits ``seconds`` with the GIL released, like a read from storage."""

    def __init__(self, length: int, seconds: float) -> None:
        super().__init__(length)
        self.seconds = seconds
        self.args = (length, seconds)

    def __getitem__(self, index: int) -> Any:
        time.sleep(self.seconds)
        return index


class Arrays(Trivial):
    """NumPy items of one shape and dtype (64 distinct ones, reused)."""

    def __init__(self, length: int, shape: tuple[int, ...], dtype: str) -> None:
        super().__init__(length)
        self.args = (length, shape, dtype)
        rng = np.random.default_rng(0)
        if dtype == "uint8":
            self.items = [rng.integers(0, 256, shape, dtype=np.uint8) for _ in range(64)]
        else:
            self.items = [rng.random(shape, dtype=np.float32) for _ in range(64)]

    def __getitem__(self, index: int) -> Any:
        return self.items[index % 64]


def for_dataloader_rs(dataset: Trivial) -> Any:
    """The same dataset as a ``dataloader_rs.PyDataset`` (same methods, no wrapper call)."""
    assert dataloader_rs is not None
    kind = type(f"{type(dataset).__name__}RS", (type(dataset), dataloader_rs.PyDataset), {})
    return kind(*dataset.args)


def identity(batch: Any) -> Any:
    return batch


# -- loaders ----------------------------------------------------------------


@dataclass
class Entry:
    """One loader in one table; ``peer`` is "", "torch" or "dataloader-rs"."""

    label: str
    epoch: Callable[[], int]
    workers: int
    peer: str = ""


def count(loader: Any) -> Callable[[], int]:
    def epoch() -> int:
        total = 0
        for batch in loader:
            total += len(batch)
        return total

    return epoch


def ours(dataset: Any, backend: str | None, workers: int, batch_size: int, **kw: Any) -> Entry:
    loader = DataLoader(
        dataset,
        batch_size=batch_size,
        num_workers=workers,
        backend=backend,
        persistent_workers=workers > 0,
        **kw,
    )
    label = f"{backend}, {workers} workers" if workers else "dataloader_api, calling thread"
    return Entry(label, count(loader), workers)


def torch_entry(dataset: Any, workers: int, batch_size: int, **kw: Any) -> Entry | None:
    if torch_data is None:
        return None
    loader = torch_data.DataLoader(
        dataset, batch_size=batch_size, num_workers=workers, persistent_workers=workers > 0, **kw
    )
    return Entry(f"torch DataLoader, {workers} workers", count(loader), workers, "torch")


def rs_entry(dataset: Any, workers: int, batch_size: int, collate: Any = None) -> Entry | None:
    if dataloader_rs is None:
        return None
    loader = dataloader_rs.PyDataloader(
        for_dataloader_rs(dataset), batch_size=batch_size, num_workers=workers, collate_fn=collate
    )
    return Entry(f"dataloader-rs, {workers} workers", count(loader), workers, "dataloader-rs")


# -- measuring and reporting -------------------------------------------------


def measure(entries: list[Entry], runs: int) -> dict[str, list[float]]:
    """Items per second of each entry, ``runs`` epochs each, interleaved after a warm-up."""
    for entry in entries:
        entry.epoch()
    rates: dict[str, list[float]] = {entry.label: [] for entry in entries}
    for _ in range(runs):
        for entry in entries:
            start = time.perf_counter()
            items = entry.epoch()
            rates[entry.label].append(items / (time.perf_counter() - start))
    return rates


def ratio(rates: list[float], against: list[float] | None) -> str:
    if not against:
        return ""
    return f"{statistics.median(a / b for a, b in zip(rates, against, strict=True)):.2f}x"


def table(
    title: str,
    entries: list[Entry | None],
    runs: int,
    reference: tuple[str, list[float]] | None = None,
    unit: str = "items/s",
) -> list[str]:
    present = [e for e in entries if e is not None]
    rates = measure(present, runs)
    ref_name = reference[0] if reference else ""
    lines = [
        f"\n### {title}\n",
        f"| loader | median {unit} | min | max | vs {ref_name or '—'} | vs torch "
        "| vs dataloader-rs |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    if (
        reference
        and reference[0]
        and reference[1]
        and not any(e.label == reference[0] for e in present)
    ):
        values = reference[1]
        lines.append(
            f"| {reference[0]} | {statistics.median(values):,.0f} | {min(values):,.0f} | "
            f"{max(values):,.0f} | 1.00x | | |"
        )
    for entry in present:
        mine = rates[entry.label]
        peers = {
            peer: next(
                (rates[e.label] for e in present if e.peer == peer and e.workers == entry.workers),
                None,
            )
            for peer in ("torch", "dataloader-rs")
        }
        vs_torch = ratio(mine, peers["torch"]) if entry.peer != "torch" else ""
        vs_rs = ratio(mine, peers["dataloader-rs"]) if entry.peer != "dataloader-rs" else ""
        vs_ref = ratio(mine, reference[1]) if reference else ""
        lines.append(
            f"| {entry.label} | {statistics.median(mine):,.0f} | {min(mine):,.0f} | "
            f"{max(mine):,.0f} | {vs_ref} | {vs_torch} | {vs_rs} |"
        )
    return lines


def startup_table(
    title: str, makers: list[tuple[str, str, Callable[[], Any]]], runs: int, items: int | None
) -> list[str]:
    """Milliseconds from a new loader to its first batch (``items=None``) or to the end
    of its epoch; ratios are peer time / our time, so above 1 means ours is faster."""
    times: dict[str, list[float]] = {label: [] for label, _, _ in makers}
    for round_ in range(runs + 1):
        for label, _, make in makers:
            start = time.perf_counter()
            loader = make()
            iterator = iter(loader)
            if items is None:
                next(iterator)
            else:
                for _ in iterator:
                    pass
            elapsed = time.perf_counter() - start
            del iterator, loader
            if round_:  # the first round is the warm-up
                times[label].append(elapsed * 1e3)
    peer_of = {label: peer for label, peer, _ in makers}
    lines = [
        f"\n### {title}\n",
        "| loader | median ms | min | max | torch ÷ this | dataloader-rs ÷ this |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, peer, _ in makers:
        mine = times[label]
        cells = []
        for other in ("torch", "dataloader-rs"):
            theirs = next((times[name] for name, p, _ in makers if p == other), None)
            cells.append("" if theirs is None or peer == other else ratio(theirs, mine))
        lines.append(
            f"| {label} | {statistics.median(mine):.3f} | {min(mine):.3f} | {max(mine):.3f} | "
            f"{cells[0]} | {cells[1]} |"
        )
    del peer_of
    return lines


# -- workloads --------------------------------------------------------------


def bare_loop(dataset: Trivial, batch_size: int) -> Callable[[], int]:
    def epoch() -> int:
        total = 0
        for start in range(0, len(dataset), batch_size):
            batch = [dataset[i] for i in range(start, min(start + batch_size, len(dataset)))]
            total += len(identity(batch))
        return total

    return epoch


def overhead(names: list[str], runs: int, scale: int) -> list[str]:
    dataset = Trivial(200_000 // scale)
    bare = measure([Entry("bare", bare_loop(dataset, 32), 0)], runs)["bare"]
    entries: list[Entry | None] = [ours(dataset, None, 0, 32, collate_fn=identity)]
    entries += [torch_entry(dataset, 0, 32, collate_fn=identity), rs_entry(dataset, 0, 32)]
    for name in names:
        entries.append(ours(dataset, name, 2, 32, collate_fn=identity))
    entries += [torch_entry(dataset, 2, 32, collate_fn=identity), rs_entry(dataset, 2, 32)]
    return table(
        "1. Loader overhead: trivial items, batch 32, identity collate",
        entries,
        runs,
        ("bare Python loop over `__getitem__`", bare),
    )


def io_bound(names: list[str], runs: int, quick: bool) -> list[str]:
    lines: list[str] = []
    for workers in (8, 32):
        dataset = Sleepy(workers * 32 * (1 if quick else 16), 0.002)
        ideal = [workers / 0.002] * runs
        entries: list[Entry | None] = [
            ours(dataset, name, workers, 32, collate_fn=identity) for name in names
        ]
        entries += [
            torch_entry(dataset, workers, 32, collate_fn=identity),
            rs_entry(dataset, workers, 32),
        ]
        lines += table(
            f"2. I/O-bound: each item sleeps 2 ms (GIL released), batch 32, {workers} workers",
            entries,
            runs,
            (f"ideal ({workers} / 2 ms)", ideal),
        )
    return lines


def numpy_items(names: list[str], runs: int, scale: int) -> list[str]:
    lines: list[str] = []
    for title, shape, dtype, length in (
        ("3x64x64 float32", (3, 64, 64), "float32", 8192),
        ("224x224x3 uint8", (224, 224, 3), "uint8", 2048),
    ):
        dataset = Arrays(length // scale, shape, dtype)
        entries: list[Entry | None] = [ours(dataset, name, 2, 32) for name in names]
        entries += [torch_entry(dataset, 2, 32), rs_entry(dataset, 2, 32, np.stack)]
        lines += table(
            f"3. NumPy items {title}, batch 32, default collate (dataloader-rs: np.stack), "
            "2 workers",
            entries,
            runs,
        )
    return lines


def startup(names: list[str], runs: int) -> list[str]:
    dataset = Trivial(10)
    lines: list[str] = []
    for items, title in (
        (None, "5a. Time to first batch: a new loader, 2 workers, batch 1"),
        (10, "5b. Start-up: a new loader's whole epoch of 10 items, 2 workers, batch 1"),
    ):
        makers: list[tuple[str, str, Callable[[], Any]]] = [
            (
                f"{name}, 2 workers",
                "",
                lambda name=name: DataLoader(
                    dataset, num_workers=2, backend=name, collate_fn=identity
                ),
            )
            for name in names
        ]
        if torch_data is not None:
            makers.append(
                (
                    "torch DataLoader, 2 workers",
                    "torch",
                    lambda: torch_data.DataLoader(dataset, num_workers=2, collate_fn=identity),
                )
            )
        if dataloader_rs is not None:
            rs_dataset = for_dataloader_rs(dataset)
            makers.append(
                (
                    "dataloader-rs, 2 workers",
                    "dataloader-rs",
                    lambda rs_dataset=rs_dataset: dataloader_rs.PyDataloader(
                        rs_dataset, num_workers=2
                    ),
                )
            )
        lines += startup_table(title, makers, runs, items)
    return lines


def attach_once(runs: int, scale: int) -> list[str]:
    """The Rust pool with its threads attached once, against a new thread state per job."""
    dataset = Trivial(100_000 // scale)
    entries = []
    for mode in ("once", "per-task"):
        os.environ["DATALOADER_RUST_ATTACH"] = mode
        entry = ours(dataset, "rust", 2, 32, collate_fn=identity)
        entry.label = f"rust, 2 workers, attach {mode}"
        entry.epoch()  # the mode is read when the (persistent) pool is made: now
        entries.append(entry)
    os.environ.pop("DATALOADER_RUST_ATTACH")
    rates = measure(entries, runs)
    once, per_task = (rates[e.label] for e in entries)
    per_batch = statistics.median(
        (32 / b - 32 / a) * 1e6 for a, b in zip(once, per_task, strict=True)
    )
    lines = table(
        "7. Attach once vs a new thread state per job: trivial items, batch 32", [], runs
    )[:3]
    for entry in entries:
        mine = rates[entry.label]
        lines.append(
            f"| {entry.label} | {statistics.median(mine):,.0f} | {min(mine):,.0f} | "
            f"{max(mine):,.0f} | {ratio(mine, once)} | | |"
        )
    lines.append(f"\nPer-task attach costs {per_batch:.1f} µs more per batch (median).")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed epochs per figure (default 5)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes: proves the runner works")
    parser.add_argument(
        "--backends",
        default=None,
        help="comma-separated backends (default: the project's installed ones)",
    )
    parser.add_argument("--only", default="1,2,3,5,7", help="workloads to run (default all)")
    args = parser.parse_args()
    installed = dataloader_api.backends()
    names = args.backends.split(",") if args.backends else [n for n in PREFERENCE if n in installed]
    for name in names:
        dataloader_api.resolve_backend(name)  # a clear error for a name that is not installed
    runs = 1 if args.quick else args.runs
    scale = 20 if args.quick else 1
    only = set(args.only.split(","))

    build = "t" if sysconfig.get_config_var("Py_GIL_DISABLED") else ""
    peers = [
        f"torch {importlib.metadata.version('torch')}" if torch_data else None,
        f"dataloader-rs {importlib.metadata.version('dataloader-rs')}" if dataloader_rs else None,
    ]
    print(
        f"machine: {os.cpu_count()} cores, {_cpu_model()}, CPython {platform.python_version()}"
        f"{build}; ours: {', '.join(names)}; peers: {', '.join(p for p in peers if p) or 'none'}"
    )
    lines: list[str] = []
    if "1" in only:
        lines += overhead(names, runs, scale)
    if "2" in only:
        lines += io_bound(names, runs, args.quick)
    if "3" in only:
        lines += numpy_items(names, runs, scale)
    if "5" in only:
        lines += startup(names, runs)
    if "7" in only and "rust" in names:
        lines += attach_once(runs, scale)
    print("\n".join(lines))
    for name, module in (("torch", torch_data), ("dataloader-rs", dataloader_rs)):
        if module is None:
            print(f"\n{name} is not installed here: its rows are missing.")


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


if __name__ == "__main__":
    main()
