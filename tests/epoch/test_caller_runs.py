"""Caller-runs (``_epoch/caller_runs.py``): the consumer makes batches itself as one
worker. Forced with ``DATALOADER_CALLER_RUNS=always`` so that it happens in every
run; what it keeps (batches, errors, resume, KeyboardInterrupt, thread-affine
state) and where it never applies (iterable datasets: their workers' streams,
tests/epoch/test_iterator_shapes.py and conformance). Counted, never timed."""

from __future__ import annotations

import json
import threading
import warnings

import pytest
from lazy_handles import LazySqlite, write_database

import dataloader_api
from dataloader_api import DataLoader
from dataloader_api.contract import PoolClosedError

BACKENDS = [n for n in dataloader_api.backends() if not n.startswith("broken-")]
LENGTH = 400


@pytest.fixture(autouse=True)
def always(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATALOADER_CALLER_RUNS", "always")


class Threads:
    """Trivial items that record which thread made each, and a hook per index."""

    def __init__(self, length: int = LENGTH, hook=None) -> None:
        self.length, self.hook = length, hook
        self.made: list[tuple[int, int]] = []  # shared by the copies

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> int:
        if self.hook is not None:
            self.hook(self, index)
        self.made.append((threading.get_ident(), index))
        return index

    def by_consumer(self) -> int:
        consumer = threading.get_ident()
        return sum(1 for thread, _ in self.made if thread == consumer)


def flat(batches) -> list[int]:
    return [i for b in batches for i in b]


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> str:
    return write_database(tmp_path_factory.mktemp("sqlite"), LENGTH, scale=3)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("persistent", [False, True])
def test_a_sqlite_connection_opened_in_getitem_keeps_working(database, backend, persistent):
    """The consumer's batch on a worker's copy raises (the connection is the worker
    thread's): the batch is made again on a worker, a warning names the error and
    the fix, and the loader makes no batch on the consumer again."""
    loader = DataLoader(
        LazySqlite(database, LENGTH),
        batch_size=4,
        num_workers=2,
        persistent_workers=persistent,
        collate_fn=list,
        backend=backend,
    )
    with pytest.warns(RuntimeWarning, match="ProgrammingError") as caught:
        assert flat(loader) == [3 * i for i in range(LENGTH)]
    ours = [w for w in caught if "DATALOADER_CALLER_RUNS=off" in str(w.message)]
    assert len(ours) == 1
    assert ours[0].filename == __file__  # the user's line
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        assert flat(loader) == [3 * i for i in range(LENGTH)]
    assert not [w for w in again if "DATALOADER_CALLER_RUNS" in str(w.message)]
    loader.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_item_error_on_the_consumer_and_the_worker_is_the_batchs(backend):
    """The batch is handed back; the worker's error is delivered for it, with no
    warning, and the consumer keeps making batches."""

    def fail_at_300(dataset: Threads, index: int) -> None:
        if index == 300:
            raise KeyError(f"item {index}")

    dataset = Threads(hook=fail_at_300)
    loader = DataLoader(dataset, batch_size=4, num_workers=2, collate_fn=list, backend=backend)
    got, iterator = [], iter(loader)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        while True:
            try:
                got.extend(next(iterator))
            except KeyError as error:
                assert "item 300" in str(error)
                got.append("error")
            except StopIteration:
                break
    assert not [w for w in caught if "DATALOADER_CALLER_RUNS" in str(w.message)]
    assert got == [*range(300), "error", *range(304, LENGTH)]
    assert dataset.by_consumer() > 300  # the consumer went on making batches
    loader.close()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "settings",
    [{"in_order": False}, {"timeout": 30.0}],
    ids=["in_order=False", "timeout"],
)
def test_never_without_in_order_or_with_a_timeout(backend, settings):
    dataset = Threads()
    loader = DataLoader(dataset, batch_size=4, num_workers=2, backend=backend, **settings)
    assert sorted(i for b in loader for i in b.tolist()) == list(range(LENGTH))
    assert dataset.by_consumer() == 0
    loader.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_keyboard_interrupt_in_a_batch_on_the_consumer(backend):
    """The batch it interrupted is made again by the next ``next``: every index once."""
    consumer = threading.get_ident()
    interrupted = []

    def interrupt_once(dataset: Threads, index: int) -> None:
        if threading.get_ident() == consumer and not interrupted and index % 4 == 2:
            interrupted.append(index)
            raise KeyboardInterrupt

    dataset = Threads(hook=interrupt_once)
    loader = DataLoader(dataset, batch_size=4, num_workers=2, collate_fn=list, backend=backend)
    got, iterator = [], iter(loader)
    while True:
        try:
            got.extend(next(iterator))
        except KeyboardInterrupt:
            continue
        except StopIteration:
            break
    assert interrupted, "no item ran on the consumer"
    assert got == list(range(LENGTH))
    loader.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_resume_from_a_state_taken_while_the_consumer_makes_batches(backend):
    def loader_of(dataset: Threads) -> DataLoader:
        return DataLoader(
            dataset, batch_size=4, shuffle=True, seed=3, num_workers=2, backend=backend
        )

    dataset = Threads()
    first = loader_of(dataset)
    iterator = iter(first)
    head = [next(iterator).tolist() for _ in range(60)]
    assert dataset.by_consumer() > 0
    state = json.loads(json.dumps(first.state_dict()))
    rest = [b.tolist() for b in iterator]
    first.close()
    again = loader_of(Threads())
    again.load_state_dict(state)
    assert [b.tolist() for b in again] == rest
    assert sorted(i for b in head + rest for i in b) == list(range(LENGTH))
    again.close()


class Getitems(Threads):
    """``__getitems__``, as torch calls it: with a list of indices (never a range)."""

    def __init__(self) -> None:
        super().__init__()
        self.given: list[type] = []

    def __getitems__(self, indices: list[int]) -> list[int]:
        self.given.append(type(indices))
        return [self[i] for i in indices]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shuffle", [False, True])
def test_getitems_and_the_workers_get_lists_of_indices(backend, shuffle):
    """A sequential plan's consumer batches are ranges (no list per batch), but only
    where our own loop indexes item by item: ``__getitems__`` gets a list, and so do
    the workers' segments (the backends' contract)."""
    for dataset in (Getitems(), Threads()):
        loader = DataLoader(
            dataset, batch_size=4, num_workers=2, shuffle=shuffle, seed=1, backend=backend
        )
        got = sorted(i for b in loader for i in b.tolist())
        assert got == list(range(LENGTH))
        assert dataset.by_consumer() > 0
        assert set(getattr(dataset, "given", [list])) == {list}
        loader.close()


def test_the_workers_segments_get_lists_of_indices(monkeypatch):
    """``BatchJob.indices`` is a list (the contract): a consumer's range is not."""
    from dataclasses import replace

    from dataloader_api.kit import ThreadPool

    given: list[type] = []
    original = ThreadPool.map_batches

    def spy(pool, work, stream):
        def jobs():
            for job in work.jobs:
                given.append(type(job.indices))
                yield job

        return original(pool, replace(work, jobs=jobs()), stream)

    monkeypatch.setattr(ThreadPool, "map_batches", spy)
    dataset = Threads()
    loader = DataLoader(dataset, batch_size=4, num_workers=2, backend="threads", collate_fn=list)
    assert flat(loader) == list(range(LENGTH))
    assert given and set(given) == {list} and dataset.by_consumer() > 0
    loader.close()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", ["always", "auto"])
def test_a_pool_closed_under_the_epoch_is_an_error_and_never_kept(backend, mode, monkeypatch):
    """As the backends' own streams: a segment that cannot start, or ends before
    its batches, because the pool closed is a PoolClosedError (at interpreter exit
    a daemon thread parks instead: conformance's test_exit); a later loader never
    gets that pool from the idle ones."""
    monkeypatch.setenv("DATALOADER_CALLER_RUNS", mode)
    loader = DataLoader(Threads(), batch_size=4, num_workers=2, backend=backend)
    iterator = iter(loader)
    got = [next(iterator) for _ in range(20)]
    (pool,) = iterator.owned_pools
    pool.close()
    with pytest.raises(PoolClosedError, match="closed while this epoch was running"):
        got += list(iterator)
    assert 20 <= len(got) < LENGTH // 4
    assert flat(DataLoader(Threads(), batch_size=4, num_workers=2, backend=backend)) == list(
        range(LENGTH)
    )
