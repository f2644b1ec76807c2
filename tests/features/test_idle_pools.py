"""A finished epoch's pool goes idle and the next new loader of the same shape
takes it: no thread start-up, and each thread still answers get_worker_info()
with the new loader's own WorkerInfo."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
import weakref

import pytest

import dataloader_api
from dataloader_api import DataLoader, get_worker_info, release_idle_workers
from dataloader_api._features.idle_pools import MAX_IDLE_POOLS
from dataloader_api.testing import os_thread_count, wait_until

BACKENDS = [n for n in dataloader_api.backends() if not n.startswith("broken-")]


class Seen:
    """Item i is i; logs, per item, the thread (its OS id: Linux does not hand an
    ended thread's id to the next one soon) and the worker info it ran under."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.log: list[tuple[int, int, object, int | None]] = []

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> int:
        info = get_worker_info()
        seed = None if info is None else info.seed
        self.log.append((index, threading.get_native_id(), info and info.dataset, seed))
        return index


@pytest.fixture(autouse=True)
def no_idle_pools():
    release_idle_workers()
    yield
    release_idle_workers()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_new_loader_takes_a_finished_epochs_threads_with_its_own_worker_info(backend):
    first, second = Seen(40), Seen(40)
    assert len(list(DataLoader(first, batch_size=4, num_workers=2, backend=backend))) == 10
    threads_after_first = set(os.listdir("/proc/self/task"))
    loader = DataLoader(second, batch_size=4, num_workers=2, backend=backend, seed=3)
    assert [b.tolist() for b in loader] == [list(range(i, i + 4)) for i in range(0, 40, 4)]
    assert {str(t) for _, t, _, _ in second.log} <= threads_after_first  # none started
    # Every item of the second loader ran as one of its own workers: on that
    # worker's copy of its dataset (the copies share the log).
    assert all(
        dataset is not second and dataset.log is second.log for _, _, dataset, _ in second.log
    )
    again = Seen(40)
    list(DataLoader(again, batch_size=4, num_workers=2, backend=backend, seed=3))
    # The same seed gives the same worker seeds, whichever pool ran them.
    seeds = {seed for _, _, _, seed in second.log} | {seed for _, _, _, seed in again.log}
    assert len(seeds) <= 2 and None not in seeds
    assert release_idle_workers() == 1


def os_count_without_release() -> int:
    return len(os.listdir("/proc/self/task"))


class Plain:
    def __len__(self) -> int:
        return 8

    def __getitem__(self, index: int) -> int:
        return index


@pytest.mark.parametrize("backend", BACKENDS)
def test_idle_threads_do_not_keep_the_dataset_alive(backend):
    """The idle threads hold the finished epoch's WorkerInfos (get_worker_info(),
    thread_init) and the backend its callables: none may keep the dataset."""
    dataset = Plain()
    freed = weakref.ref(dataset)
    list(DataLoader(dataset, batch_size=2, num_workers=2, backend=backend))
    del dataset
    assert wait_until(lambda: gc.collect() >= 0 and freed() is None)
    assert release_idle_workers() == 1  # it was freed while the pool was idle


@pytest.mark.timing
@pytest.mark.parametrize("backend", BACKENDS)
def test_an_epoch_left_early_closes_its_threads(backend):
    """A slow item may still run there: the pool is closed, not kept."""
    before = os_thread_count()
    iterator = iter(DataLoader(Seen(400), batch_size=4, num_workers=2, backend=backend))
    next(iterator)
    iterator.close()
    assert iterator.join(60)
    assert release_idle_workers() == 0
    assert wait_until(lambda: os_count_without_release() <= before)


@pytest.mark.parametrize("backend", BACKENDS)
def test_worker_init_fn_runs_on_every_worker_of_every_loader(backend):
    list(DataLoader(Seen(8), batch_size=4, num_workers=2, backend=backend))
    calls = []
    loader = DataLoader(
        Seen(2), batch_size=1, num_workers=2, backend=backend, worker_init_fn=calls.append
    )
    list(loader)
    assert sorted(calls) == [0, 1]


@pytest.mark.timing
@pytest.mark.parametrize("backend", BACKENDS)
def test_join_after_a_finished_epoch_does_not_wait_for_the_idle_threads(backend):
    dataset = Seen(8)
    loader = DataLoader(dataset, batch_size=4, num_workers=2, backend=backend)
    iterator = iter(loader)
    list(iterator)
    # The idle threads are kept for the next loader: join() returns while they live.
    # Their own ids, not a thread count: a pool released just before may still
    # be ending its threads on a busy machine.
    assert iterator.join(60) and loader.join(60)
    workers = {str(thread) for _, thread, _, _ in dataset.log}
    assert workers <= set(os.listdir("/proc/self/task")), "join() waited for the idle threads"
    assert release_idle_workers() == 1


def test_release_ends_the_idle_threads_and_the_set_is_bounded():
    before = os_thread_count()
    for workers in range(1, MAX_IDLE_POOLS + 3):  # one shape each: all finished
        list(DataLoader(Seen(4), batch_size=2, num_workers=workers, backend="threads"))
    assert os_count_without_release() > before
    assert release_idle_workers() == MAX_IDLE_POOLS
    assert wait_until(lambda: os_count_without_release() <= before)
    assert release_idle_workers() == 0


def test_keeping_none_and_a_bad_value(monkeypatch):
    monkeypatch.setenv("DATALOADER_KEEP_IDLE_WORKERS", "0")
    list(DataLoader(Seen(4), batch_size=2, num_workers=2, backend="threads"))
    assert release_idle_workers() == 0
    monkeypatch.setenv("DATALOADER_KEEP_IDLE_WORKERS", "yes")
    loader = DataLoader(Seen(4), batch_size=2, num_workers=2, backend="threads")
    with pytest.raises(ValueError, match=r"DATALOADER_KEEP_IDLE_WORKERS='yes'"):
        iter(loader)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_forked_child_starts_its_own_threads_and_exits_cleanly(backend):
    code = f"""
import os, warnings
warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads running
from dataloader_api import DataLoader
assert [b.tolist() for b in DataLoader(list(range(8)), batch_size=4, num_workers=2,
        backend={backend!r})] == [[0, 1, 2, 3], [4, 5, 6, 7]]
pid = os.fork()
if pid == 0:
    got = [b.tolist() for b in DataLoader(list(range(4)), batch_size=2, num_workers=2,
           backend={backend!r})]
    os._exit(0 if got == [[0, 1], [2, 3]] else 1)
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0, status
print("ok")  # and the parent exits with its idle pool open
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
