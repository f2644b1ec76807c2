"""Property 9: a state_dict() taken mid-epoch, loaded into a fresh loader on this
backend, gives exactly the remaining batches, then the same later epochs."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from support import Recorder, batches_as_lists

from dataloader_api import DataLoader
from dataloader_api.testing import ResumableShards


@given(
    length=st.integers(0, 60),
    batch_size=st.integers(1, 6),
    shuffle=st.booleans(),
    drop_last=st.booleans(),
    seed=st.integers(0, 2**32),
    num_workers=st.integers(1, 3),
    prefetch=st.integers(1, 3),
    persistent=st.booleans(),
    data=st.data(),
)
def test_map_style_resume(
    backend, length, batch_size, shuffle, drop_last, seed, num_workers, prefetch, persistent, data
):
    def make() -> DataLoader:
        return DataLoader(
            Recorder(length),
            batch_size=batch_size,
            shuffle=shuffle,
            drop_last=drop_last,
            seed=seed,
            num_workers=num_workers,
            prefetch_factor=prefetch,
            persistent_workers=persistent,
            backend=backend,
        )

    original = make()
    batches_as_lists(original)  # a whole epoch first: the state is not epoch 0's
    iterator = iter(original)
    taken = data.draw(st.integers(0, len(original)), label="batches taken")
    for _ in range(taken):
        next(iterator)
    state = json.loads(json.dumps(original.state_dict()))
    rest = [b.tolist() for b in iterator]
    following = batches_as_lists(original)
    original.close()

    resumed = make()
    resumed.load_state_dict(state)
    assert batches_as_lists(resumed) == rest
    assert batches_as_lists(resumed) == following
    resumed.close()


@given(
    n=st.integers(0, 50),
    batch_size=st.integers(1, 5),
    num_workers=st.integers(1, 3),
    data=st.data(),
)
def test_iterable_resume(backend, n, batch_size, num_workers, data):
    def make() -> DataLoader:
        return DataLoader(
            ResumableShards(n), batch_size=batch_size, num_workers=num_workers, backend=backend
        )

    full = batches_as_lists(make())
    original = make()
    iterator = iter(original)
    taken = data.draw(st.integers(0, len(full)), label="batches taken")
    got = [next(iterator).tolist() for _ in range(taken)]
    state = json.loads(json.dumps(original.state_dict()))
    iterator.close()
    resumed = make()
    resumed.load_state_dict(state)
    assert got + batches_as_lists(resumed) == full
