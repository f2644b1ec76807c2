"""What happens to the items (``ItemOptions``: collation, pinning, the transform,
an async dataset's event loop) and what the loader measures (``StatsOptions``);
each checked once."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import _collate
from .._common.async_detect import async_getitem
from .._features.stats import EpochStats
from .._features.transform_hook import check_transform
from .arguments import LoaderArguments
from .checks import check_async, check_bool, check_callable
from .sampling import SamplingOptions

__all__ = ["ItemOptions", "StatsOptions", "check_items", "check_stats"]


@dataclass(frozen=True, slots=True)
class ItemOptions:
    """How items become the batches the user gets."""

    collate_fn: Callable[[Any], Any]
    pin_memory: bool
    pin_memory_device: str
    # f(index, item) on the workers, or a transforms.Compose (bound per epoch).
    transform: Any
    # The dataset's coroutine item getter, for async map-style datasets.
    agetitem: Callable[[Any], Any] | None
    max_concurrency: int | None
    event_loop: str

    @property
    def collate_is_default(self) -> bool:
        return self.collate_fn is _collate.default_collate


def check_items(
    arguments: LoaderArguments, sampling: SamplingOptions, items_in_parallel: int
) -> ItemOptions:
    collate_fn, device = arguments.collate_fn, arguments.pin_memory_device
    pin_memory = bool(arguments.pin_memory)  # torch takes any truthy value
    check_callable("collate_fn", collate_fn)
    if not isinstance(device, str):
        raise TypeError(f"pin_memory_device should be a str, but got pin_memory_device={device!r}")
    if device and not pin_memory:
        raise ValueError(f"pin_memory_device={device!r} only applies with pin_memory=True")
    if collate_fn is None:
        batched = sampling.auto_collation
        collate_fn = _collate.default_collate if batched else _collate.default_convert
    transform = arguments.transform
    check_transform(transform)
    dataset = sampling.dataset
    agetitem = None if sampling.is_iterable else async_getitem(dataset)
    max_concurrency, event_loop = arguments.max_concurrency, arguments.event_loop
    check_async(dataset, agetitem, items_in_parallel, max_concurrency, event_loop)
    return ItemOptions(
        collate_fn=collate_fn,
        pin_memory=pin_memory,
        pin_memory_device=device,
        transform=transform,
        agetitem=agetitem,
        max_concurrency=max_concurrency,
        event_loop=event_loop,
    )


@dataclass(frozen=True, slots=True)
class StatsOptions:
    """Per-epoch figures: collected (``collect_stats``), and printed or handed to a
    callable at each epoch's end (``epoch_summary``)."""

    epoch_summary: bool | Callable[[EpochStats], None]
    collect_stats: bool


def check_stats(arguments: LoaderArguments) -> StatsOptions:
    epoch_summary = arguments.epoch_summary
    if not isinstance(epoch_summary, bool) and not callable(epoch_summary):
        raise TypeError(
            "epoch_summary should be a bool or a callable taking EpochStats, but got "
            f"epoch_summary={epoch_summary!r}"
        )
    # Timing every fetch and collate costs about 2 us per batch: only on request.
    collect = check_bool("collect_stats", arguments.collect_stats) or bool(epoch_summary)
    return StatsOptions(epoch_summary, collect)
