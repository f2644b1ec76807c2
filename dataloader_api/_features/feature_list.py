"""The epoch's features, in one list: what each declares (see ``steps.Feature``)
and the order their steps wrap the dataset call.

A new feature is a module with its step and one line here. ``_workers.pool`` asks
this list whether a loader's pool may be shared and ``_workers.dataset_copies``
whether its workers copy the dataset; ``_epoch.work`` applies the steps.
"""

from __future__ import annotations

from typing import Any

from .idle_pools import idle_pool_step
from .stats import stats_step
from .steps import EpochContext, EpochSteps, Feature
from .transform_hook import transform_step

__all__ = ["FEATURES", "apply_steps", "copies_allowed", "is_io_dataset", "may_share_pool"]


def is_io_dataset(dataset: Any) -> bool:
    """A ``dataloader_api.io`` dataset: read natively (``_epoch.native_reads``) or by its
    async reference."""
    return getattr(dataset, "native_epoch", None) is not None


FEATURES: tuple[Feature, ...] = (
    Feature("persistent_workers", lambda o: o.workers.persistent_workers, shares_pool=False),
    Feature("iterable dataset", lambda o: o.sampling.is_iterable, shares_pool=False),
    Feature("worker_init_fn", lambda o: o.workers.worker_init_fn is not None, shares_pool=False),
    Feature("items_in_parallel", lambda o: o.execution.items_in_parallel > 1, shares_pool=False),
    Feature(
        "async dataset",
        lambda o: o.items.agetitem is not None,
        shares_pool=False,
        copies_dataset=False,
    ),
    Feature(
        "io dataset",
        lambda o: is_io_dataset(o.sampling.dataset),
        shares_pool=False,
        copies_dataset=False,
    ),
    Feature("share_dataset", lambda o: o.workers.share_dataset, copies_dataset=False),
    # The steps, innermost first: the transform's items are timed by stats, and
    # a taken pool's threads learn their infos before either runs.
    Feature(
        "transform", lambda o: o.items.transform is not None, shares_pool=False, wrap=transform_step
    ),
    Feature("collect_stats", lambda o: o.stats.collect_stats, wrap=stats_step),
    Feature("idle pool", lambda o: True, wrap=idle_pool_step),
)


def may_share_pool(options: Any) -> bool:
    """Whether every feature this loader uses lets its pool go to a later loader."""
    return all(feature.shares_pool for feature in FEATURES if feature.active(options))


def copies_allowed(options: Any) -> bool:
    """Whether every feature this loader uses lets each worker copy the dataset."""
    return all(feature.copies_dataset for feature in FEATURES if feature.active(options))


def apply_steps(steps: EpochSteps, context: EpochContext) -> None:
    """Each active feature's step, in the list's order."""
    for feature in FEATURES:
        if feature.wrap is not None and feature.active(context.options):
            feature.wrap(steps, context)
