"""The leaves every concern above may use: NumPy imported on first use, whether a
dataset is async, each thread's ``WorkerInfo``, the installed backends, and the
process's rank and world size. Nothing here imports another package of the loader
but ``contract``."""

from .async_detect import EVENT_LOOPS, async_getitem
from .backend_registry import backends, resolve_backend
from .distributed_ranks import rank_and_world_size, warn_if_unsharded
from .lazy_import import LazyModule
from .worker_info import WorkerInfo, get_worker_info, set_worker_info

__all__ = [
    "EVENT_LOOPS",
    "LazyModule",
    "WorkerInfo",
    "async_getitem",
    "backends",
    "get_worker_info",
    "rank_and_world_size",
    "resolve_backend",
    "set_worker_info",
    "warn_if_unsharded",
]
