"""A process forked from one with loaders (torch's worker processes, multiprocessing)
inherits the pools but none of their threads: closing them there must not wait for
those threads, and iterating a persistent loader there must raise, not hang."""

from __future__ import annotations

import gc
import os
import signal
import time
from collections.abc import Callable

import pytest

import dataloader_api
from dataloader_api import DataLoader

SHIPPED = [name for name in ("threads", "rust", "cffi") if name in dataloader_api.backends()]

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork"),
    # Python 3.12+ warns about fork() in a process with threads: that is the point here.
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]


def in_child(body: Callable[[], int]) -> tuple[int, float]:
    """Run ``body`` in a forked child (killed after 20 s): its exit code, and seconds."""
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        signal.alarm(20)
        code = 1
        try:
            code = body()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), time.monotonic() - started


def persistent(backend: str) -> DataLoader:
    loader = DataLoader(
        list(range(40)), batch_size=4, num_workers=2, backend=backend, persistent_workers=True
    )
    assert sum(len(b) for b in loader) == 40
    return loader


@pytest.mark.parametrize(
    "backend",
    [
        pytest.param(
            name,
            marks=pytest.mark.xfail(
                reason="known: in the full suite a forked child freeing threads-backend "
                "pools took 6-14 s in CI (alone it takes 0.02 s); not yet understood",
                strict=False,
            ),
        )
        if name == "threads"
        else name
        for name in SHIPPED
    ],
)
def test_a_child_frees_inherited_pools_without_waiting_for_their_threads(backend):
    # Garbage in cycles: the child's gc.collect() closes both pools. Each close used
    # to wait 2 s for threads that only the parent has.
    cycle: list[object] = [persistent(backend), persistent(backend)]
    cycle.append(cycle)
    del cycle
    gc.disable()
    try:

        def collect() -> int:
            gc.collect()
            return 0

        code, seconds = in_child(collect)
    finally:
        gc.enable()
        gc.collect()
    assert code == 0
    assert seconds < 2.0, f"the child took {seconds:.2f} s to free two inherited pools"


@pytest.mark.parametrize("backend", SHIPPED)
def test_a_child_iterating_an_inherited_persistent_loader_gets_an_error(backend):
    loader = persistent(backend)

    def iterate() -> int:
        try:
            next(iter(loader))
        except RuntimeError as error:
            return 0 if "forked child" in str(error) else 2
        return 3

    code, _ = in_child(iterate)
    loader.close()
    assert code == 0


@pytest.mark.parametrize("backend", SHIPPED)
def test_a_child_runs_an_inherited_loader_without_persistent_workers(backend):
    loader = DataLoader(list(range(40)), batch_size=4, num_workers=2, backend=backend)
    assert sum(len(b) for b in loader) == 40

    def iterate() -> int:
        return 0 if sum(len(b) for b in loader) == 40 else 2

    code, _ = in_child(iterate)
    assert code == 0
