"""Property 7: one thread state per pool thread for its whole life. The thread that
iterates may make batches itself (caller-runs, ``_epoch/caller_runs.py``) with
its own thread state, which it has anyway: at most pool size + 1 in an epoch."""

from __future__ import annotations

import sys
import sysconfig
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dataloader_api import DataLoader, resolve_backend


class LocalProbe:
    """Records, per call, the thread and the token its threading.local() holds."""

    def __init__(self, length: int) -> None:
        self.length = length
        self.local = threading.local()
        self.seen: list[tuple[int, int]] = []
        self.lock = threading.Lock()

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> int:
        if not hasattr(self.local, "token"):
            self.local.token = object()
        with self.lock:
            self.seen.append((threading.get_ident(), id(self.local.token)))
        return index


@given(num_workers=st.integers(1, 4), epochs=st.integers(1, 3), batch_size=st.integers(1, 4))
def test_thread_local_state_persists_on_each_worker(backend, num_workers, epochs, batch_size):
    probe = LocalProbe(60)
    loader = DataLoader(
        probe,
        batch_size=batch_size,
        num_workers=num_workers,
        persistent_workers=True,
        backend=backend,
    )
    try:
        for _ in range(epochs):
            assert sum(len(b) for b in loader) == 60
    finally:
        loader.close()
    tokens_by_thread: dict[int, set[int]] = {}
    for thread, token in probe.seen:
        tokens_by_thread.setdefault(thread, set()).add(token)
    assert all(len(tokens) == 1 for tokens in tokens_by_thread.values()), tokens_by_thread
    # The pool's threads, and the consumer when it made batches itself (caller-runs).
    workers = set(tokens_by_thread) - {threading.get_ident()}
    assert tokens_by_thread and len(workers) <= num_workers


@given(num_workers=st.integers(1, 4))
def test_one_epoch_uses_at_most_pool_size_thread_states(backend, num_workers):
    probe = LocalProbe(80)
    list(DataLoader(probe, batch_size=1, num_workers=num_workers, backend=backend))
    # One more: the consumer's own, when it made batches itself (caller-runs).
    assert len({token for _, token in probe.seen}) <= num_workers + 1


@pytest.mark.skipif(
    not sysconfig.get_config_var("Py_GIL_DISABLED"), reason="needs a free-threaded CPython build"
)
def test_gil_stays_disabled(backend):
    resolve_backend(backend)
    assert not sys._is_gil_enabled()
    assert (
        sum(len(b) for b in DataLoader(range(64), batch_size=8, num_workers=2, backend=backend))
        == 64
    )
    assert not sys._is_gil_enabled()
