"""The main job: load the built-in synthetic dataset through every installed backend.

    python -m dataloader_api.demo [--items N] [--workers N] [--epochs N] [--read-latency S]
                                  [--images N] [--backends a,b]

Prints one row per backend (and one for loading on the calling thread): the
interpreter; items per second, the median over the epochs and their spread
(slowest to fastest); the first batch of a new loader (the median of
``FRESH_LOADERS``, made once the backend is loaded); and the row's start-up,
the first loader's first batch, which also pays what a process pays once
(imports, loading the backend, starting its threads). Then the same rows for
JPEG photos through an image pipeline (decode, random resized crop, flip,
normalize), when Pillow is installed. The machine's load is printed before
and after, with a note when it was too busy for the figures to mean much.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import statistics
import sys
import sysconfig
import time
from collections.abc import Callable, Sequence
from typing import Any

from ._common.backend_registry import backends
from ._datasets import SyntheticImages
from ._loader import DataLoader

#: New loaders whose first batch is timed per row (their median is shown).
FRESH_LOADERS = 5


def interpreter() -> str:
    build = "t" if sysconfig.get_config_var("Py_GIL_DISABLED") else ""
    return f"{platform.python_implementation()} {platform.python_version()}{build}"


@dataclasses.dataclass(frozen=True)
class Row:
    """One row's figures: items/s of each epoch, first batches of new loaders, and the
    start-up (the first loader's first batch, with the process's one-time costs)."""

    name: str
    workers: int
    rates: list[float]
    first_batches: list[float]
    startup: float


def measure(
    dataset: Any,
    backend: str | None,
    workers: int,
    batch_size: int,
    epochs: int,
    clock: Callable[[], float] = time.perf_counter,
    **options: Any,
) -> tuple[list[float], list[float], float]:
    """(items/s of each of ``epochs``, first batches of ``FRESH_LOADERS`` new loaders,
    the start-up: the first of all, before any other loader of this row)."""

    def make() -> DataLoader[Any]:
        return DataLoader(
            dataset, batch_size=batch_size, num_workers=workers, backend=backend, seed=0, **options
        )

    def first_batch() -> float:
        start = clock()
        iterator = iter(make())
        next(iterator)
        took = clock() - start
        iterator.close()
        return took

    startup = first_batch()
    first_batches = [first_batch() for _ in range(FRESH_LOADERS)]
    loader = make()
    rates = []
    for _ in range(epochs):
        start = clock()
        count = sum(len(labels) for _, labels in loader)
        rates.append(count / (clock() - start))
    return rates, first_batches, startup


def load_note(before: float, after: float) -> str:
    """The machine's load around the run, and whether it was too busy to compare."""
    cores = os.cpu_count() or 1
    line = f"machine: {cores} cores, load {before:.1f} before and {after:.1f} after"
    if max(before, after) > cores:
        line += (
            f"\nnote: the machine was busy (load above its {cores} cores): other work took "
            "CPU from these rows, so their figures and the ratios between them mean little; "
            "run again on a quiet machine"
        )
    return line


def jpeg_photos(count: int) -> list[tuple[bytes, int]]:
    """(JPEG bytes, label) items of 375x500: smooth colour with noise, as photos compress."""
    import io

    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:375, 0:500]
    items = []
    for i in range(count):
        scene = np.stack([(x + 7 * i) % 256, (y + 3 * i) % 256, (x + y + i) % 256], axis=2)
        pixels = np.clip(scene + rng.normal(0, 12, scene.shape), 0, 255).astype(np.uint8)
        buffer = io.BytesIO()
        Image.fromarray(pixels).save(buffer, "JPEG", quality=90)
        items.append((buffer.getvalue(), i % 1000))
    return items


def image_options() -> dict[str, Any]:
    from . import transforms as T

    pipeline = T.Compose(
        [T.Decode(), T.ToRGB(), T.RandomResizedCrop(224), T.RandomHFlip(), T.ToFloat(),
         T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]), T.ToCHW()],
        on=0,
    )  # fmt: skip
    return {"transform": pipeline, "collate_fn": T.ImageCollate(on=0)}


def print_rows(rows: list[Row]) -> None:
    header = (
        f"{'backend':<18} {'interpreter':<18} {'workers':>7} {'items/s':>10} "
        f"{'spread':>17} {'first batch':>12} {'start-up':>11}"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        spread = f"{min(row.rates):,.0f}-{max(row.rates):,.0f}"
        first = statistics.median(row.first_batches)
        print(
            f"{row.name:<18} {interpreter():<18} {row.workers:>7} "
            f"{statistics.median(row.rates):>10,.0f} {spread:>17} {first * 1e3:>9.2f} ms "
            f"{row.startup * 1e3:>8.1f} ms"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m dataloader_api.demo", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--items", type=int, default=4096, help="dataset length (default 4096)")
    parser.add_argument("--workers", type=int, default=2, help="worker threads (default 2)")
    parser.add_argument("--batch-size", type=int, default=64, help="batch size (default 64)")
    parser.add_argument("--epochs", type=int, default=3, help="timed epochs per row (default 3)")
    parser.add_argument(
        "--read-latency",
        type=float,
        default=0.0002,
        help="simulated storage latency per item in seconds (default 0.0002; 0 for none)",
    )
    parser.add_argument(
        "--images", type=int, default=128, help="JPEG photos for the image rows (0: none)"
    )
    parser.add_argument(
        "--backends", default=None, help="comma-separated backends (default: every installed one)"
    )
    args = parser.parse_args(argv)
    for name in ("items", "workers", "batch_size", "epochs"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.read_latency < 0:
        parser.error("--read-latency must be non-negative")
    if args.images < 0:
        parser.error("--images must be non-negative")

    dataset = SyntheticImages(args.items, shape=(3, 32, 32), read_latency=args.read_latency)
    installed = backends()
    if args.backends is not None:
        chosen = [name for name in args.backends.split(",") if name]
        unknown = [name for name in chosen if name not in installed]
        if unknown or not chosen:
            parser.error(
                f"--backends: {', '.join(unknown) or repr(args.backends)} is not an installed "
                f"backend; installed: {', '.join(installed) or 'none'}"
            )
        installed = chosen
    print(
        f"dataset: SyntheticImages({args.items} items of 3x32x32 float32, "
        f"{args.read_latency * 1e3:g} ms simulated read each), batch_size={args.batch_size}, "
        f"{args.workers} workers, median of {args.epochs} epochs; "
        f"installed backends: {', '.join(installed) or 'none'}"
    )
    load_before = os.getloadavg()[0]
    rows = [Row("(calling thread)", 0, *measure(dataset, None, 0, args.batch_size, args.epochs))]
    for name in installed:
        figures = measure(dataset, name, args.workers, args.batch_size, args.epochs)
        rows.append(Row(name, args.workers, *figures))
    print_rows(rows)
    if args.images and installed:
        show_images(args.images, installed, args.workers, args.epochs)
    print(
        f"\nitems/s: median of {args.epochs} epochs, spread from the slowest to the fastest; "
        f"first batch: median of {FRESH_LOADERS} new loaders; start-up: the row's first "
        "loader, with the one-time costs (imports, the backend, its threads)"
    )
    print(load_note(load_before, os.getloadavg()[0]))
    if not installed:
        print("no backend is installed: only the calling-thread row was measured", file=sys.stderr)
        return 1
    return 0


def show_images(count: int, installed: list[str], workers: int, epochs: int) -> None:
    try:
        import PIL  # noqa: F401
    except ImportError:
        print('\nno image rows: Pillow is not installed (pip install "dataloader-api[images]")')
        return
    photos, options = jpeg_photos(count), image_options()
    print(
        f"\nimages: {count} JPEG photos of 500x375 -> decode, random resized crop 224, random "
        "flip, normalize, CHW float32 (natively on rust, else Pillow + NumPy), batch_size=32"
    )
    rows = [Row("(calling thread)", 0, *measure(photos, None, 0, 32, epochs, **options))]
    for name in installed:
        rows.append(Row(name, workers, *measure(photos, name, workers, 32, epochs, **options)))
    print_rows(rows)


if __name__ == "__main__":
    raise SystemExit(main())
