"""index_shuffle: a seeded bijection of range(n), computed a chunk at a time, as
RandomSampler's and DistributedSampler's shuffle that takes no memory."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dataloader_api._sampling.samplers as samplers
from dataloader_api import BatchSampler, DataLoader, DistributedSampler, RandomSampler
from dataloader_api._sampling.batch_sampler import skip_batches
from dataloader_api._sampling.index_shuffle import IndexShuffle
from dataloader_api._sampling.seeds import derive_seed


class Huge:
    """A dataset of any length that holds nothing: item i is i."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> int:
        return index


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 3000), seed=st.integers(0, 2**63 - 1))
def test_is_a_permutation_of_range_n(n, seed):
    assert sorted(IndexShuffle(n, seed)(np.arange(n)).tolist()) == list(range(n))


def test_a_seed_replays_its_order_and_seeds_differ():
    first = IndexShuffle(1000, 3)(np.arange(1000)).tolist()
    assert IndexShuffle(1000, 3)(np.arange(1000)).tolist() == first
    assert IndexShuffle(1000, 4)(np.arange(1000)).tolist() != first
    assert first != list(range(1000))


def test_every_index_lands_at_every_position_about_equally_often():
    n, seeds = 8, 4000
    counts = np.zeros((n, n))
    for seed in range(seeds):
        counts[np.arange(n), IndexShuffle(n, seed)(np.arange(n))] += 1
    expected = seeds / n
    sigma = (seeds * (1 / n) * (1 - 1 / n)) ** 0.5
    assert np.abs(counts - expected).max() < 5 * sigma
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 100  # 49 degrees of freedom: p < 1e-4 beyond 90


def test_huge_n_positions_are_in_range_and_distinct():
    n = 10**12 + 7
    positions = np.concatenate([np.arange(5000), np.arange(n - 5000, n)])
    out = IndexShuffle(n, 11)(positions)
    assert out.min() >= 0 and out.max() < n
    assert len(set(out.tolist())) == len(positions)


def test_n_out_of_range_is_refused():
    with pytest.raises(ValueError, match="n must be below 2\\*\\*62"):
        IndexShuffle(2**62, 0)


@pytest.mark.parametrize(("n", "num_samples"), [(50, None), (50, 20), (50, 130), (1, 3)])
def test_random_sampler_epochs_are_laps_of_permutations(n, num_samples):
    sampler = RandomSampler(range(n), num_samples=num_samples, seed=1, index_shuffle=True)
    count = num_samples or n
    epochs = [list(sampler) for _ in range(3)]
    for epoch in epochs:
        assert len(epoch) == count
        assert all(type(i) is int for i in epoch)
        for lap in range(0, count, n):
            part = epoch[lap : lap + n]
            assert len(set(part)) == len(part) and set(part) <= set(range(n))
    if n > 1:
        assert epochs[0] != epochs[1]
    replay = RandomSampler(range(n), num_samples=num_samples, seed=1, index_shuffle=True)
    assert [list(replay) for _ in range(3)] == epochs


@pytest.mark.parametrize("size", [1, 7, 32, 1000])
@pytest.mark.parametrize("drop_last", [False, True])
def test_batches_equal_the_index_by_index_order(size, drop_last):
    """Batches are sliced from the chunks (a batch may span two); the order is
    the sampler's own, index by index."""
    n = 3001  # chunks of 1024 then 65536 positions: not multiples of 7 or 1000
    batches = list(
        BatchSampler(RandomSampler(range(n), seed=2, index_shuffle=True), size, drop_last)
    )
    flat = list(RandomSampler(range(n), seed=2, index_shuffle=True))
    expected = [flat[i : i + size] for i in range(0, n, size)]
    if drop_last and len(expected[-1]) < size:
        expected.pop()
    assert batches == expected


def test_a_resumed_epoch_starts_at_its_batch_without_computing_the_skipped(monkeypatch):
    computed = []
    original = IndexShuffle.__call__

    def counting(self, positions):
        computed.append(len(positions))
        return original(self, positions)

    monkeypatch.setattr(IndexShuffle, "__call__", counting)
    n, size, skip = 10**9, 32, 10**7
    resumed = skip_batches(BatchSampler(RandomSampler(Huge(n), seed=4), size, False), skip)
    first = next(resumed)
    assert sum(computed) <= 2**16  # one chunk, not the 3.2e8 positions skipped
    # The same positions of the same epoch's order.
    epoch_seed = RandomSampler(Huge(n), seed=4).seeds.next_seed()
    order = IndexShuffle(n, derive_seed(epoch_seed, 0))
    assert first == original(order, np.arange(skip * size, (skip + 1) * size)).tolist()


def test_the_default_shuffles_by_index_from_2_to_the_20():
    big, small = samplers.INDEX_SHUFFLE_FROM, samplers.INDEX_SHUFFLE_FROM - 1
    for n, by_index in [(big, True), (small, False)]:
        default = next(iter(BatchSampler(RandomSampler(Huge(n), seed=8), 16, False)))
        chosen = RandomSampler(Huge(n), seed=8, index_shuffle=by_index)
        assert default == next(iter(BatchSampler(chosen, 16, False)))
    loader = DataLoader(Huge(big), batch_size=4, shuffle=True, seed=1)
    assert loader.sampler._shuffles_by_index()


def test_a_large_permutation_asked_for_names_index_shuffle(monkeypatch):
    monkeypatch.setattr(samplers, "LARGE_PERMUTATION", 100)
    with pytest.warns(UserWarning, match=r"index_shuffle=True"):
        list(RandomSampler(range(100), seed=1, index_shuffle=False))


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (
            {"index_shuffle": "yes"},
            TypeError,
            "index_shuffle should be a boolean value, but got index_shuffle='yes'",
        ),
        (
            {"index_shuffle": True, "replacement": True},
            ValueError,
            "cannot be combined with replacement=True",
        ),
    ],
)
def test_bad_options_are_named(kwargs, error, message):
    with pytest.raises(error, match=message):
        RandomSampler(range(10), **kwargs)
    if "replacement" not in kwargs:
        with pytest.raises(error, match=message):
            DistributedSampler(range(10), 2, 0, **kwargs)


@pytest.mark.parametrize(("n", "replicas"), [(50, 3), (48, 4), (5, 7), (0, 2)])
@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("shuffle", [False, True])
def test_distributed_ranks_share_one_order_with_torchs_padding(n, replicas, shuffle, drop_last):
    shards = [
        list(
            DistributedSampler(range(n), replicas, rank, shuffle, 5, drop_last, index_shuffle=True)
        )
        for rank in range(replicas)
    ]
    plain = [
        list(DistributedSampler(range(n), replicas, rank, False, 5, drop_last))
        for rank in range(replicas)
    ]
    order = IndexShuffle(n, derive_seed(5, 0))
    for rank, shard in enumerate(shards):
        assert len(shard) == len(plain[rank])
        # Position for position, the shuffled shard is the plain one mapped
        # through the epoch's bijection (torch's sharding and padding).
        mapped = order(np.array(plain[rank], dtype=np.int64)).tolist() if shuffle else plain[rank]
        assert shard == mapped
    seen = sorted(i for shard in shards for i in shard)
    if drop_last or n % replicas == 0:
        assert len(seen) == len(set(seen))
    if not drop_last:
        assert set(seen) == set(range(n))
