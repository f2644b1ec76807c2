"""Each worker thread calls its own shallow copy of the dataset.

A torch worker process has its own copy of the dataset, so datasets written
for torch keep per-worker state on ``self``: a file, database or LMDB handle
opened lazily, a cache, a counter. Threads of one process would share that
state and read wrong records; so each worker gets ``copy.copy(dataset)`` when
torch makes its copies (each epoch's workers, or once for persistent ones).
Attributes stay shared objects (arrays, lists, tables: nothing is duplicated
in memory); only rebinding an attribute is per worker. The calling thread
(``num_workers=0``) uses the dataset itself, as torch does.

``DataLoader(share_dataset=True)`` opts out (a cache meant for every worker).
Datasets that keep no state of their own are shared as they are: builtin
containers and arrays (a copy would duplicate their items), async datasets
(their coroutines run on one event loop, not on the workers) and the
``dataloader_api.io`` datasets read natively.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

from ._epoch_features import copies_allowed
from ._torch_datapipes import is_iter_datapipe, worker_copy
from ._worker_info import WorkerInfo, get_worker_info

__all__ = ["bound_to_copy", "copies_per_worker", "per_worker_fetch", "worker_dataset"]

# Instances of these hold items, not state: copying them would copy the items.
_CONTAINERS = (list, tuple, dict, set, frozenset, range, str, bytes, bytearray, memoryview)


def copies_per_worker(options: Any) -> bool:
    """Whether each worker of this loader calls its own copy of the dataset."""
    dataset = options.sampling.dataset
    return copies_allowed(options) and not (
        isinstance(dataset, _CONTAINERS)
        or not hasattr(dataset, "__dict__")  # NumPy arrays, __slots__-only objects
        or _is_torch_tensor(dataset)
    )


def _is_torch_tensor(dataset: Any) -> bool:
    module = type(dataset).__module__
    if not module.startswith("torch"):
        return False
    import torch

    return isinstance(dataset, torch.Tensor)


def worker_dataset(options: Any) -> Any:
    """A new worker's dataset: a shallow copy of the loader's, or the loader's
    itself where ``copies_per_worker`` says so."""
    dataset = options.sampling.dataset
    if not copies_per_worker(options):
        return dataset
    if is_iter_datapipe(dataset):
        return worker_copy(dataset)
    try:
        return copy.copy(dataset)
    except Exception as error:
        kind = "iterable" if options.sampling.is_iterable else "map-style"
        raise TypeError(
            f"{kind} dataset {type(dataset).__name__} cannot be shallow-copied for each "
            f"worker thread ({type(error).__name__}: {error}); each worker calls its own "
            "copy, as each torch worker process has one: define __copy__ for it, or pass "
            "DataLoader(share_dataset=True) to let every worker call this one object"
        ) from error


def bound_to_copy(function: Callable[..., Any], dataset: Any, copy_: Any) -> Callable[..., Any]:
    """``function``, or, when it is a method of ``dataset`` (``worker_init_fn=
    self.worker_init_fn``), the same method of the worker's copy: in a torch worker
    process it runs on that worker's copy, and so does what it sets on ``self``."""
    if copy_ is dataset or getattr(function, "__self__", None) is not dataset:
        return function
    return function.__func__.__get__(copy_)  # type: ignore[attr-defined,no-any-return]


def per_worker_fetch(
    infos: Sequence[WorkerInfo], dataset: Any, make: Callable[[Any], Callable[[Any], Any]]
) -> Callable[[Any], Any]:
    """``make(dataset)``, called on each worker thread with that worker's own copy
    (``infos[i].dataset``). A thread that is no worker of ``infos`` (a backend
    running jobs elsewhere breaks the contract) calls ``dataset`` itself."""
    shared = make(dataset)
    if all(info.dataset is dataset for info in infos):
        return shared
    workers = tuple(infos)
    own = [make(info.dataset) for info in workers]

    def fetch_with_own_copy(indices: Any) -> Any:
        info = get_worker_info()
        if info is not None and info.local_id < len(workers) and workers[info.local_id] is info:
            return own[info.local_id](indices)
        return shared(indices)

    return fetch_with_own_copy
