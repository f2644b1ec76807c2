"""loader.stats(), epoch summaries and progress bars."""

from __future__ import annotations

import importlib.util
import json
import threading
import time

import pytest

import dataloader_api
from dataloader_api import DataLoader, EpochStats, IterableDataset

BACKENDS = [None, *[n for n in dataloader_api.backends() if not n.startswith("broken-")]]


class Slow:
    def __init__(self, length: int, seconds: float) -> None:
        self.length, self.seconds = length, seconds

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> int:
        time.sleep(self.seconds)
        return index


def workers_for(backend):
    return 0 if backend is None else 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_counts_and_times_of_a_whole_epoch(backend):
    loader = DataLoader(
        Slow(40, 0.002),
        batch_size=8,
        num_workers=workers_for(backend),
        backend=backend,
        collect_stats=True,
    )
    assert sum(len(b) for b in loader) == 40
    stats = loader.stats()
    assert (stats.batches, stats.items, stats.finished) == (5, 40, True)
    assert stats.fetch_seconds >= 40 * 0.002 * 0.9  # summed over the workers
    assert stats.collate_seconds > 0
    assert 0 < stats.wait_seconds <= stats.elapsed_seconds
    assert stats.num_workers == workers_for(backend)


@pytest.mark.parametrize("backend", BACKENDS[1:])
def test_a_slow_loader_is_named_the_bottleneck(backend):
    loader = DataLoader(
        Slow(64, 0.005), batch_size=8, num_workers=2, backend=backend, collect_stats=True
    )
    for _ in loader:
        pass  # the training loop takes no time
    stats = loader.stats()
    assert stats.bottleneck == "loader"
    assert stats.wait_share > 0.5


class Counted:
    """Items that count themselves, so a test can wait for the loader to be ahead."""

    def __init__(self, length: int) -> None:
        self.length = length
        self.done = [0]  # mutated in place: shared by the workers' copies
        self.changed = threading.Condition()

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> int:
        with self.changed:
            self.done[0] += 1
            self.changed.notify_all()
        return index

    def wait_for(self, count: int) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: self.done[0] >= count, timeout=60), self.done


class CountedBatches:
    """A collate function that counts the batches it made, so a test can wait for
    the workers to have the window's batches ready."""

    def __init__(self) -> None:
        self.done = 0
        self.changed = threading.Condition()

    def __call__(self, batch: list[int]) -> list[int]:
        with self.changed:
            self.done += 1
            self.changed.notify_all()
        return batch

    def wait_for(self, count: int) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: self.done >= count, timeout=60), self.done


@pytest.mark.parametrize("backend", BACKENDS[1:])
def test_a_slow_training_loop_is_named_the_bottleneck(backend):
    """The loop is slower than the loader by construction, on any machine: before
    each batch after the first it waits (an event, not a duration) until the
    workers have collated the whole window ahead of it, and its model step lasts
    at least 20 times what the first batch (the workers' start, which nothing can
    make ready sooner) took. (Waiting for the items alone, with a fixed 50 ms
    step, failed beside a CPU load: the first batch took over a tenth of the epoch.)"""
    collate = CountedBatches()
    loader = DataLoader(
        Counted(64),
        batch_size=8,
        num_workers=2,
        prefetch_factor=2,
        backend=backend,
        collect_stats=True,
        collate_fn=collate,
    )
    window = 2 * 2
    batches = iter(loader)
    started = time.perf_counter()
    next(batches)  # the workers start with it
    step = max(0.05, 20 * (time.perf_counter() - started))
    time.sleep(step)  # the model
    for taken in range(2, 9):
        collate.wait_for(min(8, taken + window - 1))  # the batch about to be taken counts
        next(batches)
        time.sleep(step)
    assert next(batches, None) is None
    stats = loader.stats()
    assert stats.bottleneck == "training loop"
    assert stats.wait_share < 0.1
    # the workers kept the window full ahead of the loop
    assert stats.mean_window_occupancy is not None
    assert stats.mean_window_occupancy >= stats.window - 1


def test_stats_mid_epoch_and_before_any_epoch():
    with pytest.raises(RuntimeError, match=r"needs DataLoader\(\.\.\., collect_stats=True\)"):
        DataLoader(list(range(10))).stats()
    loader = DataLoader(list(range(10)), batch_size=2, num_workers=1, collect_stats=True)
    with pytest.raises(RuntimeError, match="no epoch of this loader has started yet"):
        loader.stats()
    it = iter(loader)
    next(it)
    mid = loader.stats()
    assert (mid.batches, mid.finished) == (1, False)
    assert mid.elapsed_seconds > 0
    json.dumps(mid.as_dict())  # plain data
    list(it)
    assert loader.stats().batches == 5


def test_iterable_datasets_count_batches_and_collate_time():
    class Stream(IterableDataset):
        def __iter__(self):
            return iter(range(12))

    loader = DataLoader(Stream(), batch_size=4, num_workers=2, collect_stats=True)
    assert sum(len(b) for b in loader) == 24  # each worker yields the whole stream
    stats = loader.stats()
    assert stats.batches == 6
    assert stats.fetch_seconds is None  # inside the dataset's own iterator
    assert stats.collate_seconds > 0
    assert stats.mean_window_occupancy is None


def test_an_error_batch_counts_as_delivered():
    class Fails(Slow):
        def __getitem__(self, index):
            if index == 3:
                raise ValueError("bad item")
            return index

    loader = DataLoader(Fails(8, 0), batch_size=2, num_workers=1, collect_stats=True)
    it = iter(loader)
    next(it)
    with pytest.raises(ValueError):
        next(it)
    assert loader.stats().batches == 2


def test_epoch_summary_prints_or_calls_back(capsys):
    loader = DataLoader(list(range(6)), batch_size=2, num_workers=1, epoch_summary=True)
    list(loader)
    err = capsys.readouterr().err
    assert err.startswith("dataloader_api: epoch 1: 3 batches, 6 items in ")
    assert "bottleneck: " in err
    seen: list[EpochStats] = []
    loader = DataLoader(list(range(6)), batch_size=2, epoch_summary=seen.append)
    list(loader)
    list(loader)
    assert [s.epoch for s in seen] == [1, 2]
    assert all(s.finished and s.batches == 3 for s in seen)
    with pytest.raises(TypeError, match="epoch_summary should be a bool or a callable"):
        DataLoader([1], epoch_summary="yes")


@pytest.mark.skipif(importlib.util.find_spec("tqdm") is None, reason="tqdm is not installed")
def test_tqdm_gets_the_right_total():
    from tqdm import tqdm

    loader = DataLoader(list(range(10)), batch_size=3, num_workers=2)
    bar = tqdm(loader, disable=True)
    assert bar.total == len(loader) == 4
    assert sum(len(b) for b in bar) == 10
