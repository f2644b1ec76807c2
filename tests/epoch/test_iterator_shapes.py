"""Iterable datasets shaped like third-party ones: litdata's ``StreamingDataset``
starts its epoch in ``__iter__`` and returns ``self``, and its ``state_dict``
takes three arguments. torch's loader calls ``iter()`` once per epoch and
worker and never calls ``state_dict``; ours must do the same."""

from __future__ import annotations

from itertools import islice

import pytest

import dataloader_api
from dataloader_api import DataLoader, IterableDataset, get_worker_info

BACKENDS = [n for n in dataloader_api.backends() if not n.startswith("broken-")]
LENGTH = 23


class StartsInIter(IterableDataset):
    """``__iter__`` starts the epoch (this worker's share) and returns ``self``."""

    def __init__(self, length: int) -> None:
        self.length = length
        self.starts = 0
        self.at = self.step = 0

    def __iter__(self) -> StartsInIter:
        info = get_worker_info()
        self.starts += 1
        self.at, self.step = (info.id, info.num_workers) if info is not None else (0, 1)
        return self

    def __next__(self) -> int:
        if self.at >= self.length:
            raise StopIteration
        item, self.at = self.at, self.at + self.step
        return item

    def state_dict(self, num_samples_yielded: int, num_workers: int, batch_size: int) -> dict:
        raise AssertionError("state_dict(...) was called, but nobody asked for a state")

    def load_state_dict(self, state: dict) -> None:
        raise AssertionError("load_state_dict was called, but nobody loaded a state")


def items_of(loader: DataLoader, cap: int) -> list[int]:
    """The items of one epoch, taking at most ``cap`` batches (an endless epoch fails
    the assertion instead of hanging the suite)."""
    return [int(i) for batch in islice(loader, cap) for i in batch.tolist()]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("num_workers", [0, 1, 2, 4])
@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("batch_size", [1, 4])
def test_an_iterator_that_returns_itself_ends_its_epoch(
    backend, num_workers, persistent, batch_size
):
    dataset = StartsInIter(LENGTH)
    loader = DataLoader(
        dataset,
        batch_size=batch_size,
        num_workers=num_workers,
        persistent_workers=persistent and num_workers > 0,
        backend=backend,
    )
    for _ in range(2):  # each epoch ends, and the next one starts anew
        items = items_of(loader, cap=LENGTH + 5)
        assert sorted(items) == list(range(LENGTH))
    if num_workers == 0:
        assert dataset.starts == 2  # one iter() per epoch, as torch's loader
    loader.close()


@pytest.mark.parametrize("transform", [None, lambda position, item: item])
def test_iter_is_called_once_per_worker_and_epoch(transform):
    dataset = StartsInIter(LENGTH)
    items = items_of(DataLoader(dataset, batch_size=3, transform=transform), cap=LENGTH)
    assert items == list(range(LENGTH))
    assert dataset.starts == 1


def test_a_state_dict_that_takes_arguments_is_named_when_a_state_is_asked():
    loader = DataLoader(StartsInIter(LENGTH), batch_size=2, num_workers=2)
    iterator = iter(loader)
    next(iterator)
    with pytest.raises(TypeError) as caught:
        loader.state_dict()
    message = str(caught.value)
    assert "StartsInIter" in message
    assert "state_dict(num_samples_yielded, num_workers, batch_size)" in message
    assert "with none" in message
    iterator.close()


def test_torch_agrees_where_installed():
    torch_data = pytest.importorskip("torch.utils.data")

    class TorchStartsInIter(StartsInIter, torch_data.IterableDataset):
        def __iter__(self) -> TorchStartsInIter:
            info = torch_data.get_worker_info()
            self.starts += 1
            self.at, self.step = (info.id, info.num_workers) if info is not None else (0, 1)
            return self

    theirs = torch_data.DataLoader(TorchStartsInIter(LENGTH), batch_size=4, num_workers=2)
    ours = DataLoader(StartsInIter(LENGTH), batch_size=4, num_workers=2)
    assert items_of(ours, cap=LENGTH + 5) == [
        int(i) for batch in islice(theirs, LENGTH + 5) for i in batch.tolist()
    ]
