"""The loader's threads across epochs and stops: persistent workers keep theirs
(and their ``threading.local()``), ``close()``, ``break``, ``del``, garbage
collection and ``KeyboardInterrupt`` end them, ``join()`` waits for them."""

from __future__ import annotations

import gc
import threading
import time

import pytest

from dataloader_api import DataLoader
from dataloader_api.testing import Recorder, sigint_raises_keyboard_interrupt, wait_until


def as_lists(loader):
    return [batch.tolist() for batch in loader]


def test_persistent_workers_keep_their_threads_across_epochs():
    idents = []
    loader = DataLoader(
        range(8),
        batch_size=2,
        num_workers=2,
        persistent_workers=True,
        worker_init_fn=lambda w: idents.append(threading.get_ident()),
    )
    for _ in range(3):
        assert as_lists(loader) == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert len(idents) == 2
    loader.close()


def test_thread_local_persists_across_items_on_a_worker():
    local = threading.local()
    states = []

    class Local:
        def __len__(self):
            return 50

        def __getitem__(self, i):
            if not hasattr(local, "token"):
                local.token = object()
                states.append(local.token)
            return i

    loader = DataLoader(Local(), batch_size=1, num_workers=2, persistent_workers=True)
    list(loader), list(loader)
    # A state per worker thread, and the consumer's when it made batches (caller-runs).
    assert 1 <= len(states) <= 3
    loader.close()


def test_new_epoch_on_persistent_pool_ends_the_previous_iterator():
    loader = DataLoader(range(10), batch_size=2, num_workers=2, persistent_workers=True)
    old = iter(loader)
    next(old)
    assert as_lists(loader) == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]]
    assert list(old) == []
    loader.close()


@pytest.mark.timing
def test_close_stops_dataset_calls(no_leaked_threads):
    data = Recorder(1000, delay=0.002)
    it = iter(DataLoader(data, batch_size=4, num_workers=2))
    next(it)
    it.close()  # returns at once; the batches being loaded finish their items
    assert it.join(timeout=60)
    count = len(data.calls)
    time.sleep(0.1)
    assert len(data.calls) == count
    assert count <= 4 * (1 + 2 * 2)


@pytest.mark.timing
@pytest.mark.parametrize("how", ["break", "del", "gc"])
def test_abandoning_an_epoch_ends_the_workers(how, no_leaked_threads):
    import gc

    data = Recorder(1000, delay=0.001)
    loader = DataLoader(data, batch_size=4, num_workers=2)
    if how == "break":
        for _ in loader:
            break
    else:
        it = iter(loader)
        next(it)
        if how == "gc":
            cycle = [it]
            cycle.append(cycle)
            del cycle
        del it
        gc.collect()
    # The batches being loaded when the epoch is abandoned finish their items, then
    # the threads end: counted then, well short of all 1000, however slow that was.
    assert loader.join(timeout=60), "the workers kept calling the dataset"
    assert len(data.calls) <= 4 * (1 + 2 * 2)


@pytest.mark.timing
def test_keyboard_interrupt_while_waiting_is_raised_promptly(no_leaked_threads):
    import _thread

    data = Recorder(10, blocked={0})
    it = iter(DataLoader(data, batch_size=1, num_workers=2))
    timer = threading.Timer(0.2, _thread.interrupt_main)
    with sigint_raises_keyboard_interrupt(), pytest.raises(KeyboardInterrupt):
        timer.start()
        next(it)
    assert not data.returned(0), "the interrupt waited for the blocked item"
    it.close()
    timer.join()
    data.release.set()  # the busy worker finishes its item, then the threads end
    assert it.join(timeout=60) and len(data.calls) <= 10


@pytest.mark.parametrize("persistent", [False, True])
def test_an_epoch_keeps_loading_after_its_loader_is_dropped(persistent):
    """`it = iter(DataLoader(...))` alone: torch's iterator keeps its workers."""
    it = iter(
        DataLoader(list(range(40)), batch_size=4, num_workers=2, persistent_workers=persistent)
    )
    gc.collect()
    assert [b.tolist() for b in it] == [list(range(i, i + 4)) for i in range(0, 40, 4)]


@pytest.mark.timing
def test_join_waits_for_a_thread_busy_in_a_slow_item(no_leaked_threads):
    data = Recorder(20, blocked={2})
    loader = DataLoader(data, batch_size=1, num_workers=2, prefetch_factor=1)
    it = iter(loader)
    assert [next(it).tolist() for _ in range(2)] == [[0], [1]]
    assert wait_until(lambda: 2 in data.calls)
    it.close()
    assert not data.returned(2), "close() waited for the busy thread"
    assert not it.join(timeout=0.05)
    assert not loader.join(timeout=0)
    data.release.set()
    assert it.join(timeout=5.0)
    assert loader.join(timeout=5.0)


@pytest.mark.parametrize("bad", [-1, float("nan"), "1", True])
def test_join_timeout_is_checked(bad):
    loader = DataLoader([1, 2], num_workers=1)
    message = "timeout should be a non-negative number of seconds or None, but got timeout="
    with pytest.raises(ValueError, match=message):
        loader.join(bad)
    with pytest.raises(ValueError, match=message):
        iter(loader).join(bad)
