"""IndexBatches: the epoch's plan handed to the backend as int64 chunks when the
batch sampler is ours (conformance property 12 checks the batches on every
backend); what it remembers for timeouts, and who reads it natively."""

from __future__ import annotations

import numpy as np
import pytest

from dataloader_api import BatchSampler, DataLoader, RandomSampler, backends
from dataloader_api._epoch.start import _plan
from dataloader_api.contract import PIECE, IndexBatches
from dataloader_api.contract._index_batches import batches_of_chunks


def test_indices_of_names_a_batch_across_a_chunk_join_while_remembered():
    chunks = [np.arange(0, 5), np.arange(5, 9), np.arange(9, 20)]
    plan = IndexBatches(iter(chunks), 3, drop_last=False, memory=2)
    jobs = iter(plan)
    first = next(jobs)
    assert (first.position, first.indices) == (0, [0, 1, 2])
    second = next(jobs)
    assert second.indices == plan.indices_of(1) == [3, 4, 5]  # spans chunks 1 and 2
    assert [job.indices for job in jobs][:1] == [[6, 7, 8]]
    assert plan.indices_of(6) == [18, 19]
    assert plan.indices_of(1) is None  # its first chunk was forgotten
    assert plan.indices_of(99) is None


def test_consecutive_chunks_are_cut_into_ranges_when_asked():
    chunks = [np.arange(0, 6), np.array([9, 7, 8, 6, 10, 11]), np.arange(12, 17)]
    lists = list(batches_of_chunks(iter(chunks), 3, drop_last=False))
    cut = list(batches_of_chunks(iter(chunks), 3, drop_last=False, ranges=True))
    assert [list(batch) for batch in cut] == lists  # the same indices, batch by batch
    assert [type(batch) for batch in cut] == [range, range, list, list, range, list]
    # a carry joins the next chunk: [12, 13] + [14, ...] is consecutive, [3] + [5, 6] not
    joined = batches_of_chunks(iter([np.arange(14), np.arange(14, 18)]), 3, True, ranges=True)
    assert list(joined)[-2:] == [range(12, 15), range(15, 18)]
    gap = list(batches_of_chunks(iter([np.arange(4), np.arange(5, 7)]), 3, True, ranges=True))
    assert gap == [range(0, 3), [3, 5, 6]]


def test_a_long_chunk_is_handed_out_in_pieces_and_cut_across_them():
    plan = IndexBatches(iter([np.arange(PIECE * 2 + 5)]), 3000, drop_last=False)
    lengths = []
    while (piece := plan.next_chunk()) is not None:
        lengths.append(len(piece))
    assert lengths == [PIECE, PIECE, 5]
    plan = IndexBatches(iter([np.arange(PIECE * 2 + 5)]), 3000, drop_last=False)
    batches = [job.indices for job in plan]
    assert [i for batch in batches for i in batch] == list(range(PIECE * 2 + 5))
    assert {len(batch) for batch in batches[:-1]} == {3000}


@pytest.mark.parametrize("size", [0, -1, True, 2.0, None])
def test_a_bad_batch_size_is_named(size):
    with pytest.raises(
        ValueError, match=rf"^IndexBatches.batch_size must be an int >= 1, got {size!r}$"
    ):
        IndexBatches(iter([]), size, False)


def test_only_our_batch_sampler_over_our_samplers_is_given_as_data():
    def plan_of(**kwargs):
        loader = DataLoader(range(100), num_workers=1, **kwargs)
        return _plan(loader._options, 0)

    assert type(plan_of(batch_size=4)) is IndexBatches
    assert type(plan_of(batch_size=4, shuffle=True)) is IndexBatches
    sampler = RandomSampler(range(100), num_samples=250, index_shuffle=False)
    assert type(plan_of(batch_sampler=BatchSampler(sampler, 7, True))) is IndexBatches
    # A user's sampler or batch sampler, or no batching: the plan's Python iterator.
    assert type(plan_of(sampler=list(range(100)), batch_size=4)) is not IndexBatches
    assert type(plan_of(batch_sampler=[[1, 2], [3]])) is not IndexBatches
    assert type(plan_of(batch_size=None)) is not IndexBatches


@pytest.mark.skipif("rust" not in backends(), reason="the rust backend is not installed")
def test_the_rust_backend_cuts_the_batches_without_iterating_the_plan(monkeypatch):
    def no_iteration(self):
        raise AssertionError("the plan was iterated in Python")

    monkeypatch.setattr(IndexBatches, "__iter__", no_iteration)
    loader = DataLoader(range(1000), batch_size=7, shuffle=True, num_workers=2, backend="rust")
    delivered = [i for batch in loader for i in batch.tolist()]
    assert sorted(delivered) == list(range(1000))
    with pytest.raises(AssertionError, match="iterated in Python"):
        list(DataLoader(range(10), batch_size=7, num_workers=2, backend="threads"))
