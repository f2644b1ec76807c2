"""Properties 1 and 2: plan order, exactly once, unordered delivery, and the same
batches on every backend and worker count."""

from __future__ import annotations

import collections

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support import Recorder, batches_as_lists

from dataloader_api import BatchSampler, DataLoader, RandomSampler, backends
from dataloader_api._common.backend_registry import PREFERENCE

# The project's own backends that are installed, compared with the one under test.
PROJECT_BACKENDS = [name for name in backends() if name in PREFERENCE]


@st.composite
def loader_arguments(draw: st.DrawFn) -> dict[str, object]:
    length = draw(st.integers(0, 60))
    kind = draw(st.sampled_from(["default", "shuffle", "sampler", "batch_sampler", "unbatched"]))
    seed = draw(st.integers(0, 2**32))
    args: dict[str, object] = {"seed": seed}
    if kind in ("default", "shuffle"):
        args["batch_size"] = draw(st.integers(1, 9))
        args["drop_last"] = draw(st.booleans())
        args["shuffle"] = kind == "shuffle"
    elif kind == "sampler":
        args["sampler"] = (
            draw(st.lists(st.integers(0, max(length - 1, 0)), max_size=40)) if length else []
        )
        args["batch_size"] = draw(st.integers(1, 9))
    elif kind == "batch_sampler":
        indices = list(range(length))
        sizes = draw(st.lists(st.integers(1, 7), max_size=12))
        batches, start = [], 0
        for size in sizes:
            if start >= length:
                break
            batches.append(indices[start : start + size])
            start += size
        args["batch_sampler"] = batches
    else:
        args["batch_size"] = None
    return {"length": length, **args}


def build(args: dict[str, object], **extra: object) -> tuple[Recorder, DataLoader]:
    args = dict(args)
    dataset = Recorder(int(args.pop("length")))  # type: ignore[call-overload]
    return dataset, DataLoader(dataset, **args, **extra)  # type: ignore[arg-type]


def as_plain(batches: list[object]) -> list[object]:
    return [b.tolist() if hasattr(b, "tolist") else b for b in batches]


@given(args=loader_arguments(), num_workers=st.integers(1, 4), prefetch=st.integers(1, 3))
def test_batches_equal_the_sequential_reference(backend, args, num_workers, prefetch):
    _, reference = build(args)
    expected = as_plain(list(reference))
    _, loader = build(args, num_workers=num_workers, prefetch_factor=prefetch, backend=backend)
    assert as_plain(list(loader)) == expected
    # exactly once per epoch, for the plan's own indices
    if "sampler" not in args and "batch_sampler" not in args and args.get("batch_size"):
        delivered = [i for batch in expected for i in batch]
        assert len(delivered) == len(set(delivered))


@given(args=loader_arguments(), num_workers=st.integers(1, 4))
def test_unordered_delivers_the_same_multiset(backend, args, num_workers):
    _, reference = build(args)
    expected = collections.Counter(map(repr, as_plain(list(reference))))
    _, loader = build(args, num_workers=num_workers, in_order=False, backend=backend)
    assert collections.Counter(map(repr, as_plain(list(loader)))) == expected


@pytest.mark.timing
def test_a_slow_batch_does_not_hold_back_unordered_delivery(backend):
    # Item 0 blocks until released: the first batch must come while it still runs.
    dataset = Recorder(12, blocked={0}, block_limit=10.0)
    loader = DataLoader(dataset, batch_size=2, num_workers=2, in_order=False, backend=backend)
    iterator = iter(loader)
    first = next(iterator).tolist()
    delivered_while_blocked = not dataset.returned(0)
    dataset.release.set()
    rest = [b.tolist() for b in iterator]
    assert first != [0, 1] and delivered_while_blocked
    assert sorted(i for b in [first, *rest] for i in b) == list(range(12))


@given(
    length=st.integers(0, 50),
    batch_size=st.integers(1, 8),
    seed=st.integers(0, 2**32),
    workers=st.lists(st.integers(1, 4), min_size=1, max_size=3),
)
def test_same_seed_same_batches_on_every_backend_and_worker_count(
    backend, length, batch_size, seed, workers
):
    def epochs(name: str | None, num_workers: int) -> list[list[list[int]]]:
        sampler = RandomSampler(range(length), seed=seed)
        loader = DataLoader(
            Recorder(length),
            batch_sampler=BatchSampler(sampler, batch_size, False),
            num_workers=num_workers,
            backend=name,
        )
        return [batches_as_lists(loader) for _ in range(2)]

    # Every backend is held to the common API's own plan (num_workers=0), so
    # any two backends that pass agree with each other.
    reference = epochs(None, 0)
    for name in {backend, *PROJECT_BACKENDS}:
        for num_workers in workers:
            assert epochs(name, num_workers) == reference, (name, num_workers)
