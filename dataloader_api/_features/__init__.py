"""The epoch's features, each declared once in ``feature_list.FEATURES``: what it
asks of the pool and the dataset copies, and the step it adds around the dataset
call (stats, the transform hook, idle pools), over the shapes in ``steps``.
(``feature_list.apply_steps`` is left to ``_epoch.work``, the one module that
composes an epoch.)"""

from .feature_list import FEATURES, copies_allowed, is_io_dataset, may_share_pool
from .idle_pools import release_idle_workers
from .stats import EpochStats, StatsRecorder
from .steps import EpochContext, EpochSteps, Feature, StepRecorder
from .transform_hook import Transform, check_transform, epoch_transform

__all__ = [
    "FEATURES",
    "EpochContext",
    "EpochStats",
    "EpochSteps",
    "Feature",
    "StatsRecorder",
    "StepRecorder",
    "Transform",
    "check_transform",
    "copies_allowed",
    "epoch_transform",
    "is_io_dataset",
    "may_share_pool",
    "release_idle_workers",
]
