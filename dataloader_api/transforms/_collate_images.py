"""``ImageCollate``: a batch's images copied into one contiguous array; the other
parts of each item batched by ``default_collate``.

The batch is a NumPy array: the buffer protocol, ``__array_interface__`` and
``__dlpack__`` share its memory, so ``torch.from_dlpack(batch)`` and
``torch.as_tensor(batch)`` do not copy it. With a pipeline on the rust
backend (``ImageWork.stack``), the backend lays the batch's images out in one
native buffer itself, without the interpreter, and this only collates the
other parts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._collate import default_collate

if TYPE_CHECKING:
    import numpy as np
else:
    from .._common.lazy_import import LazyModule

    np = LazyModule("numpy", globals(), "np")

__all__ = ["ImageCollate", "stack_images"]


def stack_images(images: list[Any]) -> Any:
    """One C-contiguous array of shape ``(len(images), *image.shape)``."""
    if not images:
        raise ValueError("ImageCollate: the batch is empty")
    for position, image in enumerate(images):
        if not isinstance(image, np.ndarray):
            raise TypeError(
                f"ImageCollate: image {position} of the batch is a {type(image).__name__}, not "
                "a NumPy array; it stacks the arrays a transforms pipeline (transform=) made"
            )
    first = images[0]
    batch = np.empty((len(images), *first.shape), first.dtype)
    for position, image in enumerate(images):
        shape, dtype = getattr(image, "shape", None), getattr(image, "dtype", None)
        if shape != first.shape or dtype != first.dtype:
            raise ValueError(
                f"ImageCollate: image {position} of the batch is {dtype} of shape {shape}, "
                f"image 0 is {first.dtype} of shape {first.shape}; make them equal "
                f"({_fix(first.shape, image.shape, first.dtype, dtype)})"
            )
        batch[position] = image
    return batch


def _fix(a: tuple[int, ...], b: tuple[int, ...], dtype_a: Any, dtype_b: Any) -> str:
    """What in the pipeline makes two images' shapes and dtypes equal."""
    if a == b:
        return "the same ops for every item: ToFloat() gives float32 to all"
    channels = {1, 3, 4}
    differing = [(x, y) for x, y in zip(a, b, strict=False) if x != y]
    if len(a) != len(b) or (len(differing) == 1 and set(differing[0]) <= channels):
        return "a gray or RGBA image among RGB ones: ToRGB() in the pipeline gives 3 channels"
    return "e.g. RandomResizedCrop, CenterCrop or PadTo in the pipeline"


class ImageCollate:
    """A ``collate_fn`` for items holding images. ``on`` says where the image is,
    as in ``Compose``: ``None`` (the item is the image), a tuple position or a
    mapping key."""

    def __init__(self, on: int | str | None = None) -> None:
        if on is not None and (isinstance(on, bool) or not isinstance(on, (int, str))):
            raise TypeError(
                "ImageCollate: on should be None, an int (tuple position) or a str (mapping "
                f"key), but got on={on!r}"
            )
        self.on = on

    def __repr__(self) -> str:
        return f"ImageCollate(on={self.on!r})"

    def __call__(self, batch: list[Any]) -> Any:
        return self.with_stacked(batch, None)

    def with_stacked(self, batch: list[Any], stacked: Any) -> Any:
        """The batch, with ``stacked`` as its images when given (a backend that
        stacked them itself: ``ImageWork.stack``), else the items' images stacked."""
        on = self.on

        def images(column: list[Any]) -> Any:
            return stack_images(column) if stacked is None else stacked

        if on is None:
            return images(batch)
        first = batch[0]
        if isinstance(first, Mapping):
            rest = default_collate([{k: v for k, v in item.items() if k != on} for item in batch])
            return {**rest, on: images([item[on] for item in batch])}
        if not isinstance(first, (tuple, list)) or not -len(first) <= on < len(first):  # type: ignore[operator]
            raise TypeError(
                f"ImageCollate(on={on!r}) needs items with an image at position {on!r}, "
                f"but the batch's first item is {type(first).__name__}"
            )
        width = len(first)
        position = on % width
        columns = [list(parts) for parts in zip(*batch, strict=True)]
        out = [
            images(column) if i == position else default_collate(column)
            for i, column in enumerate(columns)
        ]
        return tuple(out) if isinstance(first, tuple) else out
