"""The calling thread's batches (``num_workers=0``) in the default plan, read
straight from each batch's range (``SequentialItemBatches``): the same batches,
errors and resume as the batch sampler's own order."""

from __future__ import annotations

import pytest

from dataloader_api import BatchSampler, DataLoader, SequentialSampler
from dataloader_api._epoch.calling_thread import CallingThreadBatches, SequentialItemBatches


def identity(batch):
    return batch


@pytest.mark.parametrize("n", [0, 1, 31, 32, 33, 100])
@pytest.mark.parametrize("size", [1, 7, 32])
@pytest.mark.parametrize("drop_last", [False, True])
def test_batches_equal_the_batch_samplers(n, size, drop_last):
    loader = DataLoader(range(n), batch_size=size, drop_last=drop_last, collate_fn=identity)
    epoch = iter(loader)
    assert type(epoch._batches) is SequentialItemBatches
    assert list(epoch) == list(BatchSampler(SequentialSampler(range(n)), size, drop_last))
    assert len(loader) == len(list(loader))


def test_only_the_plain_default_plan_takes_the_shortcut():
    class Batched:
        def __len__(self):
            return 10

        def __getitem__(self, index):
            return index

        def __getitems__(self, indices):
            return list(indices)

    for loader in [
        DataLoader(Batched(), batch_size=3),
        DataLoader(range(10), batch_size=3, shuffle=True),
        DataLoader(range(10), batch_size=3, transform=lambda index, item: item),
        DataLoader(range(10), batch_size=3, collect_stats=True),
    ]:
        assert type(iter(loader)._batches) is CallingThreadBatches


def test_a_failed_batch_counts_and_the_next_one_follows():
    class Failing:
        def __len__(self):
            return 10

        def __getitem__(self, index):
            if index == 4:
                raise KeyError(index)
            return index

    epoch = iter(DataLoader(Failing(), batch_size=3, collate_fn=identity))
    assert next(epoch) == [0, 1, 2]
    with pytest.raises(KeyError):
        next(epoch)
    assert epoch.position == 2
    assert list(epoch) == [[6, 7, 8], [9]]


def test_a_resumed_epoch_starts_at_its_batch():
    loader = DataLoader(range(20), batch_size=3, drop_last=True, collate_fn=identity)
    epoch = iter(loader)
    next(epoch), next(epoch)
    state = loader.state_dict()
    resumed = DataLoader(range(20), batch_size=3, drop_last=True, collate_fn=identity)
    resumed.load_state_dict(state)
    assert list(resumed) == [[6, 7, 8], [9, 10, 11], [12, 13, 14], [15, 16, 17]]
