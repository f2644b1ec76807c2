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
import sys
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
try:
    from spdl.pipeline import PipelineBuilder
except ImportError:
    PipelineBuilder = None
try:
    import grain.python as grain
except ImportError:
    grain = None


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


class PythonWork(Trivial):
    """About 1 ms of pure-Python bytecode per item (no GIL release)."""

    def __init__(self, length: int, loops: int) -> None:
        super().__init__(length)
        self.loops = loops
        self.args = (length, loops)

    def __getitem__(self, index: int) -> Any:
        total = index
        for i in range(self.loops):
            total = (total * 31 + i) % 1_000_003
        return total


class Blobs(Trivial):
    """An in-memory dataset of ``megabytes`` MiB in 4 KiB ``bytes`` objects."""

    def __init__(self, megabytes: int) -> None:
        count = megabytes * 256
        super().__init__(count)
        self.blobs = [bytes([i % 251]) * 4096 for i in range(count)]
        self.args = (megabytes,)

    def __getitem__(self, index: int) -> Any:
        return len(self.blobs[index])


def pss_kib(pid: int) -> int:
    """Proportional set size: shared pages split between the processes sharing them."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_pss_mib() -> float:
    """PSS of this process and its children (torch's worker processes)."""
    me = os.getpid()
    pids = [me]
    try:
        with open(f"/proc/{me}/task/{me}/children") as children:
            pids += [int(p) for p in children.read().split()]
    except OSError:
        pass
    return sum(pss_kib(p) for p in pids) / 1024


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


def spdl_entry(
    dataset: Any, workers: int, batch_size: int, collate: Any = None, limit: int | None = None
) -> Entry | None:
    """SPDL's thread pipeline, batch-level like our jobs: indices are grouped into
    batches, and each batch is fetched (and collated) by one task, in input order."""
    if PipelineBuilder is None or workers == 0:
        return None

    def fetch(indices: list[int]) -> list[Any]:
        return [dataset[i] for i in indices]

    length = len(dataset) if limit is None else min(limit, len(dataset))

    def epoch() -> int:
        builder = (
            PipelineBuilder()
            .add_source(range(length))
            .aggregate(batch_size)
            .pipe(fetch, concurrency=workers, output_order="input")
        )
        if collate is not None:
            builder = builder.pipe(collate, concurrency=workers, output_order="input")
        pipeline = builder.add_sink(3).build(num_threads=workers)
        total = 0
        with pipeline.auto_stop():
            for batch in pipeline:
                total += len(batch)
        return total

    return Entry(f"SPDL pipeline, {workers} threads", epoch, workers, "spdl")


class _GrainSource:
    """The dataset as Grain's random-access source (picklable for its worker processes)."""

    def __init__(self, dataset: Any) -> None:
        self.dataset = dataset

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> Any:
        return self.dataset[index]


def grain_entry(dataset: Any, workers: int, batch_size: int, limit: int) -> Entry | None:
    """Grain's DataLoader (worker processes), batches stacked by its Batch op, over the
    first ``limit`` records: it is slow enough here that whole epochs would take minutes
    (items/s does not depend on the epoch's length)."""
    if grain is None:
        return None
    loader = grain.DataLoader(
        data_source=_GrainSource(dataset),
        sampler=grain.IndexSampler(min(limit, len(dataset)), shuffle=False, num_epochs=1, seed=0),
        operations=[grain.Batch(batch_size=batch_size)],
        worker_count=workers,
    )
    return Entry(f"Grain DataLoader, {workers} workers", count(loader), workers, "grain")


# -- measuring and reporting -------------------------------------------------

#: every table of this run, as data (for --json and benchmarks/report.py)
RESULTS: list[dict[str, Any]] = []


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
    # A reference given without figures is one of the table's own rows.
    ref_values = reference[1] if reference else None
    if reference and not ref_values:
        ref_values = rates.get(reference[0])
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
    RESULTS.append(
        {
            "title": title,
            "unit": unit,
            "rows": [
                {
                    "label": e.label,
                    "workers": e.workers,
                    "peer": e.peer,
                    "median": statistics.median(rates[e.label]),
                    "min": min(rates[e.label]),
                    "max": max(rates[e.label]),
                    "runs": rates[e.label],
                }
                for e in present
            ],
            "markdown": lines,  # filled in below
            "reference": (
                {"label": ref_name, "median": statistics.median(ref_values), "runs": ref_values}
                if ref_name and ref_values
                else None
            ),
        }
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
        vs_ref = ratio(mine, ref_values) if ref_values else ""
        lines.append(
            f"| {entry.label} | {statistics.median(mine):,.0f} | {min(mine):,.0f} | "
            f"{max(mine):,.0f} | {vs_ref} | {vs_torch} | {vs_rs} |"
        )
    return lines


def startup_table(
    title: str, makers: list[tuple[str, str, Callable[[], Any]]], runs: int, items: int | None
) -> list[str]:
    """Milliseconds from a new loader to its first batch (``items=None``) or to the end
    of its epoch; ratios are peer time / our time, so above 1 means ours is faster.

    Torch's rounds run after everyone else's: each of its loaders forks, and after a
    fork the parent's next writes fault on copy-on-write pages, which slowed whichever
    loader ran next (ours from 0.38 to 0.84 ms here, dataloader-rs from 0.10 to 0.18)."""
    times: dict[str, list[float]] = {label: [] for label, _, _ in makers}
    forking = [m for m in makers if m[1] == "torch"]
    for group in ([m for m in makers if m[1] != "torch"], forking):
        for round_ in range(runs + 1):
            for label, _, make in group:
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
    lines = [
        f"\n### {title}\n",
        "| loader | median ms | min | max | torch ÷ this | dataloader-rs ÷ this |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    RESULTS.append(
        {
            "title": title,
            "unit": "ms",  # lower is better
            "rows": [
                {
                    "label": label,
                    "workers": 2,
                    "peer": peer,
                    "median": statistics.median(times[label]),
                    "min": min(times[label]),
                    "max": max(times[label]),
                    "runs": times[label],
                }
                for label, peer, _ in makers
            ],
        }
    )
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
    entries += [
        spdl_entry(dataset, 2, 32, limit=16384 // scale),  # slow here: see grain_entry
        grain_entry(dataset, 0, 32, 8192 // scale),
        grain_entry(dataset, 2, 32, 8192 // scale),
    ]
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
            spdl_entry(dataset, workers, 32),
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
        entries += [
            torch_entry(dataset, 2, 32),
            rs_entry(dataset, 2, 32, np.stack),
            spdl_entry(dataset, 2, 32, np.stack),
            grain_entry(dataset, 2, 32, 256 // scale),
        ]
        lines += table(
            f"3. NumPy items {title}, batch 32, default collate (dataloader-rs: np.stack), "
            "2 workers",
            entries,
            runs,
        )
    return lines


def loops_for_a_millisecond() -> int:
    """How many PythonWork loop turns take about 1 ms on this interpreter."""
    probe = PythonWork(1, 100_000)
    start = time.perf_counter()
    probe[0]
    return max(1, int(100_000 * 0.001 / (time.perf_counter() - start)))


def cpu_bound(names: list[str], runs: int, scale: int) -> list[str]:
    loops = loops_for_a_millisecond()
    dataset = PythonWork(max(64, 1024 // scale), loops)
    entries: list[Entry | None] = [ours(dataset, None, 0, 8, collate_fn=identity)]
    for workers in range(1, (os.cpu_count() or 2) + 1):
        entries += [ours(dataset, name, workers, 8, collate_fn=identity) for name in names]
        entries += [
            torch_entry(dataset, workers, 8, collate_fn=identity),
            rs_entry(dataset, workers, 8),
        ]
    gil = "GIL build" if sys_gil_enabled() else "free-threaded build: no GIL"
    return table(
        f"4. CPU-bound: about 1 ms of pure Python per item ({loops:,} loop turns), batch 8, "
        f"{gil}; 1 to nproc workers",
        entries,
        runs,
        ("dataloader_api, calling thread", []),
    )


def sys_gil_enabled() -> bool:
    import sys

    check = getattr(sys, "_is_gil_enabled", None)
    return True if check is None else bool(check())


def memory(names: list[str], quick: bool) -> list[str]:
    """PSS of the whole process tree after one epoch with 4 workers, over a 1 GiB dataset:
    what each loader adds on top of the memory just before it was made."""
    megabytes = 64 if quick else 1024
    lines = [
        f"\n### 6. Memory: a {megabytes} MiB in-memory dataset (4 KiB bytes objects), "
        "4 workers: PSS of the process and its children after an epoch\n",
        "| loader | PSS before, MiB | after an epoch | added by the loader |",
        "|---|---:|---:|---:|",
    ]
    dataset = Blobs(megabytes)
    makers: list[tuple[str, Callable[[], Any]]] = [
        (
            f"{name}, 4 workers",
            lambda name=name: DataLoader(
                dataset,
                batch_size=256,
                num_workers=4,
                backend=name,
                collate_fn=identity,
                persistent_workers=True,
            ),
        )
        for name in names
    ]
    if torch_data is not None:
        makers.append(
            (
                "torch DataLoader, 4 workers",
                lambda: torch_data.DataLoader(
                    dataset,
                    batch_size=256,
                    num_workers=4,
                    collate_fn=identity,
                    persistent_workers=True,
                ),
            )
        )
    for label, make in makers:
        before = tree_pss_mib()
        loader = make()
        sum(len(batch) for batch in loader)
        after = tree_pss_mib()  # torch's persistent workers are still alive here
        lines.append(f"| {label} | {before:,.0f} | {after:,.0f} | {after - before:+,.0f} |")
        del loader
    if dataloader_rs is not None:
        # Its dataset must be a PyDataset: a second copy, made (and measured) on its own.
        del dataset
        rs_dataset = for_dataloader_rs(Blobs(megabytes))
        before = tree_pss_mib()
        rs_loader = dataloader_rs.PyDataloader(rs_dataset, batch_size=256, num_workers=4)
        sum(len(batch) for batch in rs_loader)
        after = tree_pss_mib()
        lines.append(
            f"| dataloader-rs, 4 workers | {before:,.0f} | {after:,.0f} | {after - before:+,.0f} |"
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


ATTACH_VARIABLES = {"rust": "DATALOADER_RUST_ATTACH", "cffi": "DATALOADER_CFFI_ATTACH"}


def attach_once(names: list[str], runs: int, scale: int) -> list[str]:
    """Native pools with their threads attached once, against a new thread state per job."""
    dataset = Trivial(100_000 // scale)
    entries = []
    for name in [n for n in names if n in ATTACH_VARIABLES]:
        variable = ATTACH_VARIABLES[name]
        for mode in ("once", "per-task"):
            os.environ[variable] = mode
            entry = ours(dataset, name, 2, 32, collate_fn=identity)
            entry.label = f"{name}, 2 workers, attach {mode}"
            entry.epoch()  # the mode is read when the (persistent) pool is made: now
            entries.append(entry)
        os.environ.pop(variable)
    if not entries:
        return []
    rates = measure(entries, runs)
    lines = table(
        "7. Attach once vs a new thread state per job: trivial items, batch 32", [], runs
    )[:3]
    for once, per_task in zip(entries[::2], entries[1::2], strict=True):
        a, b = rates[once.label], rates[per_task.label]
        for entry, mine in ((once, a), (per_task, b)):
            lines.append(
                f"| {entry.label} | {statistics.median(mine):,.0f} | {min(mine):,.0f} | "
                f"{max(mine):,.0f} | {ratio(mine, a)} | | |"
            )
        per_batch = statistics.median((32 / y - 32 / x) * 1e6 for x, y in zip(a, b, strict=True))
        name = once.label.split(",")[0]
        lines.append(
            f"| {name}: per-task attach costs {per_batch:.1f} µs more per batch | | | | | | |"
        )
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
    parser.add_argument("--only", default="1,2,3,4,5,6,7", help="workloads to run (default all)")
    parser.add_argument("--json", default=None, help="also write the results to this file")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
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
        f"spdl {importlib.metadata.version('spdl')}" if PipelineBuilder else None,
        f"grain {importlib.metadata.version('grain')}" if grain else None,
    ]
    print(
        f"machine: {os.cpu_count()} cores, {_cpu_model()}, CPython {platform.python_version()}"
        f"{build}; ours: {', '.join(names)}; peers: {', '.join(p for p in peers if p) or 'none'}"
    )
    lines: list[str] = []

    def emit(new: list[str]) -> None:
        print("\n".join(new))  # as each workload ends: a long run shows progress
        lines.extend(new)

    if "1" in only:
        emit(overhead(names, runs, scale))
    if "2" in only:
        emit(io_bound(names, runs, args.quick))
    if "3" in only:
        emit(numpy_items(names, runs, scale))
    if "4" in only:
        emit(cpu_bound(names, runs, scale))
    if "5" in only:
        emit(startup(names, runs))
    if "6" in only:
        emit(memory(names, args.quick))
    if "7" in only:
        emit(attach_once(names, runs, scale))
    if args.json:
        import json

        machine = (
            f"{os.cpu_count()} cores, {_cpu_model()}, CPython {platform.python_version()}{build}"
        )
        with open(args.json, "w") as out:
            json.dump(
                {
                    "interpreter": f"{platform.python_version()}{build}",
                    "machine": machine,
                    "peers": [p for p in peers if p],
                    "tables": RESULTS,
                    "markdown": lines,
                    "missing": [name for name, module in PEERS if module is None],
                },
                out,
                indent=1,
            )
    for name, module in PEERS:
        if module is None:
            print(f"\n{name} is not installed here: its rows are missing.")


PEERS = [
    ("torch", torch_data),
    ("dataloader-rs", dataloader_rs),
    ("SPDL", PipelineBuilder),
    ("Grain", grain),
]


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
