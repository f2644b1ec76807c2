"""What torch and its ecosystem expect of a loader whose workers are threads: torch
``IterDataPipe`` graphs, the process-wide generators a worker must not reseed,
``torch.utils.data.get_worker_info()`` answering in our threads, Lightning's and
accelerate's sharding, and lmdb environments shared per process. ``integrations``
installs the patches."""

from .datapipes import epoch_seed, is_iter_datapipe, prepare_epoch
from .frameworks import hook_accelerate, hook_lightning
from .global_generators import rearm_warnings
from .lmdb_envs import SharedEnvironment, share_lmdb_environments
from .worker_info_patch import patch_torch_worker_info

__all__ = [
    "SharedEnvironment",
    "epoch_seed",
    "hook_accelerate",
    "hook_lightning",
    "is_iter_datapipe",
    "patch_torch_worker_info",
    "prepare_epoch",
    "rearm_warnings",
    "share_lmdb_environments",
]
