"""``torch.utils.data.get_worker_info()`` answers inside our worker threads.

Datasets the user does not own (Hugging Face ``datasets``, webdataset,
torchdata, PyTorch's own sharding idiom) call torch's function, not ours. It
returns a module global, set only in torch's worker processes, so in our
threads it said ``None`` and every worker yielded the whole stream.

The fix changes the *code* of torch's function object in place, so every
reference to it sees the change, also ``from torch.utils.data import
get_worker_info`` done before this module ran. The new code asks this module
for the calling thread's info (a torch ``WorkerInfo`` made from ours) and
falls back to torch's global, so torch's own workers are unaffected.

One caller must keep hearing ``None``: torch's ``collate_tensor_fn`` puts a
batch into shared memory when it believes it runs in a worker *process*; in a
thread that only leaks file descriptors. Calls from that function are told
``None``.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from .._common.worker_info import WorkerInfo, get_worker_info

__all__ = ["patch_torch_worker_info"]

_patched = False
_lock = threading.Lock()
# Code objects whose calls must see None (torch's shared-memory collate path).
_blind_callers: set[Any] = set()


def _torch_get_worker_info() -> Any:
    """The code torch's ``get_worker_info`` runs once patched; its names resolve in
    torch's worker module, where the patch puts ``_dataloader_api_worker_info``."""
    info = _dataloader_api_worker_info()  # type: ignore[name-defined]  # noqa: F821
    return _worker_info if info is None else info  # type: ignore[name-defined]  # noqa: F821


def _thread_worker_info() -> Any:
    """torch's ``WorkerInfo`` for the calling worker thread, or None."""
    info = get_worker_info()
    if info is None:
        return None
    # Frame 0 is this function, 1 torch's get_worker_info, 2 its caller.
    if sys._getframe(2).f_code in _blind_callers:
        return None
    # Made once per info and kept on it (a dict keyed by info would hash the
    # dataset, which may be unhashable).
    converted = info.__dict__.get("_torch_info")
    if converted is None:
        converted = _make_torch_info(info)
        object.__setattr__(info, "_torch_info", converted)
    return converted


def _make_torch_info(info: WorkerInfo) -> Any:
    from torch.utils.data._utils import worker

    fields = {"id": info.id, "num_workers": info.num_workers, "seed": info.seed}
    rng_class = getattr(worker, "_RNG", None)
    if rng_class is None:  # a torch before 2.15: no rng, no worker_method
        return worker.WorkerInfo(**fields, dataset=info.dataset)
    rng = info.rng  # the same generators as ours: one stream per worker
    torch_rng = rng_class(rng.random_generator, rng.torch_generator, rng.numpy_generator)
    return worker.WorkerInfo(**fields, dataset=info.dataset, rng=torch_rng, worker_method="thread")


def patch_torch_worker_info() -> None:
    """Make torch's ``get_worker_info()`` answer in our threads, once torch is
    imported (cheap to call per epoch: a flag and a ``sys.modules`` look-up)."""
    global _patched
    if _patched or "torch.utils.data" not in sys.modules:
        return
    with _lock:
        if _patched:
            return
        from torch.utils.data._utils import collate, worker

        function = worker.get_worker_info
        worker._dataloader_api_worker_info = _thread_worker_info
        function.__code__ = _torch_get_worker_info.__code__
        tensor_collate = getattr(collate, "collate_tensor_fn", None)
        if tensor_collate is not None:
            _blind_callers.add(tensor_collate.__code__)
        _patched = True
