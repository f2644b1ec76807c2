"""An epoch's worker threads: the backend pool and the ``WorkerInfo`` each thread
installs, each worker's copy of the dataset, and the handles torch's
``iterator._workers`` offers. (``_epoch.fetch`` calls each worker's copy.)"""

from .dataset_copies import worker_dataset
from .handles import worker_handles
from .pool import Workers, join_pools, new_workers

__all__ = ["Workers", "join_pools", "new_workers", "worker_dataset", "worker_handles"]
