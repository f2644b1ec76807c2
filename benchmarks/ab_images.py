"""Two builds of the rust backend side by side on workload 9's native rows:
run once per build, in turns, each with that build first on ``PYTHONPATH``.

    PYTHONPATH=/path/to/old:. python benchmarks/ab_images.py 2 5
    PYTHONPATH=. python benchmarks/ab_images.py 2 5

Prints the worker count and the median images/s of the timed epochs (after a
warm-up epoch), with persistent workers, as workload 9's rows run them.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from image_workload import NORMALIZE
from photos import JpegFiles, write_jpegs

from dataloader_api import DataLoader
from dataloader_api import transforms as T


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workers", type=int, help="worker threads (1 or more)")
    parser.add_argument("epochs", type=int, help="timed epochs (1 or more)")
    args = parser.parse_args()
    if args.workers < 1 or args.epochs < 1:
        parser.error(f"workers and epochs should be 1 or more, got {args.workers}, {args.epochs}")
    crop = [T.Decode(), T.ToRGB(), T.RandomResizedCrop(224), T.RandomHFlip()]
    recipe = T.Compose([*crop, T.ToFloat(), NORMALIZE, T.ToCHW()], on=0)
    with tempfile.TemporaryDirectory() as folder:
        _, paths = write_jpegs(Path(folder), 512)
        loader = DataLoader(JpegFiles([str(p) for p in paths]), batch_size=64,
                            num_workers=args.workers, backend="rust", persistent_workers=True,
                            seed=0, transform=recipe, collate_fn=T.ImageCollate(on=0))  # fmt: skip
        for _ in loader:  # warm-up
            pass
        rates = []
        for _ in range(args.epochs):
            start, count = time.perf_counter(), 0
            for images, _ in loader:
                count += len(images)
            rates.append(count / (time.perf_counter() - start))
    print(args.workers, round(statistics.median(rates)))


if __name__ == "__main__":
    main()
