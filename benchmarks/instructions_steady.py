"""Instructions per batch of a persistent loader in its steady state (issue 45):
after 4 warm epochs, when caller-runs has settled on who makes the batches.
Trivial items (20,000, batch 32, identity collate) under ``valgrind
--tool=callgrind``: a run of ``EPOCHS`` more epochs less a run of none, over
their batches, so start-up and exit cancel out.

    python benchmarks/instructions_steady.py [BACKEND]   # default: threads

Run as ``python instructions_steady.py --child WORKERS EPOCHS BACKEND`` it is
the child. Not in ``run.py``: a comparison of two commits, run in each tree.
"""

from __future__ import annotations

import sys

from instructions import callgrind_total

LENGTH, BATCH, EPOCHS, WARM = 20_000, 32, 16, 4


def identity(batch: object) -> object:
    return batch


def child(workers: int, epochs: int, backend: str) -> None:
    from synthetic import Trivial

    from dataloader_api import DataLoader

    persistent = {"prefetch_factor": 4, "persistent_workers": True} if workers else {}
    loader = DataLoader(
        Trivial(LENGTH), batch_size=BATCH, num_workers=workers,
        backend=backend if workers else None, collate_fn=identity, **persistent,
    )  # fmt: skip
    for _ in range(WARM + epochs):
        for _ in loader:
            pass


def main(backend: str) -> None:
    batches = EPOCHS * -(-LENGTH // BATCH)
    for workers in (0, 2):
        counts = [
            callgrind_total([__file__, "--child", str(workers), str(epochs), backend])
            for epochs in (0, EPOCHS)
        ]
        label = f"{backend}, {workers} workers" if workers else "calling thread"
        print(f"{label}: {(counts[1] - counts[0]) / batches:,.0f} instructions per batch")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    else:
        main(sys.argv[1] if len(sys.argv) > 1 else "threads")
