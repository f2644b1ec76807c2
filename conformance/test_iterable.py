"""Property 8: iterable datasets, one stream per worker, torch's sharding idioms."""

from __future__ import annotations

import threading

from hypothesis import given
from hypothesis import strategies as st
from support import Sharded

from dataloader_api import DataLoader


@given(
    length=st.integers(0, 80),
    num_workers=st.integers(1, 4),
    batch_size=st.one_of(st.none(), st.integers(1, 6)),
    uneven=st.booleans(),
    in_order=st.booleans(),
)
def test_every_item_exactly_once(backend, length, num_workers, batch_size, uneven, in_order):
    dataset = Sharded(length, uneven)
    loader = DataLoader(
        dataset, batch_size=batch_size, num_workers=num_workers, in_order=in_order, backend=backend
    )
    items = []
    for batch in loader:
        items.extend(batch.tolist() if batch_size is not None else [int(batch)])
    assert sorted(items) == list(range(length))
    ids = sorted(info[0] for info in dataset.infos)
    assert ids == list(range(num_workers))
    assert {info[1] for info in dataset.infos} == {num_workers}
    seeds = {info[2] - info[0] for info in dataset.infos}
    assert len(seeds) == 1  # seed = base_seed + id
    assert len({info[3] for info in dataset.infos}) == num_workers  # a copy per worker


@given(num_workers=st.integers(1, 4), epochs=st.integers(1, 3), persistent=st.booleans())
def test_worker_init_fn_runs_once_per_worker_thread(backend, num_workers, epochs, persistent):
    calls: list[tuple[int, int]] = []
    lock = threading.Lock()

    def init(worker_id: int) -> None:
        with lock:
            calls.append((worker_id, threading.get_ident()))

    loader = DataLoader(
        Sharded(20),
        batch_size=2,
        num_workers=num_workers,
        worker_init_fn=init,
        persistent_workers=persistent,
        backend=backend,
    )
    for _ in range(epochs):
        assert sum(len(b) for b in loader) == 20
    loader.close()
    pools = 1 if persistent else epochs
    assert sorted(w for w, _ in calls) == sorted(list(range(num_workers)) * pools)
    assert len({t for _, t in calls}) >= num_workers


@given(length=st.integers(0, 60), num_workers=st.integers(1, 4), batch_size=st.integers(1, 5))
def test_in_order_is_round_robin_over_workers(backend, length, num_workers, batch_size):
    """PyTorch's order: one batch from each worker in turn, skipping finished ones."""
    shards = [list(range(w, length, num_workers)) for w in range(num_workers)]
    queues = [[s[i : i + batch_size] for i in range(0, len(s), batch_size)] for s in shards]
    expected = []
    while any(queues):
        for q in queues:
            if q:
                expected.append(q.pop(0))
    loader = DataLoader(
        Sharded(length), batch_size=batch_size, num_workers=num_workers, backend=backend
    )
    assert [b.tolist() for b in loader] == expected
