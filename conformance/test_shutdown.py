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

# stops racing busy threads: nox -s tests_under_load runs it beside a CPU load
pytestmark = pytest.mark.timing

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
        bounds = [len(d.calls) + self.window * BATCH for d in self.datasets]

        def past_a_bound() -> bool:
            return any(len(d.calls) > b for d, b in zip(self.datasets, bounds, strict=True))

        # Threads end (a loaded machine may take seconds); a backend that goes past
        # a bound fails at once instead of holding the wait.
        ended = wait_until(lambda: past_a_bound() or python_thread_count() <= self.py_threads, 10)
        # jobs started before shutdown may finish their batch, nothing more
        calls = [len(d.calls) for d in self.datasets]
        assert not past_a_bound(), (calls, bounds)
        assert ended, threading.enumerate()
        assert wait_until(lambda: os_thread_count() <= self.os_threads)
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
    assert wait_until(lambda: python_thread_count() <= py_threads), threading.enumerate()


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
    bound = at_shutdown + window * 4
    # Counted once the threads have ended (10 s at most), not after a pause a loaded
    # machine could outlast: what the started jobs still did, and nothing more. A
    # backend that goes past the bound fails at once, without waiting for its threads.
    wait_until(lambda: loader.join(0) or len(dataset.calls) > bound, 10)
    assert len(dataset.calls) <= bound


STOPS = ["break", "close", "del", "after a timeout", "loader.close"]


def _stop(loader: DataLoader, holder: list[object], how: str) -> None:
    """Stop the epoch as ``how`` says. ``holder`` has the only reference to the
    iterator, which this drops."""
    iterator = holder.pop()
    if how == "close":
        iterator.close()  # type: ignore[attr-defined]
    elif how == "loader.close":
        loader.close()
    elif how == "after a timeout":
        with pytest.raises(DataLoaderTimeoutError):
            next(iterator)  # type: ignore[call-overload]
        del iterator
    else:  # "break" and "del": the last reference goes; the finalizer closes
        del iterator


@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("how", STOPS)
def test_stopping_behind_a_slow_item_is_prompt(backend, how, persistent):
    """break, close(), del, the clean-up after a timeout and loader.close() return
    while a worker is stuck in a slow item, without waiting for it; no dataset call
    starts after that; the threads end once the item returns, and join() says so.

    "Without waiting" is an event, not a duration: item 4 blocks until the test
    releases it, so each stop must return while item 4 is still running, however
    slow a loaded machine makes the rest (block_limit only ends a broken backend's
    wait)."""
    os_before = os_thread_count()
    dataset = Recorder(50, blocked={4}, block_limit=5.0)
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
    _stop(loader, holder, how)
    assert not dataset.returned(4), f"{how} waited for the slow item to return"
    if persistent and how != "loader.close":
        # The epoch ended; the persistent threads live on until the loader closes.
        loader.close()
        assert not dataset.returned(4), "loader.close() waited for the slow item to return"
    assert not loader.join(timeout=0.05), "a thread is still inside item 4"
    time.sleep(0.1)
    dataset.release.set()
    assert loader.join(timeout=60)
    assert wait_until(lambda: os_thread_count() <= os_before)
    # Items 0-3 were consumed; the window (2) had jobs 4 and 5 started, and job 5
    # may call the dataset just after the stop; no job after them may start.
    assert sorted(dataset.calls) == list(range(len(dataset.calls))) and len(dataset.calls) <= 6, (
        f"a dataset call beyond the started jobs: {sorted(dataset.calls)}"
    )


def test_keyboard_interrupt_while_waiting(backend):
    os_before = os_thread_count()
    # Item 0 blocks until released: the interrupt must arrive while it still runs.
    dataset = Recorder(10, blocked={0}, block_limit=20)
    iterator = iter(DataLoader(dataset, batch_size=1, num_workers=2, backend=backend))
    timer = threading.Timer(0.2, _thread.interrupt_main)
    with sigint_raises_keyboard_interrupt(), pytest.raises(KeyboardInterrupt):
        timer.start()
        next(iterator)
    interrupted_while_blocked = not dataset.returned(0)
    timer.join()
    dataset.release.set()
    iterator.close()  # type: ignore[attr-defined]
    assert interrupted_while_blocked, "the interrupt waited for the blocked item"
    assert wait_until(lambda: os_thread_count() <= os_before)
