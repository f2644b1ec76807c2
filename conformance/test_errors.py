"""Properties 4 and 5: errors reach the consumer for their batch, intact; timeouts."""

from __future__ import annotations

import threading
import time
import traceback
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support import (
    ItemError,
    Recorder,
    Sharded,
    batches_as_lists,
    os_thread_count,
    python_thread_count,
    wait_until,
)

from dataloader_api import DataLoader, DataLoaderTimeoutError, resolve_backend
from dataloader_api.contract import (
    BatchJob,
    IterWork,
    MapWork,
    PoolClosedError,
    PoolSpec,
    StreamSpec,
)


@given(
    length=st.integers(1, 40),
    batch_size=st.integers(1, 5),
    data=st.data(),
    num_workers=st.integers(1, 3),
)
def test_an_item_error_surfaces_for_its_batch(backend, length, batch_size, data, num_workers):
    bad = data.draw(st.integers(0, length - 1), label="bad index")
    threads_before = os_thread_count()
    dataset = Recorder(length, failing={bad})
    loader = DataLoader(dataset, batch_size=batch_size, num_workers=num_workers, backend=backend)
    bad_batch = bad // batch_size
    delivered = []
    iterator = iter(loader)
    with pytest.raises(ItemError) as raised:
        for batch in iterator:
            delivered.append(batch.tolist())
    iterator.close()
    assert str(raised.value) == f"item {bad} failed on purpose"
    frames = [frame.name for frame in traceback.extract_tb(raised.value.__traceback__)]
    assert "raise_item_error" in frames and "__getitem__" in frames
    indices = list(range(length))
    assert delivered == [
        indices[i : i + batch_size] for i in range(0, bad_batch * batch_size, batch_size)
    ]
    # the loader works for the next epoch, and no thread is left behind
    dataset.failing.clear()
    expected = [indices[i : i + batch_size] for i in range(0, length, batch_size)]
    assert batches_as_lists(loader) == expected
    assert wait_until(lambda: os_thread_count() <= threads_before)


class CollateError(Exception):
    pass


def fussy_collate(batch):
    if 3 in batch:
        raise CollateError("collate refused the batch with 3")
    return list(batch)


@pytest.mark.parametrize("num_workers", [1, 2])
def test_a_collate_error_surfaces_for_its_batch(backend, num_workers):
    loader = DataLoader(
        Recorder(8),
        batch_size=2,
        num_workers=num_workers,
        collate_fn=fussy_collate,
        backend=backend,
    )
    iterator = iter(loader)
    assert next(iterator) == [0, 1]
    with pytest.raises(CollateError, match="collate refused the batch with 3") as raised:
        next(iterator)
    assert "fussy_collate" in [f.name for f in traceback.extract_tb(raised.value.__traceback__)]
    iterator.close()


class InitError(Exception):
    pass


@given(
    num_workers=st.integers(1, 3),
    data=st.data(),
    persistent=st.booleans(),
    iterable=st.booleans(),
)
def test_a_worker_init_fn_error_surfaces_before_any_batch(
    backend, num_workers, data, persistent, iterable
):
    """Contract: a ``thread_init`` error is raised by ``create_pool`` or, at the
    latest, by the first ``__next__``; no dataset call runs on a thread whose
    init failed, and a loader that is not persistent runs its next epoch
    normally once the init is fixed."""
    failing = data.draw(st.sets(st.integers(0, num_workers - 1), min_size=1), label="failing")
    threads_before = os_thread_count()
    failed_threads: set[int] = set()

    def init(worker_id: int) -> None:
        if worker_id in failing:
            failed_threads.add(threading.get_ident())
            raise InitError(f"worker {worker_id} refused to start")

    dataset = Sharded(12) if iterable else Recorder(12)
    loader = DataLoader(
        dataset,
        batch_size=2,
        num_workers=num_workers,
        worker_init_fn=init,
        persistent_workers=persistent,
        backend=backend,
    )
    delivered = []
    with pytest.raises(InitError, match=r"^worker \d refused to start$") as raised:
        for batch in loader:
            delivered.append(batch)
    assert delivered == []
    assert "init" in [frame.name for frame in traceback.extract_tb(raised.value.__traceback__)]
    assert not dataset.threads & failed_threads
    del raised  # its traceback refers to the epoch
    if not persistent:
        failing.clear()
        assert sorted(x for batch in loader for x in batch.tolist()) == list(range(12))
    loader.close()
    assert wait_until(lambda: os_thread_count() <= threads_before)


@given(
    timeout=st.sampled_from([0.1, 0.2, 0.4]),
    position=st.integers(0, 3),
    num_workers=st.integers(1, 3),
)
@pytest.mark.timing
def test_timeout_on_a_blocked_item_raises_promptly(backend, timeout, position, num_workers):
    """The error comes no sooner than ``timeout`` and while the blocked item still
    runs: an event a loaded machine cannot fake, unlike an upper bound in seconds
    (block_limit only ends a broken backend's wait)."""
    blocked = position * 2
    dataset = Recorder(20, blocked={blocked}, block_limit=5.0)
    loader = DataLoader(
        dataset, batch_size=2, num_workers=num_workers, timeout=timeout, backend=backend
    )
    iterator = iter(loader)
    try:
        for _ in range(position):
            next(iterator)
        start = time.monotonic()
        with pytest.raises(DataLoaderTimeoutError, match=f"batch {position}"):
            next(iterator)
        elapsed = time.monotonic() - start
        assert not dataset.returned(blocked), "the timeout waited for the blocked item"
        assert elapsed >= timeout * 0.9, elapsed
    finally:
        dataset.release.set()
        iterator.close()


def test_an_abandoned_epoch_that_failed_leaves_no_thread_running(backend):
    py_before, os_before = python_thread_count(), os_thread_count()
    loader = DataLoader(Recorder(30, failing={7}), batch_size=3, num_workers=3, backend=backend)
    caught = False
    try:
        for _ in loader:
            pass
    except ItemError:
        caught = True  # as user code does: the exception is dropped here
    assert caught
    assert wait_until(lambda: python_thread_count() <= py_before)
    assert wait_until(lambda: os_thread_count() <= os_before)


def _stream(pool: Any, kind: str, batches: int) -> Any:
    if kind == "map":
        work = MapWork(iter([BatchJob(i, [i]) for i in range(batches)]), fetch=list, collate=list)
        return pool.map_batches(work, StreamSpec(2))
    return pool.stream_batches(IterWork(lambda i: iter([[0]] * batches), 1), StreamSpec(2))


@pytest.mark.parametrize("kind", ["map", "iterable"])
@pytest.mark.parametrize("when", ["started after", "read after"])
def test_a_closed_pool_raises_the_contracts_error(backend, kind, when):
    """Contract: a stream started on a closed pool, or read after its pool closed
    under it, raises ``PoolClosedError`` (the contract's type, which the loader and
    its users can catch on every backend), never an epoch that ends early quietly."""
    pool = resolve_backend(backend).create_pool(PoolSpec(1, lambda worker_id: None))
    stream = _stream(pool, kind, 1000) if when == "read after" else None
    if stream is not None:
        next(stream)
    pool.close()
    assert pool.join(30)
    with pytest.raises(PoolClosedError):
        list(stream if stream is not None else _stream(pool, kind, 1))
