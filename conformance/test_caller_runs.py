"""Property 16: when the consumer makes batches itself (caller-runs, forced here with
``DATALOADER_CALLER_RUNS=always``), each such batch is the batch a worker would
have made: the same batches in the same order as the calling thread's plan and as
with caller-runs off, every index once; inside each item ``get_worker_info()`` is
a worker of this epoch (its id, seed, ``num_workers``, and its own copy as
``self``); each worker's generator (``info.rng``) is one stream, drawn in turn by
whichever thread makes that worker's items; and never are two threads inside one
worker copy at once (a copy is called by its worker's thread and the consumer
only)."""

from __future__ import annotations

import random
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dataloader_api import DataLoader, get_worker_info


class CopyProbe:
    """Records, per item: the thread, ``self``, the worker info's fields, a draw
    from the worker's generator, and whether another thread was inside this copy."""

    def __init__(self, length: int) -> None:
        self.length = length
        self.inside = 0  # rebound on each copy: threads inside that copy now
        # (thread, self, worker id, seed, num_workers, is self its copy, the worker's
        # generators, a draw, crowded): objects, not ids, so none is freed and reused.
        self.seen: list[tuple[int, object, int, int, int, bool, object, float, bool]] = []
        self.lock = threading.Lock()  # shared by the copies

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> int:
        with self.lock:
            self.inside += 1
            crowded = self.inside > 1
        info = get_worker_info()
        assert info is not None, "an item ran as no worker"
        with self.lock:
            draw = info.rng.random_generator.random()  # in the order items draw
            self.seen.append(
                (
                    threading.get_ident(),
                    self,
                    info.id,
                    info.seed,
                    info.num_workers,
                    info.dataset is self,
                    info.rng,
                    draw,
                    crowded,
                )
            )
            self.inside -= 1
        return index


def _epochs(backend, mode, monkeypatch, probe, num_workers, batch_size, shuffle, persistent):
    monkeypatch.setenv("DATALOADER_CALLER_RUNS", mode)
    loader = DataLoader(
        probe,
        batch_size=batch_size,
        shuffle=shuffle,
        seed=7,
        num_workers=num_workers,
        prefetch_factor=2,
        persistent_workers=persistent,
        backend=backend,
    )
    try:
        return [[b.tolist() for b in loader] for _ in range(2)]
    finally:
        loader.close()


@given(
    num_workers=st.integers(1, 3),
    batch_size=st.integers(1, 4),
    shuffle=st.booleans(),
    persistent=st.booleans(),
)
def test_batches_made_by_the_consumer_are_a_workers(
    backend, monkeypatch, num_workers, batch_size, shuffle, persistent
):
    settings = (num_workers, batch_size, shuffle, persistent)
    off = CopyProbe(120)
    reference = _epochs(backend, "off", monkeypatch, off, *settings)
    probe = CopyProbe(120)
    epochs = _epochs(backend, "always", monkeypatch, probe, *settings)
    assert epochs == reference  # order, every index once, identical to caller-runs off
    consumer = threading.get_ident()
    assert any(thread == consumer for thread, *_ in probe.seen), "the consumer made no batch"
    threads_of: dict[int, set[int]] = {}
    draws: dict[int, tuple[int, list[float]]] = {}
    for thread, me, worker, seed, workers, own, rng, draw, crowded in probe.seen:
        assert not crowded, "two threads were inside one worker copy at once"
        assert own, "get_worker_info().dataset is not the copy the item runs on"
        assert 0 <= worker < num_workers and workers == num_workers
        threads_of.setdefault(id(me), set()).add(thread)
        draws.setdefault(id(rng), (seed, []))[1].append(draw)
    for threads in threads_of.values():  # its worker's thread, and the consumer
        assert len(threads - {consumer}) <= 1
    for seed, values in draws.values():  # one stream per worker, whoever drew from it
        stream = random.Random(seed)
        assert values == [stream.random() for _ in values]
    # Each worker's seed is base_seed + id, the base seeds those of caller-runs off.
    assert {s - w for _, _, w, s, *_ in probe.seen} == {s - w for _, _, w, s, *_ in off.seen}


@pytest.mark.parametrize("mode", ["sometimes", "1"])
def test_a_bad_mode_is_a_clear_error(backend, monkeypatch, mode):
    monkeypatch.setenv("DATALOADER_CALLER_RUNS", mode)
    loader = DataLoader(CopyProbe(8), batch_size=2, num_workers=1, backend=backend)
    with pytest.raises(ValueError, match=f"DATALOADER_CALLER_RUNS='{mode}' is not one of"):
        iter(loader)
    loader.close()
