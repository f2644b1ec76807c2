"""Native reads of the ``dataloader_api.io`` datasets: when the epoch's backend
offers ``open_reader`` (see ``contract.Backend``), their items are read by it,
without the interpreter, instead of by the reference (async for the network
datasets, plain reads for files). ``DATALOADER_NATIVE_IO=0`` keeps the reference.
"""

from __future__ import annotations

import os
from typing import Any

from ._options import LoaderOptions

__all__ = ["NATIVE_IO_VARIABLE", "native_epoch"]

NATIVE_IO_VARIABLE = "DATALOADER_NATIVE_IO"


def native_epoch(options: LoaderOptions) -> Any:
    """The epoch's ``NativeEpoch`` (``job_fetch``, ``item_fetch``, ``close``) through
    the backend's reader, or None for the reference."""
    dataset = options.dataset
    native = getattr(dataset, "native_epoch", None)
    open_reader = getattr(options.backend, "open_reader", None)
    if native is None or open_reader is None or options.is_iterable:
        return None
    if os.environ.get(NATIVE_IO_VARIABLE, "1") == "0" or not dataset.reads_natively():
        return None
    return native(open_reader, options.max_concurrency, options.auto_collation)
