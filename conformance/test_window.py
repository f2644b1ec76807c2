"""Property 3: at most num_workers * prefetch_factor batches are started but not
consumed, also while the consumer stalls behind one slow (blocked) batch; and
the window is used: num_workers batches are fetched at once."""

from __future__ import annotations

import threading
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support import Recorder

from dataloader_api import DataLoader

# threads racing the window: nox -s tests_under_load runs it beside a CPU load
pytestmark = pytest.mark.timing


def settle(dataset: Recorder, quiet: float = 0.05, limit: float = 2.0) -> None:
    """Wait until the dataset has not been called for ``quiet`` seconds."""
    deadline = time.monotonic() + limit
    seen = -1
    while time.monotonic() < deadline and seen != len(dataset.calls):
        seen = len(dataset.calls)
        time.sleep(quiet)


@given(
    num_workers=st.integers(1, 4),
    prefetch=st.integers(1, 3),
    batch_size=st.integers(1, 4),
    consumed=st.integers(0, 5),
    block_next=st.booleans(),
    in_order=st.booleans(),
)
def test_started_but_unconsumed_batches_stay_within_the_window(
    backend, num_workers, prefetch, batch_size, consumed, block_next, in_order
):
    length = batch_size * 40
    # With block_next, the first item of the batch after the consumed ones blocks.
    blocked = {consumed * batch_size} if block_next else set()
    dataset = Recorder(length, blocked=blocked)
    loader = DataLoader(
        dataset,
        batch_size=batch_size,
        num_workers=num_workers,
        prefetch_factor=prefetch,
        in_order=in_order,
        backend=backend,
    )
    window = num_workers * prefetch
    iterator = iter(loader)
    try:
        for _ in range(consumed):
            next(iterator)
        settle(dataset)
        started = {index // batch_size for index in dataset.calls}
        assert len(started) <= consumed + window, (sorted(started), consumed, window)
        if in_order:
            assert max(started, default=-1) <= consumed + window - 1
    finally:
        dataset.release.set()
        iterator.close()


class Rendezvous:
    """The first item of each of the first ``workers`` batches waits until all of
    them are being fetched at once: a backend that runs fewer jobs at a time
    breaks the barrier after 10 s, and the batch raises ``BrokenBarrierError``."""

    def __init__(self, length: int, batch_size: int, workers: int) -> None:
        self.length, self.batch_size = length, batch_size
        self.barrier = threading.Barrier(workers, timeout=10)
        self.meeting = {b * batch_size for b in range(workers)}

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> int:
        if index in self.meeting:
            self.barrier.wait()
        return index


@given(
    num_workers=st.integers(2, 4),
    prefetch=st.integers(1, 3),
    batch_size=st.integers(1, 3),
    in_order=st.booleans(),
)
def test_num_workers_batches_are_fetched_at_once(
    backend, num_workers, prefetch, batch_size, in_order
):
    length = batch_size * num_workers * 3
    loader = DataLoader(
        Rendezvous(length, batch_size, num_workers),
        batch_size=batch_size,
        num_workers=num_workers,
        prefetch_factor=prefetch,
        in_order=in_order,
        backend=backend,
    )
    items = [i for batch in loader for i in batch.tolist()]
    assert sorted(items) == list(range(length))
