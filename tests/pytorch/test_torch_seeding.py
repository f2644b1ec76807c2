"""Seeding as torch users rely on it (torch session): torch.manual_seed fixes the
shuffle, a torch.Generator gives torch's own order and worker seeds, and a loader
resumed mid-epoch replays the same order."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed; run `nox -s torch_parity`")
from torch.utils.data import DataLoader as TorchDataLoader  # noqa: E402
from torch.utils.data import RandomSampler as TorchRandomSampler  # noqa: E402
from torch.utils.data import SubsetRandomSampler as TorchSubsetRandomSampler  # noqa: E402
from torch.utils.data import WeightedRandomSampler as TorchWeightedRandomSampler  # noqa: E402

from dataloader_api import (  # noqa: E402
    DataLoader,
    RandomSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
    get_worker_info,
)


class Seeds(torch.utils.data.Dataset):
    """Each item is (index, its worker's seed)."""

    def __len__(self):
        return 24

    def __getitem__(self, index):
        info = torch.utils.data.get_worker_info()
        return index, -1 if info is None else info.seed


def epochs(loader_class, generator, count=3, **kwargs):
    """(index, worker seed) of every item of ``count`` epochs, in delivery order."""
    loader = loader_class(Seeds(), batch_size=4, shuffle=True, generator=generator, **kwargs)
    return [
        (int(index), int(seed))
        for _ in range(count)
        for indices, seeds in loader
        for index, seed in zip(indices, seeds, strict=True)
    ]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"num_workers": 0},
        {"num_workers": 2},
        {"num_workers": 2, "persistent_workers": True},
    ],
    ids=["calling-thread", "workers", "persistent"],
)
def test_a_torch_generator_gives_torchs_order_and_worker_seeds(kwargs):
    theirs = epochs(TorchDataLoader, torch.Generator().manual_seed(7), **kwargs)
    ours = epochs(DataLoader, torch.Generator().manual_seed(7), **kwargs)
    # The same indices in the same order; and the workers' seeds are torch's
    # (base + worker id, one base per iterator), though which thread loads a
    # batch may differ (a free thread takes the next job; torch deals them out).
    assert [i for i, _ in ours] == [i for i, _ in theirs]
    if kwargs["num_workers"]:
        assert {s for _, s in ours} <= {s for _, s in theirs}


def test_torch_manual_seed_fixes_the_shuffle():
    def run():
        torch.manual_seed(11)
        loader = DataLoader(range(30), batch_size=5, shuffle=True, num_workers=2)
        return [[b.tolist() for b in loader] for _ in range(2)]

    first, second = run(), run()
    assert first == second
    assert first[0] != first[1]  # a new shuffle per epoch
    torch.manual_seed(12)
    other = [b.tolist() for b in DataLoader(range(30), batch_size=5, shuffle=True)]
    assert other != first[0]


@pytest.mark.parametrize("replacement", [False, True])
def test_samplers_with_a_torch_generator_equal_torchs(replacement):
    def both(ours, theirs):
        assert [list(ours) for _ in range(3)] == [list(theirs) for _ in range(3)]

    gen = lambda: torch.Generator().manual_seed(5)  # noqa: E731
    both(
        RandomSampler(range(70), replacement, 45, generator=gen()),
        TorchRandomSampler(range(70), replacement, 45, generator=gen()),
    )
    both(SubsetRandomSampler([3, 9, 4, 1], gen()), TorchSubsetRandomSampler([3, 9, 4, 1], gen()))
    weights = [0.1, 2.0, 0.5, 1.0, 3.0]
    count = 12 if replacement else 4
    both(
        WeightedRandomSampler(weights, count, replacement, gen()),
        TorchWeightedRandomSampler(weights, count, replacement, gen()),
    )


@pytest.mark.parametrize("persistent", [False, True])
def test_resuming_with_a_torch_generator_replays_the_epoch(persistent):
    def build():
        return DataLoader(
            range(40),
            batch_size=4,
            shuffle=True,
            num_workers=2,
            persistent_workers=persistent,
            generator=torch.Generator().manual_seed(3),
        )

    original = build()
    list(original)  # one whole epoch first: the generator has moved on
    iterator = iter(original)
    head = [next(iterator).tolist() for _ in range(3)]
    state = original.state_dict()
    rest = [b.tolist() for b in iterator]
    resumed = build()
    resumed.load_state_dict(state)
    assert [b.tolist() for b in resumed] == rest
    assert sorted(i for b in head + rest for i in b) == list(range(40))


def test_worker_info_seed_is_torchs_for_a_torch_generator():
    seen = {}

    def record(worker_id):
        seen[worker_id] = (get_worker_info().seed, torch.utils.data.get_worker_info().seed)

    loader = DataLoader(
        range(8), num_workers=2, worker_init_fn=record, generator=torch.Generator().manual_seed(9)
    )
    list(loader)
    base = int(
        torch.empty((), dtype=torch.int64)
        .random_(generator=torch.Generator().manual_seed(9))
        .item()
    )
    assert seen == {0: (base, base), 1: (base + 1, base + 1)}


BACKENDS = [n for n in __import__("dataloader_api").backends() if not n.startswith("broken-")]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "kwargs",
    [{"num_workers": 0}, {"num_workers": 2}, {"num_workers": 2, "persistent_workers": True}],
    ids=["calling-thread", "workers", "persistent"],
)
@pytest.mark.parametrize("sampler", ["WeightedRandomSampler", "RandomSampler"])
def test_a_sampler_on_the_global_generator_follows_torch_every_epoch(backend, kwargs, sampler):
    """No seed, no generator: each iterator draws its base seed from torch's global
    generator, as torch's does, so a sampler drawing from it (torch's own, without a
    generator) gives torch's order in every epoch, and the worker seeds are torch's."""

    def run(loader_class, **extra):
        torch.manual_seed(17)
        if sampler == "WeightedRandomSampler":
            chosen = TorchWeightedRandomSampler([0.5, 1.0, 2.0, 3.0] * 6, 24)
        else:
            chosen = TorchRandomSampler(range(24))
        loader = loader_class(Seeds(), batch_size=4, sampler=chosen, **kwargs, **extra)
        return [
            (int(index), int(seed))
            for _ in range(3)
            for indices, seeds in loader
            for index, seed in zip(indices, seeds, strict=True)
        ]

    theirs = run(TorchDataLoader)
    ours = run(DataLoader, backend=backend)
    assert [i for i, _ in ours] == [i for i, _ in theirs]
    if kwargs["num_workers"]:
        assert {s for _, s in ours} <= {s for _, s in theirs}
