"""state_dict() / load_state_dict(): a fresh loader continues exactly where one stopped."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from dataloader_api import (
    DataLoader,
    DistributedSampler,
    IterableDataset,
    RandomSampler,
    WeightedRandomSampler,
)
from dataloader_api.testing import ResumableShards


def lists(batches):
    return [b.tolist() if hasattr(b, "tolist") else b for b in batches]


def through_json(state):
    return json.loads(json.dumps(state))


MAKERS = {
    "sequential": lambda: DataLoader(list(range(50)), batch_size=4, num_workers=2),
    "shuffled": lambda: DataLoader(
        list(range(50)), batch_size=4, shuffle=True, seed=9, num_workers=2
    ),
    "numpy generator": lambda: DataLoader(
        list(range(50)),
        batch_size=3,
        shuffle=True,
        generator=np.random.default_rng(5),
        num_workers=1,
    ),
    "random.Random": lambda: DataLoader(
        list(range(50)), batch_size=3, shuffle=True, generator=random.Random(5)
    ),
    "weighted": lambda: DataLoader(
        list(range(50)),
        batch_size=5,
        num_workers=2,
        sampler=WeightedRandomSampler([1.0] * 50, 40, seed=2),
    ),
    "distributed": lambda: DataLoader(
        list(range(50)),
        batch_size=4,
        num_workers=2,
        sampler=DistributedSampler(range(50), 2, 1, seed=3),
    ),
    "index shuffle": lambda: DataLoader(
        list(range(50)),
        batch_size=4,
        num_workers=2,
        sampler=RandomSampler(range(50), num_samples=70, seed=6, index_shuffle=True),
    ),
    "distributed index shuffle": lambda: DataLoader(
        list(range(50)),
        batch_size=3,
        num_workers=2,
        sampler=DistributedSampler(range(50), 3, 2, seed=3, index_shuffle=True),
    ),
    "unbatched": lambda: DataLoader(list(range(20)), batch_size=None, shuffle=True, seed=1),
    "drop_last": lambda: DataLoader(
        list(range(50)),
        batch_size=6,
        drop_last=True,
        shuffle=True,
        seed=4,
        num_workers=2,
        persistent_workers=True,
    ),
}


@pytest.mark.parametrize("kind", sorted(MAKERS))
@pytest.mark.parametrize("taken_after", [0, 1, 5])
def test_mid_epoch_state_gives_exactly_the_remaining_batches(kind, taken_after):
    make = MAKERS[kind]
    original = make()
    first_epoch = lists(original)  # epoch 0, whole
    second = iter(original)  # epoch 1, interrupted
    delivered = [next(second) for _ in range(taken_after)]
    state = through_json(original.state_dict())
    rest_of_second = lists(second)
    third_epoch = lists(original)
    assert first_epoch  # the loaders are not trivially empty

    resumed = make()
    resumed.load_state_dict(state)
    assert lists(resumed) == rest_of_second
    assert lists(resumed) == third_epoch
    assert len(delivered) == taken_after


def test_prefetched_batches_are_not_lost():
    original = DataLoader(list(range(64)), batch_size=2, num_workers=2, prefetch_factor=4)
    iterator = iter(original)
    taken = [next(iterator).tolist() for _ in range(3)]  # more are loaded by now
    state = original.state_dict()
    resumed = DataLoader(list(range(64)), batch_size=2, num_workers=2)
    resumed.load_state_dict(state)
    assert taken + lists(resumed) == [[i, i + 1] for i in range(0, 64, 2)]
    iterator.close()


def test_state_between_epochs_resumes_at_the_next_epoch():
    original = DataLoader(list(range(30)), batch_size=4, shuffle=True, seed=1)
    lists(original)
    state = original.state_dict()
    expected = lists(original)
    resumed = DataLoader(list(range(30)), batch_size=4, shuffle=True, seed=1)
    resumed.load_state_dict(state)
    assert lists(resumed) == expected
    assert state["epoch"] == 1 and state["batches_consumed"] == 0


def test_state_of_a_loaded_loader_is_the_loaded_state():
    loader = DataLoader(list(range(10)), batch_size=2)
    state = DataLoader(list(range(10)), batch_size=2).state_dict()
    loader.load_state_dict(state)
    assert loader.state_dict() == state


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"batch_size": 5}, "batch_size=4, but this loader has batch_size=5"),
        ({"length": 31}, "dataset_length=30, but this loader has dataset_length=31"),
        ({"drop_last": True}, "drop_last"),
        ({"shuffle": False}, r"sampler='BatchSampler\(RandomSampler\)'"),
    ],
)
def test_a_state_from_another_configuration_is_rejected(change, message):
    def make(length=30, batch_size=4, drop_last=False, shuffle=True):
        return DataLoader(
            list(range(length)), batch_size=batch_size, drop_last=drop_last, shuffle=shuffle, seed=0
        )

    state = make().state_dict()
    with pytest.raises(ValueError, match=message):
        make(**change).load_state_dict(state)


def test_version_and_garbage_are_rejected():
    loader = DataLoader(list(range(10)), batch_size=2)
    state = loader.state_dict()
    with pytest.raises(ValueError, match="version"):
        loader.load_state_dict({**state, "version": 99})
    with pytest.raises(TypeError, match="should be a dict"):
        loader.load_state_dict([1, 2])
    with pytest.raises(ValueError, match="batches_consumed"):
        loader.load_state_dict({**state, "batches_consumed": -1})


def test_an_unresumable_sampler_is_named():
    class Opaque:
        def __iter__(self):
            return iter(range(10))

        def __len__(self):
            return 10

    loader = DataLoader(list(range(10)), sampler=Opaque(), batch_size=2)
    assert len(lists(loader)) == 5  # iterating works; only taking a state does not
    with pytest.raises(TypeError, match="sampler Opaque has no state_dict"):
        loader.state_dict()


def test_generator_and_seed_states_do_not_mix():
    seeded = DataLoader(list(range(10)), shuffle=True, seed=1)
    with pytest.raises(ValueError, match="generator"):
        DataLoader(
            list(range(10)), shuffle=True, generator=np.random.default_rng(1)
        ).load_state_dict(seeded.state_dict())


@pytest.mark.parametrize("num_workers", [0, 1, 2, 3])
@pytest.mark.parametrize("taken_after", [0, 2, 5])
def test_iterable_dataset_resumes_each_worker(num_workers, taken_after):
    def make():
        return DataLoader(ResumableShards(40), batch_size=3, num_workers=num_workers)

    original = make()
    iterator = iter(original)
    taken = [next(iterator).tolist() for _ in range(taken_after)]
    state = through_json(original.state_dict())
    iterator.close()
    resumed = make()
    resumed.load_state_dict(state)
    rest = lists(resumed)
    assert taken + rest == lists(make())
    assert sorted(i for b in lists(resumed) for i in b) == list(range(40))  # next epoch: whole


def test_iterable_without_the_protocol_is_named():
    class Plain(IterableDataset):
        def __iter__(self):
            return iter(range(3))

    with pytest.raises(TypeError, match="Plain has no state_dict"):
        DataLoader(Plain()).state_dict()


def test_iterable_state_requires_the_same_worker_count():
    state = DataLoader(ResumableShards(10), num_workers=2).state_dict()
    with pytest.raises(ValueError, match="num_workers=2, but this loader has num_workers=3"):
        DataLoader(ResumableShards(10), num_workers=3).load_state_dict(state)
