"""Property 14: each worker thread calls its own shallow copy of a map-style
dataset, as each torch worker process has its own: ``self`` in ``__getitem__``
is that worker's ``get_worker_info().dataset``, never the loader's dataset, one
copy per worker thread, made anew for each epoch's workers and once for
persistent ones; state rebound on ``self`` stays with its worker."""

from __future__ import annotations

import itertools
import threading

from hypothesis import given
from hypothesis import strategies as st

from dataloader_api import DataLoader, get_worker_info


class SelfProbe:
    """Records, per call, the thread, ``self`` and the worker's dataset; keeps a
    lazily set per-worker token on ``self``, as a lazily opened handle would be."""

    def __init__(self, length: int) -> None:
        self.length = length
        self.token: object | None = None
        self.seen: list[tuple[int, object, object, object]] = []
        self.lock = threading.Lock()

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> int:
        if self.token is None:
            self.token = object()
        info = get_worker_info()
        with self.lock:
            self.seen.append((threading.get_ident(), self, info and info.dataset, self.token))
        return index


@given(
    num_workers=st.integers(1, 4),
    batch_size=st.integers(1, 5),
    persistent=st.booleans(),
    epochs=st.integers(1, 3),
)
def test_each_worker_calls_its_own_copy(backend, num_workers, batch_size, persistent, epochs):
    probe = SelfProbe(40)
    loader = DataLoader(
        probe,
        batch_size=batch_size,
        num_workers=num_workers,
        persistent_workers=persistent,
        backend=backend,
    )
    copies_by_epoch = []
    for _ in range(epochs):
        probe.seen.clear()
        assert [i for b in loader for i in b.tolist()] == list(range(40))
        selves = {id(me): me for _, me, _, _ in probe.seen}
        assert probe not in selves.values(), "a worker called the loader's own dataset"
        assert all(me is dataset for _, me, dataset, _ in probe.seen)
        threads_of: dict[int, set[int]] = {}
        for thread, me, _, _ in probe.seen:
            threads_of.setdefault(id(me), set()).add(thread)
        assert all(len(threads) == 1 for threads in threads_of.values())  # one copy, one thread
        assert len(selves) <= num_workers
        # The token set lazily on a copy stays that copy's.
        assert all(token is me.token for _, me, _, token in probe.seen)
        copies_by_epoch.append(selves)
    if persistent:  # one copy per worker for the loader's life
        assert len({key for selves in copies_by_epoch for key in selves}) <= num_workers
    for before, after in itertools.pairwise(copies_by_epoch):
        if not persistent:  # new copies for each epoch's workers (held: ids not reused)
            assert not before.keys() & after.keys()
    assert probe.token is None  # the loader's own dataset was never called
    loader.close()


def test_the_calling_thread_calls_the_dataset_itself():
    probe = SelfProbe(10)
    assert [i for b in DataLoader(probe, batch_size=3) for i in b.tolist()] == list(range(10))
    assert {id(me) for _, me, _, _ in probe.seen} == {id(probe)}
