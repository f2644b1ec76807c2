"""The per-worker copy reaches every dataset a worker calls through, as pickling
does for a torch worker process: a dataset inside ``Subset``, ``ConcatDataset``,
``StackDataset``, what ``random_split`` returns, or a user's own wrapper (on an
attribute, in a list or a dict) gets a copy of its own per worker, so a handle it
opens lazily on ``self`` is that worker's. Big attributes stay shared."""

from __future__ import annotations

import bisect
import threading

import pytest
from lazy_handles import CALLER_RUNS_WARNING, LazyFile, LazySqlite, write_database, write_records

import dataloader_api
from dataloader_api import DataLoader, get_worker_info

BACKENDS = [n for n in dataloader_api.backends() if not n.startswith("broken-")]
LENGTH = 600


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> str:
    return write_records(tmp_path_factory.mktemp("records"), LENGTH)


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> str:
    return write_database(tmp_path_factory.mktemp("sqlite"), LENGTH)


# Wrappers written as torch's are (torch is not installed in every session).
class Subset:
    def __init__(self, dataset: object, indices: list[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, index: int) -> int:
        return self.dataset[self.indices[index]]


class Concat:
    def __init__(self, datasets: list) -> None:
        self.datasets = list(datasets)
        self.ends = []
        for dataset in self.datasets:
            self.ends.append((self.ends[-1] if self.ends else 0) + len(dataset))

    def __len__(self) -> int:
        return self.ends[-1]

    def __getitem__(self, index: int) -> int:
        which = bisect.bisect_right(self.ends, index)
        return self.datasets[which][index - (self.ends[which - 1] if which else 0)]


class Stacked:
    """Fields from datasets held in a dict, as torch's StackDataset(**datasets)."""

    def __init__(self, **datasets: object) -> None:
        self.datasets = datasets

    def __len__(self) -> int:
        return LENGTH

    def __getitem__(self, index: int) -> int:
        values = [dataset[index] for dataset in self.datasets.values()]
        assert len(set(values)) == 1, values
        return values[0]


def halves(base: object) -> object:
    """A train/val split joined again: every record once, through two Subsets."""
    order = list(range(LENGTH))
    return Concat([Subset(base, order[: LENGTH // 2]), Subset(base, order[LENGTH // 2 :])])


WRAPPERS = {
    "Subset": lambda base: Subset(base, list(range(LENGTH))),
    "Subset of Subset": lambda base: Subset(Subset(base, list(range(LENGTH))), list(range(LENGTH))),
    "two Subsets in a Concat": halves,
    "Concat of two bases": lambda base: Concat([Subset(base, list(range(LENGTH // 2))), base]),
    "dict of datasets": lambda base: Stacked(a=base, b=Subset(base, list(range(LENGTH)))),
}


def values(loader: DataLoader) -> list[int]:
    return [int(x) for batch in loader for x in batch]


def expected(wrapper: str) -> list[int]:
    if wrapper == "Concat of two bases":
        return list(range(LENGTH // 2)) + list(range(LENGTH))
    return list(range(LENGTH))


@pytest.mark.filterwarnings(CALLER_RUNS_WARNING)
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("num_workers", [2, 4])
@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("wrapper", sorted(WRAPPERS))
@pytest.mark.parametrize("kind", ["lazy file", "sqlite3"])
def test_a_handle_inside_a_wrapper_gives_every_record(
    records, database, backend, num_workers, persistent, wrapper, kind
):
    base = LazyFile(records, LENGTH) if kind == "lazy file" else LazySqlite(database, LENGTH)
    dataset = WRAPPERS[wrapper](base)
    loader = DataLoader(
        dataset,
        batch_size=8,
        num_workers=num_workers,
        persistent_workers=persistent,
        backend=backend,
    )
    for _ in range(2):
        assert values(loader) == expected(wrapper)
    loader.close()
    # The loader's own objects were never called.
    assert getattr(base, "file", None) is None and getattr(base, "connection", None) is None


@pytest.mark.parametrize("backend", BACKENDS)
def test_each_worker_has_one_copy_of_a_base_reached_twice(backend):
    """Two Subsets of one base in a Concat: each worker calls one copy of the base
    through both (as a worker process unpickles one object), never the loader's."""
    seen: list[tuple[int, int]] = []
    lock = threading.Lock()

    class Base:
        def __len__(self) -> int:
            return 64

        def __getitem__(self, index: int) -> int:
            with lock:
                seen.append((get_worker_info().id, id(self)))
            return index

    base = Base()
    dataset = halves_of(base, 64)
    assert values(DataLoader(dataset, batch_size=4, num_workers=2, backend=backend)) == list(
        range(64)
    )
    copies: dict[int, set[int]] = {}
    for worker, me in seen:
        copies.setdefault(worker, set()).add(me)
    assert all(len(own) == 1 for own in copies.values()), copies
    assert id(base) not in {me for own in copies.values() for me in own}
    if len(copies) == 2:
        assert copies[0] != copies[1]


def halves_of(base: object, length: int) -> Concat:
    order = list(range(length))
    return Concat([Subset(base, order[: length // 2]), Subset(base, order[length // 2 :])])


def test_big_attributes_stay_shared():
    """Arrays, lists and the indices of a Subset are the loader's own objects in
    every worker's copy: nothing is duplicated in memory."""
    np = pytest.importorskip("numpy")
    seen: list[tuple[object, object, object]] = []
    lock = threading.Lock()

    class Table:
        def __init__(self) -> None:
            self.array = np.arange(LENGTH)
            self.rows = [(i, str(i)) for i in range(LENGTH)]

        def __len__(self) -> int:
            return LENGTH

        def __getitem__(self, index: int) -> int:
            with lock:
                seen.append((self, self.array, self.rows))
            return int(self.array[index])

    table = Table()
    indices = list(range(LENGTH))
    subset = Subset(table, indices)

    def note_indices(worker_id: int) -> None:
        assert get_worker_info().dataset.indices is indices

    loader = DataLoader(subset, batch_size=8, num_workers=2, worker_init_fn=note_indices)
    assert values(loader) == list(range(LENGTH))
    assert all(me is not table for me, _, _ in seen)
    assert all(array is table.array and rows is table.rows for _, array, rows in seen)


def test_share_dataset_shares_the_inner_datasets_too(records):
    selves: set[int] = set()

    class Probe(LazyFile):
        def __getitem__(self, index: int) -> int:
            selves.add(id(self))
            return index

    probe = Probe(records, LENGTH)
    loader = DataLoader(
        Subset(probe, list(range(LENGTH))), batch_size=8, num_workers=2, share_dataset=True
    )
    assert values(loader) == list(range(LENGTH))
    assert selves == {id(probe)}


def test_an_inner_dataset_that_cannot_be_copied_is_named_with_its_place():
    class Uncopyable:
        def __len__(self) -> int:
            return 4

        def __getitem__(self, index: int) -> int:
            return index

        def __copy__(self) -> Uncopyable:
            raise RuntimeError("holds a live socket")

    loader = DataLoader(Concat([Uncopyable()]), batch_size=2, num_workers=2)
    with pytest.raises(TypeError) as caught:
        iter(loader)
    message = str(caught.value)
    assert "Uncopyable (at dataset.datasets[0], inside the loader's dataset)" in message
    assert "RuntimeError: holds a live socket" in message
    assert "share_dataset=True" in message


def test_the_rule_for_inner_datasets():
    np = pytest.importorskip("numpy")
    from collections import UserList

    from dataloader_api._workers.dataset_copies import is_inner_dataset

    assert is_inner_dataset(LazyFile("x", 1))
    assert is_inner_dataset(Subset([], []))
    for not_a_dataset in ([1], {"a": 1}, (1,), np.arange(3), UserList([1]), LazyFile, len, "ab"):
        assert not is_inner_dataset(not_a_dataset), not_a_dataset


@pytest.mark.filterwarnings(CALLER_RUNS_WARNING)
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("num_workers", [2, 4])
@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("wrapper", ["random_split", "Subset", "ConcatDataset", "StackDataset"])
@pytest.mark.parametrize("kind", ["lazy file", "sqlite3"])
def test_torchs_wrappers_give_torchs_records(
    records, database, backend, num_workers, persistent, wrapper, kind
):
    data = pytest.importorskip("torch.utils.data")
    import torch

    def make() -> object:
        base = LazyFile(records, LENGTH) if kind == "lazy file" else LazySqlite(database, LENGTH)
        if wrapper == "random_split":
            train, val = data.random_split(base, [0.75, 0.25], torch.Generator().manual_seed(1))
            return data.ConcatDataset([train, val])
        if wrapper == "Subset":
            return data.Subset(base, list(range(LENGTH - 1, -1, -1)))
        if wrapper == "ConcatDataset":
            return data.ConcatDataset([base, data.Subset(base, list(range(10)))])
        return data.StackDataset(base, data.Subset(base, list(range(LENGTH))))

    def flat(batches) -> list:
        out = []
        for batch in batches:
            if isinstance(batch, (list, tuple)):  # StackDataset's tuples, collated
                out.extend(zip(*(column.tolist() for column in batch), strict=True))
            else:
                out.extend(batch.tolist())
        return out

    theirs = flat(data.DataLoader(make(), batch_size=8, num_workers=num_workers))
    loader = DataLoader(
        make(), batch_size=8, num_workers=num_workers, persistent_workers=persistent,
        backend=backend,
    )  # fmt: skip
    for _ in range(2):
        assert flat(loader) == theirs
    loader.close()
