"""Sampler sequences, seeding, and DistributedSampler parity with torch."""

from __future__ import annotations

import importlib.util
import math
import random

import numpy as np
import pytest

from dataloader_api import (
    BatchSampler,
    DistributedSampler,
    RandomSampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)
from dataloader_api._sampling import torch_randperm as torch_random

HAVE_TORCH = importlib.util.find_spec("torch") is not None


def reference_mt19937(seed: int, count: int) -> list[int]:
    """Textbook MT19937 (init_genrand), written out to check the NumPy shortcut."""
    state = [0] * 624
    state[0] = seed & 0xFFFFFFFF
    for i in range(1, 624):
        state[i] = (1812433253 * (state[i - 1] ^ (state[i - 1] >> 30)) + i) & 0xFFFFFFFF
    out, index = [], 624
    for _ in range(count):
        if index >= 624:
            for i in range(624):
                y = (state[i] & 0x80000000) | (state[(i + 1) % 624] & 0x7FFFFFFF)
                state[i] = state[(i + 397) % 624] ^ (y >> 1) ^ (0x9908B0DF if y & 1 else 0)
            index = 0
        y = state[index]
        index += 1
        y ^= y >> 11
        y ^= (y << 7) & 0x9D2C5680
        y ^= (y << 15) & 0xEFC60000
        y ^= y >> 18
        out.append(y)
    return out


def reference_randperm(n: int, seed: int) -> list[int]:
    """aten's randperm_cpu for small n, on the textbook generator."""
    draws = reference_mt19937(seed, max(n - 1, 0))
    perm = list(range(n))
    for i in range(n - 1):
        z = draws[i] % (n - i)
        perm[i], perm[z + i] = perm[z + i], perm[i]
    return perm


def test_mt19937_matches_the_standard_generator():
    # std::mt19937's first output for its default seed 5489.
    assert torch_random.mt19937_uint32(5489, 1).tolist() == [3499211612]
    for seed in (0, 1, 42, 2**32 + 7, -1):
        assert torch_random.mt19937_uint32(seed, 1300).tolist() == reference_mt19937(seed, 1300)


@pytest.mark.parametrize("n", [0, 1, 2, 5, 17, 1000])
@pytest.mark.parametrize("seed", [0, 3, 2024])
def test_randperm_replays_torchs_algorithm(n, seed):
    perm = torch_random.randperm(n, seed)
    assert perm == reference_randperm(n, seed)
    assert sorted(perm) == list(range(n))


@pytest.mark.skipif(
    not HAVE_TORCH,
    reason="torch is not installed; `nox -s torch_parity` "
    "installs it (its PyPI wheels bring CUDA, about 5 GiB)",
)
@pytest.mark.parametrize("n", [1, 7, 100, 5000])
@pytest.mark.parametrize("seed", [0, 1, 12345])
def test_randperm_equals_torch(n, seed):
    import torch

    generator = torch.Generator()
    generator.manual_seed(seed)
    assert torch_random.randperm(n, seed) == torch.randperm(n, generator=generator).tolist()


def reference_distributed(n, replicas, rank, shuffle, seed, epoch, drop_last):
    """torch.utils.data.DistributedSampler.__iter__, transcribed."""
    indices = reference_randperm(n, seed + epoch) if shuffle else list(range(n))
    if drop_last and n % replicas != 0:
        num_samples = math.ceil((n - replicas) / replicas)
    else:
        num_samples = math.ceil(n / replicas)
    total = num_samples * replicas
    if not drop_last:
        padding = total - len(indices)
        if padding <= len(indices):
            indices += indices[:padding]
        else:
            indices += (indices * math.ceil(padding / len(indices)))[:padding]
    else:
        indices = indices[:total]
    return indices[rank:total:replicas]


DISTRIBUTED_CASES = [
    (n, replicas, shuffle, drop_last)
    for n in (1, 2, 10, 11, 101)
    for replicas in (1, 2, 3, 4)
    for shuffle in (False, True)
    for drop_last in (False, True)
    if not (drop_last and n < replicas)
]


@pytest.mark.parametrize(("n", "replicas", "shuffle", "drop_last"), DISTRIBUTED_CASES)
def test_distributed_sampler_shards_like_torch(n, replicas, shuffle, drop_last):
    seen = []
    for rank in range(replicas):
        for epoch in (0, 3):
            sampler = DistributedSampler(
                range(n), replicas, rank, shuffle, seed=7, drop_last=drop_last
            )
            sampler.set_epoch(epoch)
            got = list(sampler)
            assert got == reference_distributed(n, replicas, rank, shuffle, 7, epoch, drop_last)
            assert len(got) == len(sampler)
            if HAVE_TORCH:
                from torch.utils.data import DistributedSampler as TorchDistributedSampler

                theirs = TorchDistributedSampler(range(n), replicas, rank, shuffle, 7, drop_last)
                theirs.set_epoch(epoch)
                assert got == list(theirs)
            if epoch == 0:
                seen.extend(got)
    if not drop_last:
        assert set(seen) == set(range(n))


def test_distributed_sampler_reshuffles_by_epoch_only():
    a = DistributedSampler(range(50), 2, 0, seed=1)
    first = list(a)
    assert list(a) == first  # same epoch, same order
    a.set_epoch(1)
    assert list(a) != first


def test_distributed_sampler_checks_rank():
    with pytest.raises(
        ValueError, match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"
    ):
        DistributedSampler(range(4), num_replicas=2, rank=2)
    with pytest.raises(RuntimeError, match=r"torch\.distributed"):
        DistributedSampler(range(4))


def test_sequential():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]


def test_random_sampler_reshuffles_each_epoch_and_replays_with_seed():
    a, b = RandomSampler(range(100), seed=5), RandomSampler(range(100), seed=5)
    epochs_a = [list(a) for _ in range(3)]
    epochs_b = [list(b) for _ in range(3)]
    assert epochs_a == epochs_b
    assert epochs_a[0] != epochs_a[1]
    assert all(sorted(e) == list(range(100)) for e in epochs_a)
    assert list(RandomSampler(range(100), seed=6)) != epochs_a[0]


def test_random_sampler_num_samples_and_replacement():
    s = RandomSampler(range(10), num_samples=25, seed=0)
    drawn = list(s)
    assert len(drawn) == len(s) == 25
    assert all(drawn.count(i) in (2, 3) for i in range(10))  # whole permutations, then a part
    r = list(RandomSampler(range(3), replacement=True, num_samples=50, seed=0))
    assert len(r) == 50 and set(r) <= {0, 1, 2}
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(TypeError, match="replacement should be a boolean"):
        RandomSampler(range(3), replacement=1)


@pytest.mark.parametrize("make", [lambda: np.random.default_rng(3), lambda: random.Random(3)])
def test_random_sampler_with_a_generator_is_reproducible(make):
    assert list(RandomSampler(range(30), generator=make())) == list(
        RandomSampler(range(30), generator=make())
    )


def test_subset_random_sampler():
    s = SubsetRandomSampler([5, 7, 9, 11], seed=0)
    assert sorted(s) == [5, 7, 9, 11] and len(s) == 4


def test_weighted_random_sampler():
    s = WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], num_samples=400, seed=0)
    drawn = list(s)
    assert set(drawn) == {1, 3} and 200 < drawn.count(3) < 380
    no_repeat = list(WeightedRandomSampler([1, 1, 1, 1], 4, replacement=False, seed=1))
    assert sorted(no_repeat) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="weights should be a 1d sequence"):
        WeightedRandomSampler([[1.0]], 1)
    with pytest.raises(ValueError, match="replacement=False"):
        WeightedRandomSampler([1.0, 0.0], 2, replacement=False)
    with pytest.raises(ValueError, match="non-negative"):
        WeightedRandomSampler([1.0, -1.0], 2)


def test_batch_sampler():
    assert list(BatchSampler(range(7), 3, False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(BatchSampler(range(7), 3, True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(range(7), 3, False)) == 3
    assert len(BatchSampler(range(7), 3, True)) == 2
    with pytest.raises(ValueError, match="drop_last should be a boolean value"):
        BatchSampler(range(7), 3, None)


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize(
    ("replacement", "num_samples"), [(False, None), (False, 23), (False, 50), (True, 37)]
)
def test_batches_sliced_from_the_index_array_equal_the_index_by_index_order(
    replacement, num_samples, drop_last
):
    """BatchSampler slices a RandomSampler's int64 index array; iterating the sampler
    index by index gives the same order, as Python ints."""
    by_array = BatchSampler(
        RandomSampler(range(20), replacement, num_samples, seed=5), 6, drop_last
    )
    by_index = RandomSampler(range(20), replacement, num_samples, seed=5)
    for _ in range(2):  # two epochs: each draws its own seed, alike
        batches = list(by_array)
        flat = list(by_index)
        assert all(type(i) is int for batch in batches for i in batch)
        assert all(type(i) is int for i in flat)
        expected = [flat[i : i + 6] for i in range(0, len(flat), 6)]
        if drop_last and expected and len(expected[-1]) < 6:
            expected.pop()
        assert batches == expected
