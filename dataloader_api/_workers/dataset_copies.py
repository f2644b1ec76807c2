"""Each worker thread calls its own shallow copy of the dataset.

A torch worker process has its own copy of the dataset, so datasets written
for torch keep per-worker state on ``self``: a file, database or LMDB handle
opened lazily, a cache, a counter. Threads of one process would share that
state and read wrong records; so each worker gets ``copy.copy(dataset)`` when
torch makes its copies (each epoch's workers, or once for persistent ones).
Attributes stay shared objects (arrays, lists, tables: nothing is duplicated
in memory); only rebinding an attribute is per worker. The calling thread
(``num_workers=0``) uses the dataset itself, as torch does.

The copy reaches every dataset the worker calls through, as pickling does for
a worker process: a dataset held on an attribute of a copied dataset
(``Subset.dataset``, a user's wrapper) is copied too, and so is each dataset
in a list, tuple or dict attribute whose first value is one
(``ConcatDataset.datasets``, ``StackDataset.datasets``). An inner dataset is a
``torch.utils.data.Dataset`` or an object whose class defines ``__getitem__``
and ``__len__``; arrays, tensors, containers and the ``io`` datasets are not.
One object reached twice gets one copy, as pickling keeps shared references.

``DataLoader(share_dataset=True)`` opts out (a cache meant for every worker).
Datasets that keep no state of their own are shared as they are: builtin
containers and arrays (a copy would duplicate their items), async datasets
(their coroutines run on one event loop, not on the workers) and the
``dataloader_api.io`` datasets read natively.
"""

from __future__ import annotations

import collections
import copy
import sys
import threading
from collections.abc import Callable
from typing import Any

from .._features.feature_list import copies_allowed, is_io_dataset
from .._torch.datapipes import is_iter_datapipe, worker_copy

__all__ = [
    "CopyGuards",
    "bound_to_copy",
    "copies_per_worker",
    "is_inner_dataset",
    "worker_dataset",
]

# Instances of these hold items, not state: copying them would copy the items.
_CONTAINERS = (
    list,
    tuple,
    dict,
    set,
    frozenset,
    range,
    str,
    bytes,
    bytearray,
    memoryview,
    collections.UserList,
    collections.UserDict,
    collections.UserString,
)
# What array libraries' objects have (NumPy, pandas, h5py, zarr, polars, pyarrow):
# they hold data, not per-worker state.
_ARRAY_PROTOCOLS = ("__array__", "__array_interface__", "__dlpack__", "__arrow_c_array__")


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
    kind = "iterable" if options.sampling.is_iterable else "map-style"
    return _WorkerCopier(kind).dataset(dataset, "dataset")


def is_inner_dataset(value: Any) -> bool:
    """Whether ``value``, held by a dataset a worker copies, is a dataset the worker
    calls through and so gets a copy of its own (the module docstring's rule)."""
    if (
        isinstance(value, (*_CONTAINERS, type))
        or not hasattr(value, "__dict__")
        or is_io_dataset(value)
        or any(hasattr(value, name) for name in _ARRAY_PROTOCOLS)
    ):
        return False
    torch_data = sys.modules.get("torch.utils.data")
    if torch_data is not None and isinstance(value, torch_data.Dataset):
        return True
    kind = type(value)
    return hasattr(kind, "__getitem__") and hasattr(kind, "__len__")


class _WorkerCopier:
    """One worker's copy of a dataset and of every dataset inside it; ``copies``
    maps each original's id to its copy, so a dataset reached twice (or a cycle)
    gets one copy."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.copies: dict[int, Any] = {}

    def dataset(self, dataset: Any, path: str) -> Any:
        if id(dataset) in self.copies:
            return self.copies[id(dataset)]
        try:
            own = copy.copy(dataset)
        except Exception as error:
            where = "" if path == "dataset" else f" (at {path}, inside the loader's dataset)"
            raise TypeError(
                f"{self.kind} dataset {type(dataset).__name__}{where} cannot be shallow-copied "
                f"for each worker thread ({type(error).__name__}: {error}); each worker calls "
                "its own copy, as each torch worker process has one: define __copy__ for it, "
                "or pass DataLoader(share_dataset=True) to let every worker call this one object"
            ) from error
        self.copies[id(dataset)] = own
        attributes = getattr(own, "__dict__", None)
        if own is not dataset and isinstance(attributes, dict):
            for name, value in list(attributes.items()):
                inner = self.value(value, f"{path}.{name}")
                if inner is not value:
                    attributes[name] = inner  # not setattr: a wrapper's __setattr__ may refuse
        return own

    def value(self, value: Any, path: str) -> Any:
        """``value`` with each inner dataset replaced by this worker's copy."""
        if is_inner_dataset(value):
            return self.dataset(value, path)
        if type(value) in (list, tuple) and value and is_inner_dataset(value[0]):
            return type(value)(self.value(v, f"{path}[{i}]") for i, v in enumerate(value))
        if type(value) is dict and value and is_inner_dataset(next(iter(value.values()))):
            return {k: self.value(v, f"{path}[{k!r}]") for k, v in value.items()}
        return value


def bound_to_copy(function: Callable[..., Any], dataset: Any, copy_: Any) -> Callable[..., Any]:
    """``function``, or, when it is a method of ``dataset`` (``worker_init_fn=
    self.worker_init_fn``), the same method of the worker's copy: in a torch worker
    process it runs on that worker's copy, and so does what it sets on ``self``."""
    if copy_ is dataset or getattr(function, "__self__", None) is not dataset:
        return function
    return function.__func__.__get__(copy_)  # type: ignore[attr-defined,no-any-return]


class CopyGuards:
    """One lock per worker copy, so that two threads are never inside one copy at
    once: its worker's thread holds it while it fetches a batch, and the consumer
    (``_epoch.caller_runs``) while it makes a batch as that worker. ``fastest[i]``:
    the shortest batch fetch seen on copy ``i`` (infinite until its own worker has
    fetched from it; the consumer uses no copy before its worker did, so that state
    a dataset opens lazily, a sqlite3 connection say, belongs to the worker's thread)."""

    __slots__ = ("fastest", "locks")

    def __init__(self, count: int) -> None:
        self.locks = [threading.Lock() for _ in range(count)]
        self.fastest = [float("inf")] * count
