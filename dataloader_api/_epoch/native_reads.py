"""Native reads of the ``dataloader_api.io`` datasets: when the epoch's backend
offers ``open_reader`` (``contract.ReadsNatively``), their items are read by it,
without the interpreter, instead of by the reference (async for the network
datasets, plain reads for files), and ``TarShards`` streams its remote shards
through it. ``DATALOADER_NATIVE_IO=0`` keeps the reference.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

from .._features.feature_list import is_io_dataset
from .._options.loader_options import LoaderOptions
from ..contract import ReadsNatively

__all__ = ["NATIVE_IO_VARIABLE", "native_epoch"]

NATIVE_IO_VARIABLE = "DATALOADER_NATIVE_IO"


def native_epoch(options: LoaderOptions) -> Any:
    """The epoch's ``io._native.NativeEpoch`` (``start``, ``fetch``, ``fetch_now``,
    ``item_fetch``, ``close``) through the backend's reader, or None for the reference."""
    dataset = options.sampling.dataset
    backend = options.execution.backend
    off = os.environ.get(NATIVE_IO_VARIABLE, "1") == "0"
    read_natively = getattr(dataset, "read_natively", None)
    if read_natively is not None:  # TarShards: its remote shards stream through the reader
        native = isinstance(backend, ReadsNatively) and not off
        read_natively(
            backend.open_reader if isinstance(backend, ReadsNatively) and native else None
        )
    if not is_io_dataset(dataset) or options.sampling.is_iterable:
        return None
    if not isinstance(backend, ReadsNatively) or off or not dataset.reads_natively():
        _warn_if_uncapped(options)
        return None
    return dataset.native_epoch(
        backend.open_reader, options.items.max_concurrency, options.sampling.auto_collation
    )


def _warn_if_uncapped(options: LoaderOptions) -> None:
    """The reference reads a sync io dataset (files) one item per worker thread:
    a ``max_concurrency`` below the thread count cannot hold there. Say so."""
    cap, threads = options.items.max_concurrency, max(1, options.workers.num_workers)
    if cap is None or options.items.agetitem is not None or cap >= threads:
        return
    name = options.execution.backend_name or "the calling thread"
    warnings.warn(
        f"max_concurrency={cap} is not applied: {name} reads "
        f"{type(options.sampling.dataset).__name__} with the reference, one item at a time on each "
        f"of num_workers={options.workers.num_workers} threads; use num_workers={cap}, or the rust "
        "backend (native reads)",
        UserWarning,
        stacklevel=4,
    )
