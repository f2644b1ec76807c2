"""Side-by-side loader benchmarks: every installed backend, and torch's DataLoader
when torch is importable, measured in one run on one machine.

    python benchmarks/run.py [--runs N] [--quick]

Each figure is the median of --runs timed epochs after one warm-up epoch,
with min and max; ratios are computed run by run against the reference named
in each table. Nothing here asserts anything about speed.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sysconfig
import time
from collections.abc import Callable
from typing import Any

import dataloader_api
from dataloader_api import DataLoader
from dataloader_api.registry import PREFERENCE


class Trivial:
    """``__getitem__`` returns the index: what is left is the loader's own cost."""

    def __init__(self, length: int) -> None:
        self.length = length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> int:
        return index


class Sleepy(Trivial):
    """Each item waits ``seconds`` with the GIL released, like a read from storage."""

    def __init__(self, length: int, seconds: float) -> None:
        super().__init__(length)
        self.seconds = seconds

    def __getitem__(self, index: int) -> int:
        time.sleep(self.seconds)
        return index


def identity(batch: Any) -> Any:
    return batch


def timed(epoch: Callable[[], int], runs: int) -> list[float]:
    """Items per second of ``runs`` epochs, after one warm-up epoch."""
    epoch()
    rates = []
    for _ in range(runs):
        start = time.perf_counter()
        items = epoch()
        rates.append(items / (time.perf_counter() - start))
    return rates


def bare_loop(dataset: Trivial, batch_size: int) -> Callable[[], int]:
    def epoch() -> int:
        count = 0
        for start in range(0, len(dataset), batch_size):
            batch = [dataset[i] for i in range(start, min(start + batch_size, len(dataset)))]
            count += len(identity(batch))
        return count

    return epoch


def ours(
    dataset: Trivial,
    backend: str | None,
    workers: int,
    batch_size: int,
    prefetch: int | None = None,
) -> Callable[[], int]:
    loader = DataLoader(
        dataset,
        batch_size=batch_size,
        num_workers=workers,
        collate_fn=identity,
        backend=backend,
        prefetch_factor=prefetch,
        persistent_workers=workers > 0,
    )
    return lambda: sum(len(batch) for batch in loader)


def torch_loader(
    dataset: Trivial, workers: int, batch_size: int, prefetch: int | None = None
) -> Callable[[], int] | None:
    try:
        from torch.utils.data import DataLoader as TorchDataLoader
    except ImportError:
        return None
    loader = TorchDataLoader(
        dataset,
        batch_size=batch_size,
        num_workers=workers,  # type: ignore[arg-type]
        collate_fn=identity,
        prefetch_factor=prefetch,
        persistent_workers=workers > 0,
    )
    return lambda: sum(len(batch) for batch in loader)


def row(name: str, rates: list[float], reference: list[float] | None, unit: str = "items/s") -> str:
    ratio = ""
    if reference:
        ratios = [a / b for a, b in zip(rates, reference, strict=True)]
        ratio = f"{statistics.median(ratios):.2f}x"
    return (
        f"| {name} | {statistics.median(rates):,.0f} | {min(rates):,.0f} | "
        f"{max(rates):,.0f} | {ratio} |"
    )


def header(title: str, reference: str) -> list[str]:
    return [
        f"\n### {title}\n",
        f"| loader | median items/s | min | max | vs {reference} |",
        "|---|---:|---:|---:|---:|",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed epochs per figure (default 5)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes: proves the runner works")
    parser.add_argument(
        "--backends",
        default=None,
        help="comma-separated backends (default: the project's installed ones)",
    )
    args = parser.parse_args()
    installed = dataloader_api.backends()
    names = args.backends.split(",") if args.backends else [n for n in installed if n in PREFERENCE]
    for name in names:
        dataloader_api.resolve_backend(name)  # a clear error for a name that is not installed
    runs = 1 if args.quick else args.runs
    scale = 20 if args.quick else 1

    build = "t" if sysconfig.get_config_var("Py_GIL_DISABLED") else ""
    print(
        f"machine: {os.cpu_count()} cores, {platform.processor() or platform.machine()}, "
        f"CPython {platform.python_version()}{build}; backends: {', '.join(names)}"
    )
    missing_torch = torch_loader(Trivial(1), 0, 1) is None

    lines = header("1. Loader overhead: trivial items, batch 32, identity collate", "bare loop")
    dataset = Trivial(200_000 // scale)
    bare = timed(bare_loop(dataset, 32), runs)
    lines.append(row("bare Python loop over `__getitem__`", bare, bare))
    for workers in (0, 2):
        if workers == 0:  # num_workers=0 never touches a backend
            rates = timed(ours(dataset, None, 0, 32), runs)
            lines.append(row("dataloader_api, calling thread", rates, bare))
        for name in names if workers else []:
            lines.append(row(f"{name}, 2 workers", timed(ours(dataset, name, 2, 32), runs), bare))
        peer = torch_loader(dataset, workers, 32)
        if peer is not None:
            lines.append(row(f"torch DataLoader, {workers} workers", timed(peer, runs), bare))

    lines += header("2. I/O-bound: each item sleeps 2 ms (GIL released), batch 32", "ideal")
    for workers in (8, 32):
        dataset = Sleepy(workers * 32 * (1 if args.quick else 16), 0.002)
        ideal = [workers / 0.002] * runs
        for name in names:
            lines.append(
                row(
                    f"{name}, {workers} workers (ideal {ideal[0]:,.0f}/s)",
                    timed(ours(dataset, name, workers, 32), runs),
                    ideal,
                )
            )

    print("\n".join(lines))
    if missing_torch:
        print("\ntorch is not installed here: its rows are missing.")


if __name__ == "__main__":
    main()
