"""The loader's arguments, checked once into a frozen :class:`LoaderOptions`.

Each concern is checked by its own function into its own frozen group
(``workers``, ``sampling``, ``items``), in the
order torch checks them (its tests match the first error); ``build_options``
runs them and ``LoaderOptions`` composes the groups. The rest of the package
reads the groups and never re-validates or re-reads an argument. Derived
choices (the sampler, the batch sampler, the collate function, the backend)
are made there too, so an epoch only executes them.
"""

from __future__ import annotations

from dataclasses import dataclass

from .arguments import LoaderArguments
from .items import ItemOptions, StatsOptions, check_items, check_stats
from .sampling import SamplingOptions, check_sampling, is_iterable_dataset
from .workers import ExecutionOptions, WorkerOptions, check_execution, check_workers

__all__ = ["LoaderArguments", "LoaderOptions", "build_options", "is_iterable_dataset"]


@dataclass(frozen=True, slots=True)
class LoaderOptions:
    """What ``DataLoader(...)`` was asked for, checked, with the choices it implies."""

    workers: WorkerOptions
    sampling: SamplingOptions
    execution: ExecutionOptions
    items: ItemOptions
    stats: StatsOptions


def build_options(arguments: LoaderArguments) -> LoaderOptions:
    """Check every argument of ``DataLoader(...)`` (same rules and
    messages as torch where torch has the argument), and make the choices they imply."""
    workers = check_workers(arguments)
    sampling = check_sampling(arguments)
    batched_map = sampling.auto_collation and not sampling.is_iterable
    execution = check_execution(arguments, workers, sampling.dataset, batched_map)
    items = check_items(arguments, sampling, execution.items_in_parallel)
    return LoaderOptions(workers, sampling, execution, items, check_stats(arguments))
