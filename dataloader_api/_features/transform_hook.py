"""``DataLoader(transform=...)``: ``f(index, item)`` applied to every item on the
worker threads, between the dataset and the collate function.

A ``transforms.Compose`` is bound to one seed per epoch, derived from the
loader's worker seed stream and the epoch number, so its random ops give the
same items for the same seed on every backend and worker count, and replay
after ``load_state_dict``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from .._sampling.seeds import EpochSeeds, IteratorSeeds, derive_seed
from ..contract import ImageWork

if TYPE_CHECKING:
    from .steps import EpochContext, EpochSteps

__all__ = [
    "check_transform",
    "epoch_transform",
    "image_work",
    "transform_step",
    "transformed_fetch",
    "transformed_stream",
]

Transform = Callable[[Any, Any], Any]
_TRANSFORM_SEED_TAG = 0x7472616E73666F72  # b"transfor": apart from the sampler's stream


def _compose_type() -> Any:
    # Imported only if the user built a pipeline: then the module is loaded.
    module = sys.modules.get("dataloader_api.transforms._pipeline")
    return module.Compose if module is not None else None


def check_transform(transform: Any) -> None:
    if transform is None or callable(transform):
        return
    compose = _compose_type()
    if compose is not None and isinstance(transform, compose):
        return
    hint = ""
    if type(transform).__module__.startswith("dataloader_api.transforms"):
        hint = "; wrap a single op as transforms.Compose([op])"
    raise TypeError(
        "transform should be None, a callable f(index, item) or a "
        f"dataloader_api.transforms.Compose, but got transform={transform!r}{hint}"
    )


def epoch_transform(
    transform: Any, seeds: EpochSeeds | IteratorSeeds, epoch: int
) -> Transform | None:
    """The ``f(index, item)`` of epoch number ``epoch`` (a pipeline bound to its seed)."""
    compose = _compose_type()
    if compose is None or not isinstance(transform, compose):
        return transform  # type: ignore[no-any-return]
    base = seeds.current if isinstance(seeds, IteratorSeeds) else seeds.base_seed
    return transform.bind(derive_seed(base, _TRANSFORM_SEED_TAG, epoch))  # type: ignore[no-any-return]


def transformed_fetch(
    fetch: Callable[[Any], Any],
    transform: Transform,
    batched: bool,
    indices_of: Callable[[Any], Any] = lambda indices: indices,
) -> Callable[[Any], Any]:
    """``fetch`` whose items went through ``transform`` (where ``fetch`` runs: a
    worker); ``indices_of(argument)``: the indices of what ``fetch`` receives."""
    if not batched:
        return lambda argument: transform(indices_of(argument), fetch(argument))

    def fetch_transformed(argument: Any) -> list[Any]:
        items = fetch(argument)
        indices = indices_of(argument)
        if len(items) != len(indices):
            raise ValueError(
                f"__getitems__ returned {len(items)} items for {len(indices)} indices, so "
                "transform= cannot pair them with their indices"
            )
        return [transform(index, item) for index, item in zip(indices, items, strict=True)]

    return fetch_transformed


def transform_step(steps: EpochSteps, context: EpochContext) -> None:
    """The epoch feature ``transform=``: items go through the bound transform; on
    workers, a pipeline a backend may run natively (``MapWork.images``)."""
    transform, options, recorder = context.transform, context.options, context.recorder
    if transform is None:
        return
    batched = options.sampling.auto_collation
    if context.infos is not None and batched and steps.getitem is None:
        raw = recorder.timed_fetch(steps.fetch, True) if recorder is not None else steps.fetch
        collate = options.items.collate_fn if recorder is None else None
        steps.images = image_work(transform, raw, collate)
    steps.fetch = transformed_fetch(steps.fetch, transform, batched, context.indices_of)
    if steps.getitem is not None:
        steps.getitem = transformed_fetch(steps.getitem, transform, batched=False)


def image_work(
    transform: Transform | None, fetch: Callable[[Any], Any], collate: Callable[[Any], Any] | None
) -> ImageWork | None:
    """``MapWork.images`` for an epoch whose transform is a bound pipeline;
    ``collate``: the loader's, when a backend may replace it (no stats taken)."""
    module = sys.modules.get("dataloader_api.transforms._pipeline")
    if module is None or not isinstance(transform, module.BoundPipeline):
        return None
    stack = None
    images = sys.modules.get("dataloader_api.transforms._collate_images")
    stackable = images is not None and isinstance(collate, images.ImageCollate)
    if stackable and collate.on == transform.pipeline.on:  # type: ignore[union-attr]
        stack = collate.with_stacked  # type: ignore[union-attr]
    return ImageWork(
        fetch=fetch,
        pipeline=transform.pipeline.to_dict(),
        epoch_seed=transform.epoch_seed,
        image_of=transform.image_of,
        put=transform.put,
        apply=transform,
        stack=stack,
    )


def transformed_stream(items: Iterator[Any], transform: Transform) -> Iterator[Any]:
    """An iterable worker's items through ``transform``; the index is the item's
    position in that worker's stream this epoch (from 0, also after a resume)."""
    for position, item in enumerate(items):
        yield transform(position, item)
