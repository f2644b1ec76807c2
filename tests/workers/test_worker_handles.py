"""``iterator._workers``: torch's handles of an epoch's workers, for code that waits
for a dropped iterator's workers to end (torch's own tests do)."""

from __future__ import annotations

import os

import pytest

import dataloader_api
from dataloader_api import DataLoader
from dataloader_api.testing import wait_until

BACKENDS = [n for n in dataloader_api.backends() if not n.startswith("broken-")]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("persistent", [False, True])
def test_handles_end_when_a_dropped_epochs_threads_end(backend, persistent):
    loader = DataLoader(
        list(range(100)), batch_size=2, num_workers=2, persistent_workers=persistent,
        backend=backend,
    )  # fmt: skip
    iterator = iter(loader)
    workers = iterator._workers
    assert [w.worker_id for w in workers] == [0, 1]
    assert all(w.pid == os.getpid() for w in workers)
    for i, _ in enumerate(iterator):
        if i == 10:
            break
    assert all(w.is_alive() and w.exitcode is None for w in workers)
    del iterator
    if persistent:
        assert all(w.is_alive() for w in workers)  # the loader's threads, still its own
    del loader
    for w in workers:
        w.join(60)
        assert not w.is_alive() and w.exitcode == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_epoch_run_to_its_end_leaves_no_handle_alive(backend):
    # An idle pool of this shape left by an earlier test would keep this one from
    # being kept idle: it is then closed, and its threads end a moment later.
    dataloader_api.release_idle_workers()
    iterator = iter(DataLoader(list(range(10)), batch_size=2, num_workers=2, backend=backend))
    workers = iterator._workers
    assert len(list(iterator)) == 5
    # its threads wait for the next loader (or end, if a pool of this shape was idle)
    assert wait_until(lambda: not any(w.is_alive() for w in workers), 60)


def test_terminate_closes_the_pool_and_the_calling_thread_has_no_workers():
    iterator = iter(DataLoader(list(range(100)), batch_size=2, num_workers=2))
    next(iterator)
    iterator._workers[0].terminate()
    iterator._workers[1].join(60)
    assert not iterator._workers[1].is_alive()
    assert not hasattr(iter(DataLoader(list(range(4)))), "_workers")  # as torch's
