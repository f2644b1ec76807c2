"""Interpreter exit while threads are inside Python under Rust frames: the
process keeps its own exit code. CPython <= 3.13 ends a thread that takes the
interpreter back during finalization with pthread_exit; that unwinds into Rust
and aborts unless the thread is parked (csrc/guard.c around our calls into
Python, csrc/hang_at_exit.c for every other; build with
CFLAGS="-DDL_NO_PARK -DDL_NO_HANG" to see these tests fail)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

# Finalization is made slow (a cycle whose __del__ sleeps, freed by the
# collection during finalization) so that the workers' sleeps end while the
# interpreter is finalizing. It keeps its own sleep: module globals are gone.
PRELUDE = """
import sys, threading, time
from dataloader_api import DataLoader

class SlowTeardown:
    def __init__(self):
        self.sleep = time.sleep
        self.cycle = self
    def __del__(self):
        self.sleep(1.0)

class Sleepy:
    def __len__(self):
        return 1000
    def __getitem__(self, index):
        time.sleep(0.1)
        return index
"""

SCENARIOS = {
    "workers_in_dataset_code": """
        loader = DataLoader(Sleepy(), batch_size=1, num_workers=2, backend="rust")
        it = iter(loader)
        next(it)
        time.sleep(0.05)  # both workers are asleep in __getitem__ again
        SlowTeardown()
        sys.exit(CODE)
    """,
    "daemon_consumer_waiting": """
        loader = DataLoader(Sleepy(), batch_size=4, num_workers=1, backend="rust")
        def consume():
            for _ in loader:
                pass
        threading.Thread(target=consume, daemon=True).start()
        time.sleep(0.2)  # the consumer waits in Rust for its first batch
        SlowTeardown()
        sys.exit(CODE)
    """,
    # pyo3 calls Python itself, outside any guard of ours: here converting an
    # argument (``__index__``); also a type object's or an exception's first use.
    "user_code_called_by_pyo3": """
        from dataloader_rust._native import NativeReader
        class SlowIndex:
            def __index__(self):
                time.sleep(0.2)
                return 1
        threading.Thread(target=lambda: NativeReader({}, SlowIndex()), daemon=True).start()
        time.sleep(0.05)  # the thread sleeps inside pyo3's argument conversion
        SlowTeardown()
        sys.exit(CODE)
    """,
    "iterable_stream_mid_epoch": """
        from dataloader_api import IterableDataset
        class Stream(IterableDataset):
            def __iter__(self):
                for i in range(1000):
                    time.sleep(0.1)
                    yield i
        it = iter(DataLoader(Stream(), batch_size=1, num_workers=2, backend="rust"))
        next(it)
        SlowTeardown()
        sys.exit(CODE)
    """,
}


@pytest.mark.parametrize("code", [0, 3])
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_exit_during_finalization_keeps_the_exit_code(scenario: str, code: int) -> None:
    body = textwrap.dedent(SCENARIOS[scenario]).replace("CODE", str(code))
    script = PRELUDE + body
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == code, (
        f"{scenario}: exit code {result.returncode}, wanted {code}\nstderr:\n{result.stderr}"
    )
    assert "Fatal" not in result.stderr and "panicked" not in result.stderr, result.stderr


@pytest.mark.skipif(sys.version_info >= (3, 14), reason="CPython 3.14 parks such threads itself")
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the redirect is Linux's")
def test_threads_ended_at_exit_hang_instead_of_unwinding() -> None:
    from dataloader_rust._native import EXIT_THREADS

    import dataloader_api

    assert EXIT_THREADS.startswith("hang"), EXIT_THREADS
    details = dataloader_api.backends(details=True)["rust"]
    assert details["threads_ended_at_exit"] == EXIT_THREADS
