"""``LoaderArguments``: the arguments of ``DataLoader(...)`` as given, by name, unchecked.

The one place after the signature that lists them (a test holds the two equal:
names, order). ``DataLoader.__init__`` passes each one by name, so static
tracing and mypy follow every argument to the check that reads it; each
concern's check (``workers``, ``sampling``, ``items``) reads its own fields.
No defaults here: the signature's are torch's, and the only ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._features.stats import EpochStats

__all__ = ["LoaderArguments"]


@dataclass(frozen=True)
class LoaderArguments:
    """``DataLoader``'s arguments in torch's order, then ours; as the user gave them."""

    dataset: Any
    batch_size: int | None
    shuffle: bool | None
    sampler: Any
    batch_sampler: Any
    num_workers: int
    collate_fn: Callable[[Any], Any] | None
    pin_memory: bool
    drop_last: bool
    timeout: float
    worker_init_fn: Callable[[int], None] | None
    multiprocessing_context: Any
    generator: Any
    prefetch_factor: int | None
    persistent_workers: bool
    pin_memory_device: str
    in_order: bool
    backend: str | None
    seed: int | None
    distributed: bool | None
    items_in_parallel: int
    max_concurrency: int | None
    event_loop: str
    epoch_summary: bool | Callable[[EpochStats], None]
    collect_stats: bool
    transform: Callable[[Any, Any], Any] | Any
    share_dataset: bool

    def by_name(self) -> dict[str, Any]:
        """The arguments as keywords, to build a loader again (``_sharded_copy``)."""
        return {field.name: getattr(self, field.name) for field in fields(self)}
