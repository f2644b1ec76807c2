"""Every loader a table compares, and how each is built and driven: ours
(``dataloader_api.DataLoader``), torch's DataLoader, dataloader-rs, SPDL's thread
pipeline and Grain's MapDataset. A peer that is not importable gives ``None``
instead of an entry (its rows are missing, and the run says so).
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable
from typing import Any

from measure import Entry, count

from dataloader_api import DataLoader

try:
    import dataloader_rs
except ImportError:
    dataloader_rs = None
try:
    import torch.utils.data as torch_data
except ImportError:
    torch_data = None
try:
    from spdl.pipeline import PipelineBuilder
except ImportError:
    PipelineBuilder = None
try:
    import grain.python as grain
except ImportError:
    grain = None

#: (name shown, module or None, distribution for its version)
PEERS = [
    ("torch", torch_data, "torch"),
    ("dataloader-rs", dataloader_rs, "dataloader-rs"),
    ("SPDL", PipelineBuilder, "spdl"),
    ("Grain", grain, "grain"),
]


def versions() -> list[str]:
    """The installed peers with their versions, for the run's first line."""
    return [f"{dist} {importlib.metadata.version(dist)}" for _, module, dist in PEERS if module]


def missing() -> list[str]:
    return [name for name, module, _ in PEERS if module is None]


def installed(dist: str) -> bool:
    """Whether the peer of this distribution name ("dataloader-rs", ...) is importable."""
    return any(module is not None for _, module, name in PEERS if name == dist)


def ours(dataset: Any, backend: str | None, workers: int, batch_size: int, **kw: Any) -> Entry:
    loader = DataLoader(
        dataset,
        batch_size=batch_size,
        num_workers=workers,
        backend=backend,
        persistent_workers=workers > 0,
        **kw,
    )
    label = f"{backend}, {workers} workers" if workers else "dataloader_api, calling thread"
    return Entry(label, count(loader), workers)


def torch_entry(
    dataset: Any, workers: int, batch_size: int, counter: Any = count, **kw: Any
) -> Entry | None:
    if torch_data is None:
        return None
    loader = torch_data.DataLoader(
        dataset, batch_size=batch_size, num_workers=workers, persistent_workers=workers > 0, **kw
    )
    return Entry(f"torch DataLoader, {workers} workers", counter(loader), workers, "torch")


def for_dataloader_rs(dataset: Any) -> Any:
    """The same dataset as a ``dataloader_rs.PyDataset`` (same methods, no wrapper call):
    a new instance of a subclass, made from the dataset's ``args``."""
    assert dataloader_rs is not None
    kind = type(f"{type(dataset).__name__}RS", (type(dataset), dataloader_rs.PyDataset), {})
    return kind(*dataset.args)


def rs_entry(
    dataset: Any, workers: int, batch_size: int, collate: Any = None, counter: Any = count
) -> Entry | None:
    if dataloader_rs is None:
        return None
    loader = dataloader_rs.PyDataloader(
        for_dataloader_rs(dataset), batch_size=batch_size, num_workers=workers, collate_fn=collate
    )
    return Entry(f"dataloader-rs, {workers} workers", counter(loader), workers, "dataloader-rs")


def spdl_entry(
    dataset: Any, workers: int, batch_size: int, collate: Any = None, limit: int | None = None
) -> Entry | None:
    """SPDL's thread pipeline, batch-level like our jobs: indices are grouped into
    batches, and each batch is fetched (and collated) by one task, in input order."""
    if PipelineBuilder is None or workers == 0:
        return None

    def fetch(indices: list[int]) -> list[Any]:
        return [dataset[i] for i in indices]

    length = len(dataset) if limit is None else min(limit, len(dataset))

    def epoch() -> int:
        builder = (
            PipelineBuilder()
            .add_source(range(length))
            .aggregate(batch_size)
            .pipe(fetch, concurrency=workers, output_order="input")
        )
        if collate is not None:
            builder = builder.pipe(collate, concurrency=workers, output_order="input")
        pipeline = builder.add_sink(3).build(num_threads=workers)
        total = 0
        with pipeline.auto_stop():
            for batch in pipeline:
                total += len(batch)
        return total

    return Entry(f"SPDL pipeline, {workers} threads", epoch, workers, "spdl")


class _GrainSource:
    """The dataset as Grain's random-access source."""

    def __init__(self, dataset: Any) -> None:
        self.dataset = dataset

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> Any:
        return self.dataset[index]


def grain_entry(dataset: Any, workers: int, batch_size: int, collate: Any = None) -> Entry | None:
    """Grain's dataset API as its docs recommend for random-access data that needs
    no worker processes: ``MapDataset.source(...).batch(...)`` (one element, one
    batch: batch-level work, like our jobs; ``collate`` as ``batch_fn``, else
    Grain's own stacking) read by ``to_iter_dataset(ReadOptions(num_threads=
    workers))``, its thread prefetch (0: on the calling thread). Batching after
    ``to_iter_dataset`` instead ran at 3.3-3.9k items/s here with 2 threads, and
    ``grain.DataLoader`` (worker processes) at 1.3-1.8k: neither is its best."""
    if grain is None:
        return None
    batched = grain.MapDataset.source(_GrainSource(dataset)).batch(
        batch_size, **({"batch_fn": collate} if collate is not None else {})
    )
    options = grain.ReadOptions(num_threads=workers, prefetch_buffer_size=2 * workers)
    loader = batched.to_iter_dataset(options)
    label = (
        f"Grain MapDataset, {workers} threads" if workers else "Grain MapDataset, calling thread"
    )
    return Entry(label, count(loader), workers, "grain")


# -- new loaders, for the start-up and memory workloads ------------------------
# Each returns a function that makes a new loader (start-up times that call), or
# None when the peer is missing. The function holds only what the call needs.


def ours_new(dataset: Any, backend: str, workers: int, **kw: Any) -> Callable[[], Any]:
    return lambda: DataLoader(dataset, num_workers=workers, backend=backend, **kw)


def torch_new(dataset: Any, workers: int, **kw: Any) -> Callable[[], Any] | None:
    if torch_data is None:
        return None
    return lambda: torch_data.DataLoader(dataset, num_workers=workers, **kw)


def rs_new(dataset: Any, workers: int, **kw: Any) -> Callable[[], Any] | None:
    """``dataset`` is converted now, once (see for_dataloader_rs), and only the copy is
    kept: the caller's may be freed."""
    if dataloader_rs is None:
        return None
    rs_dataset = for_dataloader_rs(dataset)
    return lambda: dataloader_rs.PyDataloader(rs_dataset, num_workers=workers, **kw)
