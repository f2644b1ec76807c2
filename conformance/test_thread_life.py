"""Property 13: a worker thread's life is as safe as a Python thread's.

Its stack is at least what a ``threading.Thread`` started now gets
(``PoolSpec.stack_size``): items that need a deep stack (NumPy's LU on
500x500 runs OpenBLAS's parallel ``dgetrf``, which needs more than 2 MiB) run
as they do on Python's threads. Its end never crashes: a ``threading.local()``
value freed when the thread ends, whose destructor takes the interpreter again
through the gilstate API (a ctypes callback here; pybind11 objects such as
torch's, pyarrow's), is freed safely, whether the pool ends with its epoch,
with ``close()`` of a persistent loader, or not at all before interpreter exit.
Each scenario runs in its own process: a failure is a crash.
"""

from __future__ import annotations

import os
import textwrap
import threading

import pytest
from support import run_clean_child

from dataloader_api import DataLoader
from dataloader_api.testing import stack_size_of_this_thread

# threads ending: nox -s tests_under_load runs it beside a CPU load
pytestmark = pytest.mark.timing

# A value whose destructor calls back into Python from C, as pybind11 and
# pyarrow destructors do (PyGILState_Ensure/Release on the freeing thread).
THREAD_END_PRELUDE = textwrap.dedent("""
    import ctypes, sys, threading
    from dataloader_api import DataLoader, release_idle_workers

    libc = ctypes.CDLL(None)
    COMPARE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
    freed = []

    class CallsBackWhenFreed:
        def __del__(self):
            values = (ctypes.c_int * 2)(2, 1)
            libc.qsort(values, 2, ctypes.sizeof(ctypes.c_int), COMPARE(lambda a, b: 0))
            freed.append(threading.get_ident())

    local = threading.local()

    class HoldsOnePerThread:
        def __len__(self): return 32
        def __getitem__(self, i):
            if not hasattr(local, "held"):
                local.held = CallsBackWhenFreed()
            return i
""")

THREAD_END_SCENARIOS = {
    "the epoch's pool ends with it": (
        "loader = DataLoader(HoldsOnePerThread(), batch_size=2, num_workers=2, backend=BACKEND)\n"
        "assert sum(len(b) for b in loader) == 32\n"
        "release_idle_workers()\n"
        "assert loader.join(30)\n"
        "assert freed, 'no worker thread freed its value: the scenario tested nothing'\n"
    ),
    "close() of a persistent loader": (
        "loader = DataLoader(HoldsOnePerThread(), batch_size=2, num_workers=2,"
        " persistent_workers=True, backend=BACKEND)\n"
        "for _ in range(2):\n"
        "    assert sum(len(b) for b in loader) == 32\n"
        "loader.close()\n"
        "assert loader.join(30)\n"
        "assert freed, 'no worker thread freed its value: the scenario tested nothing'\n"
    ),
    "interpreter exit with the threads alive": (
        "loader = DataLoader(HoldsOnePerThread(), batch_size=2, num_workers=2,"
        " persistent_workers=True, backend=BACKEND)\n"
        "it = iter(loader); next(it)\n"
    ),
}

DEEP_STACK_ITEM = textwrap.dedent("""
    import sys
    import numpy as np
    from dataloader_api import DataLoader

    class Inverts:
        def __len__(self): return 8
        def __getitem__(self, i):
            matrix = np.random.default_rng(i).standard_normal((500, 500))
            return float(np.linalg.inv(matrix)[0, 0])

    expected = [Inverts()[i] for i in range(8)]
    loader = DataLoader(Inverts(), batch_size=2, num_workers=2, backend=BACKEND)
    assert [x for batch in loader for x in batch.tolist()] == expected
""")


def run_scenario(backend: str, body: str) -> None:
    # The workers' own thread ends: with caller-runs the consumer may make batches
    # too, and what it holds lives in the main thread until interpreter exit.
    env = {**os.environ, "DATALOADER_CALLER_RUNS": "off"}
    run_clean_child(f"BACKEND = {backend!r}\n" + body + "sys.exit(0)\n", env=env)


@pytest.mark.parametrize("scenario", sorted(THREAD_END_SCENARIOS))
def test_a_worker_threads_end_never_crashes(backend, scenario):
    run_scenario(backend, THREAD_END_PRELUDE + THREAD_END_SCENARIOS[scenario])


def test_a_worker_thread_has_a_python_threads_stack(backend):
    """Measured on the thread (glibc's pthread_getattr_np) against a Python thread
    started in the same run."""
    reference: list[int | None] = []
    thread = threading.Thread(target=lambda: reference.append(stack_size_of_this_thread()))
    thread.start()
    thread.join()
    if reference[0] is None:
        pytest.skip("this platform has no pthread_getattr_np")

    class Measures:
        def __len__(self) -> int:
            return 8

        def __getitem__(self, i: int) -> int:
            return stack_size_of_this_thread()

    sizes = [
        s
        for b in DataLoader(Measures(), batch_size=2, num_workers=2, backend=backend)
        for s in b.tolist()
    ]
    # A page or two of difference is the guard page's accounting, not a smaller stack.
    assert min(sizes) >= reference[0] - 64 * 1024, (sizes, reference[0])


def test_an_item_that_needs_a_deep_stack_runs(backend):
    run_scenario(backend, DEEP_STACK_ITEM)
