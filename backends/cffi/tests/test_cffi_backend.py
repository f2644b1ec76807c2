"""What the cffi backend adds beyond the contract: its pool's errors, attach once
measured in-process, and a prompt exit while a C thread is busy in user code."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

import dataloader_cffi
import pytest

from dataloader_api import DataLoader
from dataloader_api.contract import PoolSpec


def spec(threads, init=lambda worker_id: None):
    return PoolSpec(threads, init, "test")


def test_a_failing_thread_init_is_raised_by_create_pool():
    def init(worker_id):
        if worker_id == 1:
            raise LookupError("no device for worker 1")

    with pytest.raises(LookupError, match="no device for worker 1"):
        dataloader_cffi.CffiBackend().create_pool(spec(3, init))


def test_pool_settings_and_closing_twice():
    pool = dataloader_cffi.CffiBackend().create_pool(spec(2))
    assert (pool.num_threads, pool.attach_once, pool.closed) == (2, True, False)
    pool.close()
    pool.close()
    with pytest.raises(RuntimeError, match="closed"):
        pool.submit(print)


class ThreadState:
    """Each item reports whether a thread-local value set by an earlier item survived."""

    local = threading.local()

    def __len__(self):
        return 64

    def __getitem__(self, index):
        seen = getattr(self.local, "seen", False)
        self.local.seen = True
        return seen


@pytest.mark.parametrize(("mode", "persists"), [("once", True), ("per-task", False)])
def test_attach_mode_decides_whether_thread_state_survives(monkeypatch, mode, persists):
    monkeypatch.setenv("DATALOADER_CFFI_ATTACH", mode)
    # The pool's threads alone: a batch the consumer makes (caller-runs) runs on
    # its own thread state, which no attach mode governs.
    monkeypatch.setenv("DATALOADER_CALLER_RUNS", "off")
    ThreadState.local = threading.local()
    loader = DataLoader(ThreadState(), batch_size=4, num_workers=2, backend="cffi", collate_fn=list)
    seen = [s for batch in loader for s in batch]
    # A batch's later items always see the first one's value (same call, same state);
    # a batch's first item sees an earlier batch's only with attach once, except for
    # the first batch each of the 2 threads runs.
    firsts = seen[0::4]
    if persists:
        assert sum(firsts) >= len(firsts) - 2
    else:
        assert not any(firsts)


def test_unknown_attach_mode_is_named(monkeypatch):
    monkeypatch.setenv("DATALOADER_CFFI_ATTACH", "maybe")
    with pytest.raises(ValueError, match="DATALOADER_CFFI_ATTACH='maybe' is not one of once"):
        dataloader_cffi.CffiBackend().create_pool(spec(1))


@pytest.mark.timing
@pytest.mark.parametrize("code", [0, 3])
def test_exit_waits_for_a_thread_busy_in_user_code_at_most_the_bound(code):
    """Exit lets running jobs return, for DATALOADER_EXIT_TIMEOUT seconds at most.

    Timed inside the child, from the moment its exit begins to the moment the wait
    has ended (an atexit handler registered first runs after the loader's exit hook),
    so neither start-up nor finalization, which a loaded machine stretches, counts."""
    script = textwrap.dedent(f"""
        import atexit, sys, threading, time
        atexit.register(lambda: print("waited", time.monotonic() - began, flush=True))
        from dataloader_api import DataLoader
        class Blocked:
            def __len__(self): return 100
            def __getitem__(self, i):
                if i == 3: threading.Event().wait()
                return i
        it = iter(DataLoader(Blocked(), batch_size=1, num_workers=2, backend="cffi",
                             persistent_workers=True))
        [next(it) for _ in range(3)]
        time.sleep(0.1)
        began = time.monotonic()
        sys.exit({code})
    """)

    def exit_seconds(bound: str) -> float:
        """How long the child's exit waited for its busy thread."""
        result = subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "DATALOADER_EXIT_TIMEOUT": bound},
        )
        assert result.returncode == code, result.stderr
        assert "Traceback" not in result.stderr and "Fatal" not in result.stderr, result.stderr
        return float(result.stdout.split("waited")[-1])

    # The same exit without the wait, in the same run: what the exit hook costs on
    # this machine now, however loaded it is.
    reference = exit_seconds("0")
    elapsed = exit_seconds("0.5")
    assert elapsed >= 0.5, f"exit took {elapsed:.2f} s: it did not wait for the running job"
    assert elapsed - reference < 0.5 + 1.0, (
        f"exit took {elapsed:.2f} s with a bound of 0.5 s ({reference:.2f} s without waiting)"
    )
