"""``broken-copies`` and ``broken-outer-copies``: workers that call the loader's
dataset, or one shared copy of the datasets inside it, instead of their own."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

from dataloader_api._common.worker_info import get_worker_info, set_worker_info
from dataloader_api.contract import PoolSpec

from . import _backend, _Wrapped


class _CopiesPool(_Wrapped):
    """Its threads run PoolSpec.thread_init, then forget the WorkerInfo it
    installed: jobs run as no worker, so no worker's copy of the dataset is called."""

    def __init__(self, spec: PoolSpec) -> None:
        init = spec.thread_init

        def init_then_forget(worker_id: int) -> None:
            init(worker_id)
            set_worker_info(None)

        super().__init__(replace(spec, thread_init=init_then_forget))


class _OuterCopiesPool(_Wrapped):
    """Its workers keep their own copy of the loader's dataset, but every copy's
    attributes are rebound to the first worker's: the datasets inside it (a
    Subset's, a ConcatDataset's) are one object for all workers, as when copies
    stop at the outer object."""

    def __init__(self, spec: PoolSpec) -> None:
        init, lock = spec.thread_init, threading.Lock()
        first: dict[str, dict[str, Any]] = {}

        def init_then_share(worker_id: int) -> None:
            init(worker_id)
            own = get_worker_info().dataset
            with lock:
                attributes = first.setdefault("attributes", dict(vars(own)))
            vars(own).update(attributes)

        super().__init__(replace(spec, thread_init=init_then_share))


BrokenCopies = _backend("broken-copies", _CopiesPool)
BrokenOuterCopies = _backend("broken-outer-copies", _OuterCopiesPool)
