"""Property 12: a plan given as data (``IndexBatches``) gives the batches its own
iteration gives, whether the backend iterates it or cuts its chunks natively; and a
job the loader started reaches fetch as started."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from dataloader_api import DataLoader, RandomSampler, resolve_backend
from dataloader_api.contract import BatchJob, IndexBatches, MapWork, PoolSpec, StreamSpec


def _chunk(values: list[int], kind: str) -> Any:
    if kind == "int64":
        return np.asarray(values, dtype=np.int64)
    if kind == "strided":  # an int64 view that is not contiguous
        return np.asarray([v for value in values for v in (value, -1)], dtype=np.int64)[::2]
    if kind == "int32":
        return np.asarray(values, dtype=np.int32)
    return list(values)


@st.composite
def plans(draw: st.DrawFn) -> tuple[list[list[int]], list[str], int, bool]:
    sizes = draw(st.lists(st.integers(0, 40), max_size=8))
    kinds = draw(st.lists(st.sampled_from(["int64", "strided", "int32", "list"]), min_size=8))
    values = iter(draw(st.permutations(range(sum(sizes)))))
    chunks = [[next(values) for _ in range(size)] for size in sizes]
    return chunks, kinds, draw(st.integers(1, 12)), draw(st.booleans())


@given(plan=plans(), num_threads=st.integers(1, 3), window=st.integers(1, 4))
def test_a_plan_given_as_data_gives_its_own_batches(backend, plan, num_threads, window):
    chunks, kinds, batch_size, drop_last = plan

    def index_batches() -> IndexBatches:
        arrays = [_chunk(chunk, kind) for chunk, kind in zip(chunks, kinds, strict=False)]
        return IndexBatches(iter(arrays), batch_size, drop_last)

    expected = [job.indices for job in index_batches()]
    flat = [i for chunk in chunks for i in chunk]
    whole = len(flat) - len(flat) % batch_size if drop_last else len(flat)
    assert expected == [flat[s : s + batch_size] for s in range(0, whole, batch_size)]
    pool = resolve_backend(backend).create_pool(PoolSpec(num_threads, lambda worker_id: None))
    try:
        work = MapWork(index_batches(), fetch=list, collate=lambda batch: batch)
        stream = pool.map_batches(work, StreamSpec(window))
        got = [[int(i) for i in batch] for batch in stream]
        stream.close()
    finally:
        pool.close()
        pool.join(5)
    assert got == expected


@given(
    length=st.integers(1, 300),
    laps=st.integers(1, 4),
    batch_size=st.integers(1, 70),
    drop_last=st.booleans(),
    num_workers=st.integers(1, 3),
)
def test_shuffled_laps_equal_the_calling_threads(
    backend, length, laps, batch_size, drop_last, num_workers
):
    """Batches spanning two passes over the data (``num_samples`` beyond the
    length), where an epoch's chunks meet inside a batch."""

    def loader(**extra: Any) -> DataLoader:
        sampler = RandomSampler(
            range(length), num_samples=length * laps + 3, index_shuffle=True, seed=5
        )
        return DataLoader(
            range(length),
            sampler=sampler,
            batch_size=batch_size,
            drop_last=drop_last,
            collate_fn=lambda batch: batch,
            **extra,
        )

    expected = list(loader())
    assert list(loader(num_workers=num_workers, backend=backend)) == expected


@given(
    sizes=st.lists(st.integers(1, 5), max_size=12),
    num_threads=st.integers(1, 3),
    window=st.integers(1, 4),
)
def test_fetch_receives_what_the_loader_started(backend, sizes, num_threads, window):
    """A job's ``BatchJob.started`` (an async batch, native reads the loader began
    as the backend took the job) is what ``fetch`` receives, never the indices."""
    jobs, first = [], 0
    for position, size in enumerate(sizes):
        indices = list(range(first, first + size))
        first += size
        jobs.append(BatchJob(position, indices, ("started", tuple(indices))))

    def fetch(argument: Any) -> list[int]:
        if not (isinstance(argument, tuple) and argument[0] == "started"):
            raise AssertionError(f"fetch received {argument!r}, not the job's started value")
        return list(argument[1])

    pool = resolve_backend(backend).create_pool(PoolSpec(num_threads, lambda worker_id: None))
    try:
        stream = pool.map_batches(MapWork(iter(jobs), fetch, lambda b: b), StreamSpec(window))
        got = list(stream)
        stream.close()
    finally:
        pool.close()
        pool.join(5)
    assert got == [job.indices for job in jobs]
