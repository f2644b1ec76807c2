"""Loading through the selected backend: the batches a user gets, errors, timeouts
(the threads' life across epochs and stops: test_loader_threads.py)."""

from __future__ import annotations

import os
import random
import threading
import time
import traceback
import warnings

import numpy as np
import pytest

from dataloader_api import (
    DataLoader,
    DataLoaderTimeoutError,
    IterableDataset,
    SyntheticImages,
    get_worker_info,
)
from dataloader_api.testing import Recorder, wait_until


def as_lists(loader):
    return [batch.tolist() for batch in loader]


@pytest.mark.parametrize("num_workers", [0, 1, 2, 3])
@pytest.mark.parametrize(
    ("length", "batch_size", "drop_last"),
    [(0, 4, False), (1, 4, False), (10, 3, False), (10, 3, True), (12, 4, True)],
)
def test_batches_equal_the_sequential_plan(num_workers, length, batch_size, drop_last):
    loader = DataLoader(
        list(range(length)), batch_size=batch_size, drop_last=drop_last, num_workers=num_workers
    )
    indices = list(range(length))
    expected = [indices[i : i + batch_size] for i in range(0, length, batch_size)]
    if drop_last:
        expected = [b for b in expected if len(b) == batch_size]
    assert as_lists(loader) == expected
    assert len(loader) == len(expected)


@pytest.mark.parametrize("num_workers", [1, 2, 4])
def test_same_seed_same_batches_for_every_worker_count(num_workers):
    def epochs(workers):
        loader = DataLoader(
            list(range(57)), batch_size=5, shuffle=True, seed=11, num_workers=workers
        )
        return [as_lists(loader) for _ in range(3)]

    reference = epochs(0)
    assert epochs(num_workers) == reference
    assert reference[0] != reference[1]  # reshuffled every epoch
    assert sorted(i for batch in reference[0] for i in batch) == list(range(57))


def test_batch_size_none_yields_converted_samples():
    loader = DataLoader([{"x": 1}, {"x": 2}], batch_size=None, num_workers=2)
    assert list(loader) == [{"x": 1}, {"x": 2}]


def test_batch_sampler_and_getitems_are_used():
    class Batched:
        def __init__(self):
            self.batches = []

        def __len__(self):
            return 6

        def __getitem__(self, i):
            raise AssertionError("__getitems__ should be used")

        def __getitems__(self, indices):
            self.batches.append(list(indices))
            return [i * 10 for i in indices]

    data = Batched()
    loader = DataLoader(data, batch_sampler=[[5, 0], [2], [1, 3, 4]], num_workers=2)
    assert as_lists(loader) == [[50, 0], [20], [10, 30, 40]]
    assert sorted(map(tuple, data.batches)) == [(1, 3, 4), (2,), (5, 0)]


def test_numpy_items_are_stacked():
    loader = DataLoader(SyntheticImages(20, shape=(3, 8, 8)), batch_size=8, num_workers=2)
    images, labels = next(iter(loader))
    assert images.shape == (8, 3, 8, 8) and images.dtype == np.float32
    assert labels.dtype == np.int64 and labels.tolist() == list(range(8))


@pytest.mark.timing
def test_unordered_delivery_does_not_wait_for_a_slow_batch():
    data = Recorder(40, blocked={0})  # until released: an event, not a duration
    loader = DataLoader(data, batch_size=1, num_workers=2, in_order=False)
    it = iter(loader)
    got = [next(it).tolist()[0]]
    came_first = not data.returned(0)
    data.release.set()
    got += [b.tolist()[0] for b in it]
    assert sorted(got) == list(range(40))
    assert got[0] != 0 and came_first


@pytest.mark.timing
def test_window_stays_bounded_behind_a_slow_batch():
    data = Recorder(200, blocked={3})  # batch 1 waits until released
    loader = DataLoader(data, batch_size=2, num_workers=2, prefetch_factor=2)
    it = iter(loader)
    assert next(it).tolist() == [0, 1]
    # The consumer stalls behind batch 1: 1 batch consumed and a window of 2 * 2, so
    # batches up to 4 start (waited for, however slow the machine), and none after.
    assert wait_until(lambda: max(i // 2 for i in data.calls) >= 4)
    time.sleep(0.2)
    assert max(i // 2 for i in data.calls) == 4
    data.release.set()
    it.close()


class Boom(Exception):
    pass


class FailsAt:
    def __init__(self, bad):
        self.bad = bad

    def __len__(self):
        return 10

    def __getitem__(self, i):
        if i == self.bad:
            raise Boom(f"item {i} is broken")
        return i


@pytest.mark.parametrize("num_workers", [0, 2])
def test_dataset_error_reaches_the_consumer_with_its_traceback(num_workers):
    loader = DataLoader(FailsAt(5), batch_size=2, num_workers=num_workers)
    it = iter(loader)
    assert next(it).tolist() == [0, 1] and next(it).tolist() == [2, 3]
    with pytest.raises(Boom, match="item 5 is broken") as info:
        next(it)
    frames = [frame.name for frame in traceback.extract_tb(info.value.__traceback__)]
    assert "__getitem__" in frames
    it.close()
    # the loader stays usable for the next epoch
    loader.dataset.bad = -1
    assert as_lists(loader) == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]]


def test_stream_continues_after_an_error_like_torch():
    it = iter(DataLoader(FailsAt(2), batch_size=2, num_workers=2))
    assert next(it).tolist() == [0, 1]
    with pytest.raises(Boom):
        next(it)
    assert [b.tolist() for b in it] == [[4, 5], [6, 7], [8, 9]]


def test_collate_error_propagates():
    def bad_collate(batch):
        raise ValueError("cannot collate this")

    with pytest.raises(ValueError, match="cannot collate this"):
        list(DataLoader(range(4), batch_size=2, num_workers=2, collate_fn=bad_collate))


@pytest.mark.timing
def test_timeout_names_the_batch():
    data = Recorder(10, blocked={4})
    loader = DataLoader(data, batch_size=2, num_workers=2, timeout=0.3)
    it = iter(loader)
    next(it), next(it)
    with pytest.raises(
        DataLoaderTimeoutError,
        match=r"^DataLoader timed out after 0.3 seconds, waiting for batch 2 \(indices \[4, 5\]\)",
    ):
        next(it)
    assert not data.returned(4), "the timeout waited for the item"
    data.release.set()
    it.close()
    assert isinstance(DataLoaderTimeoutError("x"), RuntimeError)


def test_worker_info_and_worker_init_fn_run_on_each_thread():
    seen = {}
    inits = []
    lock = threading.Lock()

    def init(worker_id):
        with lock:
            inits.append((worker_id, threading.get_ident()))

    class Probe:
        def __len__(self):
            return 64

        def __getitem__(self, i):
            info = get_worker_info()
            with lock:
                seen.setdefault(threading.get_ident(), set()).add((info.id, info.num_workers))
            time.sleep(0.001)
            return i

    loader = DataLoader(Probe(), batch_size=2, num_workers=3, worker_init_fn=init, seed=4)
    assert sum(len(b) for b in loader) == 64
    assert sorted(w for w, _ in inits) == [0, 1, 2]
    by_thread = dict((t, w) for w, t in inits)
    consumer = threading.get_ident()  # caller-runs: it may make batches as any worker
    for thread, pairs in seen.items():
        if thread == consumer:
            assert pairs <= {(0, 3), (1, 3), (2, 3)}
        else:
            assert pairs == {(by_thread[thread], 3)}
    assert get_worker_info() is None


def test_worker_seeds_follow_the_loader_seed():
    def seeds(seed):
        got = []
        lock = threading.Lock()

        def init(worker_id):
            with lock:
                got.append(get_worker_info().seed - worker_id)

        list(DataLoader(range(4), num_workers=2, worker_init_fn=init, seed=seed))
        return got

    a, b = seeds(1), seeds(1)
    assert len(set(a)) == 1 and a == b and seeds(2) != a


def test_worker_info_has_torchs_rng_and_worker_method_fields():
    """Each worker's own generators, seeded with its seed (the process-wide ones are
    shared by all threads), as torch 2.15's WorkerInfo.rng describes them."""

    class Draws:
        def __len__(self):
            return 6

        def __getitem__(self, index):
            info = get_worker_info()
            return (
                info.seed,
                info.worker_method,
                info.rng.random_generator.getrandbits(32),
                int(info.rng.numpy_generator.integers(2**32)),
            )

    rows = list(DataLoader(Draws(), batch_size=None, num_workers=2, seed=4))
    by_seed = {}
    for seed, method, from_random, from_numpy in rows:
        assert method == "thread"
        by_seed.setdefault(seed, []).append((from_random, from_numpy))
    for seed, draws in by_seed.items():  # each worker's streams, in its own order
        expected_random, expected_numpy = random.Random(seed), np.random.default_rng(seed)
        assert draws == [
            (expected_random.getrandbits(32), int(expected_numpy.integers(2**32))) for _ in draws
        ]


class Shards(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))


@pytest.mark.parametrize("num_workers", [0, 1, 2, 3])
def test_torch_sharding_idiom_yields_every_item_once(num_workers):
    loader = DataLoader(Shards(23), batch_size=4, num_workers=num_workers)
    items = [i for batch in as_lists(loader) for i in batch]
    assert sorted(items) == list(range(23))


def test_iterable_in_order_is_round_robin_over_workers():
    loader = DataLoader(Shards(10), batch_size=2, num_workers=2)
    assert as_lists(loader) == [[0, 2], [1, 3], [4, 6], [5, 7], [8], [9]]


def test_worker_init_fn_can_configure_its_copy_of_an_iterable_dataset():
    class Range(IterableDataset):
        def __init__(self, start, end):
            self.start, self.end = start, end

        def __iter__(self):
            return iter(range(self.start, self.end))

    def split(worker_id):
        info = get_worker_info()
        dataset = info.dataset
        per_worker = (dataset.end - dataset.start) // info.num_workers
        dataset.start, dataset.end = worker_id * per_worker, (worker_id + 1) * per_worker

    dataset = Range(0, 8)
    loader = DataLoader(dataset, batch_size=None, num_workers=2, worker_init_fn=split)
    assert sorted(int(x) for x in loader) == list(range(8))
    assert (dataset.start, dataset.end) == (0, 8)  # the user's object is untouched


def test_iterable_error_ends_only_that_stream():
    class Flaky(IterableDataset):
        def __iter__(self):
            info = get_worker_info()
            for i in range(3):
                if info.id == 1 and i == 1:
                    raise Boom("stream 1 broke")
                yield info.id * 100 + i

    it = iter(DataLoader(Flaky(), batch_size=None, num_workers=2))
    got = []
    with pytest.raises(Boom):
        for x in it:
            got.append(int(x))
    got += [int(x) for x in it]
    assert sorted(got) == [0, 1, 2, 100]


class LongerThanItsLen(IterableDataset):
    def __len__(self):
        return 4

    def __iter__(self):
        return iter(range(10))


def test_an_iterable_dataset_longer_than_its_len_warns_at_each_later_batch():
    loader = DataLoader(LongerThanItsLen(), batch_size=2, num_workers=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        list(loader)  # len() not taken: nothing to compare with
        assert len(loader) == 2
        assert len(list(loader)) == 5
    assert len(caught) == 3  # as torch: batches 3, 4 and 5
    for warning, fetched in zip(caught, (3, 4, 5), strict=True):
        assert str(warning.message).startswith("Length of IterableDataset")
        assert f"reported to be 2 (when accessing len(dataloader)), but {fetched} samples" in (
            str(warning.message)
        )
        assert warning.filename == __file__  # points at the user's loop


def test_more_workers_than_cpus_warns_as_torch_does():
    cpus = len(os.sched_getaffinity(0))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        list(DataLoader(range(4), num_workers=cpus))
        assert not caught
        list(DataLoader(range(4), num_workers=cpus + 1))
    # As torch: when the loader is built and when its epoch's workers start, each
    # pointing at the user's line.
    built, started = caught
    for warning in (built, started):
        assert f"will create {cpus + 1} worker threads in total" in str(warning.message)
        assert f"suggested max number of worker in current system is {cpus}," in str(
            warning.message
        )
        assert warning.filename == __file__
