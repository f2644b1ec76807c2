"""Property 6: every way of stopping ends promptly, ends the threads, and starts
no dataset call beyond the bounded window (interpreter exit: test_exit.py)."""

from __future__ import annotations

import _thread
import gc
import threading
import time

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    precondition,
    rule,
    run_state_machine_as_test,
)
from support import Recorder, os_thread_count, python_thread_count, wait_until

from dataloader_api import DataLoader, DataLoaderTimeoutError, IterableDataset, get_worker_info
from dataloader_api.testing import sigint_raises_keyboard_interrupt

BATCH = 2


class Shutdown(RuleBasedStateMachine):
    """Random schedules of next, break/close, del, gc and new epochs."""

    def __init__(self, backend: str) -> None:
        super().__init__()
        self.backend = backend
        self.py_threads = python_thread_count()
        self.os_threads = os_thread_count()
        self.datasets: list[Recorder] = []
        self.loaders: list[DataLoader] = []
        self.iterators: list[object] = []
        self.window = 0

    @rule(num_workers=st.integers(1, 3), prefetch=st.integers(1, 2), persistent=st.booleans())
    def new_loader(self, num_workers, prefetch, persistent):
        if len(self.loaders) >= 3:
            return
        dataset = Recorder(400, slow={i: 0.001 for i in range(400)})
        self.datasets.append(dataset)
        self.window = max(self.window, num_workers * prefetch)
        self.loaders.append(
            DataLoader(
                dataset,
                batch_size=BATCH,
                num_workers=num_workers,
                prefetch_factor=prefetch,
                persistent_workers=persistent,
                backend=self.backend,
            )
        )

    @precondition(lambda self: self.loaders)
    @rule(which=st.integers(0, 2))
    def new_epoch(self, which):
        """Also while an older iterator of the same loader is alive."""
        self.iterators.append(iter(self.loaders[which % len(self.loaders)]))

    @precondition(lambda self: self.iterators)
    @rule(which=st.integers(0, 5), count=st.integers(1, 4))
    def take(self, which, count):
        iterator = self.iterators[which % len(self.iterators)]
        for _ in range(count):
            if next(iterator, None) is None:  # type: ignore[call-overload]
                break

    @precondition(lambda self: self.iterators)
    @rule(which=st.integers(0, 5))
    def close(self, which):
        iterator = self.iterators.pop(which % len(self.iterators))
        iterator.close()  # type: ignore[attr-defined]

    @precondition(lambda self: self.iterators)
    @rule(which=st.integers(0, 5))
    def drop(self, which):
        """`del it`, as leaving a loop with break does."""
        del self.iterators[which % len(self.iterators)]

    @precondition(lambda self: self.iterators)
    @rule(which=st.integers(0, 5))
    def drop_in_a_cycle(self, which):
        holder: list[object] = [self.iterators.pop(which % len(self.iterators))]
        holder.append(holder)

    @rule()
    def collect(self):
        gc.collect()

    @precondition(lambda self: self.loaders)
    @rule(which=st.integers(0, 2))
    def drop_loader(self, which):
        del self.loaders[which % len(self.loaders)]

    def teardown(self):
        self.iterators.clear()
        self.loaders.clear()
        gc.collect()
        counts = [len(d.calls) for d in self.datasets]
        assert wait_until(lambda: python_thread_count() <= self.py_threads, 5), (
            threading.enumerate()
        )
        assert wait_until(lambda: os_thread_count() <= self.os_threads, 5)
        # jobs started before shutdown may finish their batch, nothing more
        for dataset, count in zip(self.datasets, counts, strict=True):
            assert len(dataset.calls) <= count + self.window * BATCH
        time.sleep(0.05)
        after = [len(d.calls) for d in self.datasets]
        time.sleep(0.1)
        assert [len(d.calls) for d in self.datasets] == after


def test_random_shutdown_schedules(backend):
    run_state_machine_as_test(
        lambda: Shutdown(backend),
        settings=settings(settings.default, stateful_step_count=12),
    )


def test_one_collection_frees_iterators_dropped_in_cycles(backend):
    """A schedule Hypothesis once found: the backend's epoch objects formed a cycle
    of their own, so one gc.collect() freed the user's iterator but not the loader
    behind it, and a persistent pool kept running."""
    py_threads = python_thread_count()
    loaders = [
        DataLoader(
            Recorder(400, slow={i: 0.001 for i in range(400)}),
            batch_size=BATCH,
            num_workers=workers,
            prefetch_factor=prefetch,
            persistent_workers=persistent,
            backend=backend,
        )
        for workers, persistent, prefetch in ((2, True, 2), (1, False, 1), (1, False, 1))
    ]
    iterators = [iter(loaders[0]), iter(loaders[1]), iter(loaders[1])]
    for _ in range(2):
        holder: list[object] = [iterators.pop(0)]
        holder.append(holder)
        del holder
    iterators.clear()
    loaders.clear()
    gc.collect()
    assert wait_until(lambda: python_thread_count() <= py_threads, 5), threading.enumerate()


class RecordedStream(IterableDataset):
    """An iterable dataset over a ``Recorder``: each worker reads its share, and
    every item read is a logged dataset call."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    def __iter__(self):
        info = get_worker_info()
        start, step = (info.id, info.num_workers) if info is not None else (0, 1)
        return (self.recorder[i] for i in range(start, len(self.recorder), step))


@pytest.mark.parametrize("kind", ["map-style", "iterable"])
@pytest.mark.parametrize("how", ["close", "break", "del", "gc"])
def test_no_dataset_call_starts_after_shutdown(backend, how, kind):
    dataset = Recorder(1000, slow={i: 0.002 for i in range(1000)})
    source = dataset if kind == "map-style" else RecordedStream(dataset)
    loader = DataLoader(source, batch_size=4, num_workers=2, backend=backend)
    window = 2 * 2
    iterator = iter(loader)
    next(iterator)
    if how == "close":
        iterator.close()
    elif how == "break":
        for _ in iterator:
            break
        del iterator
    else:
        if how == "gc":
            cycle: list[object] = [iterator]
            cycle.append(cycle)
            del cycle
        del iterator
        gc.collect()
    at_shutdown = len(dataset.calls)
    time.sleep(0.2)
    assert len(dataset.calls) <= at_shutdown + window * 4


# "Promptly": tens of milliseconds; the bound leaves room for a loaded CI machine.
STOP_SECONDS = 0.2
STOPS = ["break", "close", "del", "after a timeout", "loader.close"]


def _stop(loader: DataLoader, holder: list[object], how: str) -> float:
    """Stop the epoch as ``how`` says; the seconds that took. ``holder`` has the only
    reference to the iterator, which this drops."""
    iterator = holder.pop()
    start = time.monotonic()
    if how == "close":
        iterator.close()  # type: ignore[attr-defined]
    elif how == "loader.close":
        loader.close()
    elif how == "after a timeout":
        with pytest.raises(DataLoaderTimeoutError):
            next(iterator)  # type: ignore[call-overload]
        start = time.monotonic()  # what follows the timeout: the loop's clean-up
        del iterator
    else:  # "break" and "del": the last reference goes; the finalizer closes
        del iterator
    return time.monotonic() - start


@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("how", STOPS)
def test_stopping_behind_a_slow_item_is_prompt(backend, how, persistent):
    """break, close(), del, the clean-up after a timeout and loader.close() return in
    tens of milliseconds while a worker is stuck in a slow item; no dataset call
    starts after that; the threads end once the item returns, and join() says so."""
    os_before = os_thread_count()
    # Item 4 blocks until released; block_limit bounds how long a broken backend stalls.
    dataset = Recorder(50, blocked={4}, block_limit=3.0)
    loader = DataLoader(
        dataset,
        batch_size=1,
        num_workers=2,
        prefetch_factor=1,
        persistent_workers=persistent,
        timeout=0.3 if how == "after a timeout" else 0,
        backend=backend,
    )
    iterator = iter(loader)
    assert [next(iterator).tolist() for _ in range(4)] == [[0], [1], [2], [3]]
    assert wait_until(lambda: 4 in dataset.calls)
    holder: list[object] = [iterator]
    del iterator
    elapsed = _stop(loader, holder, how)
    assert elapsed < STOP_SECONDS, f"{how} took {elapsed:.3f} s behind a slow item"
    if persistent and how != "loader.close":
        # The epoch ended; the persistent threads live on until the loader closes.
        closing = time.monotonic()
        loader.close()
        assert time.monotonic() - closing < STOP_SECONDS
    assert not loader.join(timeout=0.05), "a thread is still inside item 4"
    time.sleep(0.1)
    dataset.release.set()
    assert loader.join(timeout=5.0)
    assert wait_until(lambda: os_thread_count() <= os_before)
    # Items 0-3 were consumed; the window (2) had jobs 4 and 5 started, and job 5
    # may call the dataset just after the stop; no job after them may start.
    assert sorted(dataset.calls) == list(range(len(dataset.calls))) and len(dataset.calls) <= 6, (
        f"a dataset call beyond the started jobs: {sorted(dataset.calls)}"
    )


def test_keyboard_interrupt_while_waiting(backend):
    os_before = os_thread_count()
    dataset = Recorder(10, blocked={0}, block_limit=5)
    iterator = iter(DataLoader(dataset, batch_size=1, num_workers=2, backend=backend))
    timer = threading.Timer(0.2, _thread.interrupt_main)
    start = time.monotonic()
    with sigint_raises_keyboard_interrupt(), pytest.raises(KeyboardInterrupt):
        timer.start()
        next(iterator)
    elapsed = time.monotonic() - start
    timer.join()
    dataset.release.set()
    iterator.close()  # type: ignore[attr-defined]
    assert elapsed < 1.5
    assert wait_until(lambda: os_thread_count() <= os_before)
