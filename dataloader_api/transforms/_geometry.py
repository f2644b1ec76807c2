"""The reference of the geometry ops (``_op_geometry.py``): crops, resizes
(Pillow's filters, in Pillow 13's pass order), pads, flips and quarter turns,
on HWC arrays. Geometry follows torchvision where torchvision defines it."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ._errors import TransformError
from ._op_base import Op
from ._op_geometry import (
    CenterCrop,
    Crop,
    Pad,
    PadTo,
    RandomCrop,
    RandomHFlip,
    RandomResizedCrop,
    RandomVFlip,
    Resize,
)
from ._random import ItemRandom

if TYPE_CHECKING:
    import numpy as np
else:
    from .._common.lazy_import import LazyModule

    np = LazyModule("numpy", globals(), "np")

__all__ = ["GEOMETRY", "crop_box", "random_crop_box", "resized_size"]


def _crop(op: Crop, image: Any, random: Any, index: Any) -> Any:
    height, width = image.shape[:2]
    if op.top + op.height > height or op.left + op.width > width:
        raise TransformError(index, f"{op!r} does not fit in an image of {height}x{width}")
    return image[op.top : op.top + op.height, op.left : op.left + op.width]


def _center_crop(op: CenterCrop, image: Any, random: Any, index: Any) -> Any:
    crop_h, crop_w = op.size  # type: ignore[misc]
    height, width = image.shape[:2]
    if crop_h > height or crop_w > width:
        pad_h, pad_w = max(crop_h - height, 0), max(crop_w - width, 0)
        image = np.pad(
            image, ((pad_h // 2, (pad_h + 1) // 2), (pad_w // 2, (pad_w + 1) // 2), (0, 0))
        )
        height, width = image.shape[:2]
    top = round((height - crop_h) / 2.0)
    left = round((width - crop_w) / 2.0)
    return image[top : top + crop_h, left : left + crop_w]


def resized_size(size: Sequence[int] | int, height: int, width: int) -> tuple[int, int]:
    """(height, width) after ``Resize(size)``: an int sets the shorter side (torchvision)."""
    if not isinstance(size, int):
        return size[0], size[1]
    if width <= height:
        return int(size * height / width), size
    return size, int(size * width / height)


def _resample(image: Any, height: int, width: int, interpolation: str) -> Any:
    """Pillow's filter and arithmetic, one axis at a time, in Pillow 13's order.

    Each pass rounds to the image's type, so the order moves results
    (bicubic and lanczos overshoot and clip in between). Pillow 13 runs the
    vertical pass first when the height shrinks by more than twice what the
    width does; earlier Pillow always ran the horizontal pass first. Writing
    the rule here keeps the reference one definition on every Pillow.
    """
    if _vertical_first(image.shape[0], image.shape[1], height, width):
        if image.shape[0] != height:
            image = _resample_once(image, height, image.shape[1], interpolation)
        if image.shape[1] != width:
            image = _resample_once(image, height, width, interpolation)
        return image
    if image.shape[1] != width:
        image = _resample_once(image, image.shape[0], width, interpolation)
    if image.shape[0] != height:
        image = _resample_once(image, height, width, interpolation)
    return image


def _vertical_first(height: int, width: int, out_h: int, out_w: int) -> bool:
    """Pillow 13's pass order (``ImagingResampleInner``): the vertical pass
    first when the height shrinks by more than twice the width's shrink."""
    return height - out_h > 0 and height - out_h > (width - out_w) * 2


def _resample_once(image: Any, height: int, width: int, interpolation: str) -> Any:
    from PIL import Image

    resample = getattr(Image.Resampling, interpolation.upper())
    if image.dtype == np.uint8 and image.shape[2] == 3:
        out = Image.fromarray(image, "RGB").resize((width, height), resample, reducing_gap=None)
        return np.asarray(out)
    # One band at a time: no premultiplied alpha, and float32 as Pillow's "F".
    mode = "L" if image.dtype == np.uint8 else "F"
    bands = [
        np.asarray(
            Image.fromarray(np.ascontiguousarray(image[:, :, c]), mode).resize(
                (width, height), resample, reducing_gap=None
            )
        )
        for c in range(image.shape[2])
    ]
    return np.stack(bands, axis=2)


def _resample_from(op: Op, image: Any, index: Any) -> tuple[int, int]:
    """The image's (height, width), which a resize needs to be at least 1x1."""
    height, width = image.shape[:2]
    if height == 0 or width == 0:
        raise TransformError(index, f"{op!r} cannot resize an empty image ({height}x{width})")
    if image.shape[2] == 0:
        raise TransformError(index, f"{op!r} cannot resize an image without channels")
    return height, width


def _resize(op: Resize, image: Any, random: Any, index: Any) -> Any:
    height, width = resized_size(op.size, *_resample_from(op, image, index))
    return _resample(image, height, width, op.interpolation)


def crop_box(op: RandomResizedCrop, random: ItemRandom, height: int, width: int) -> tuple[int, ...]:
    """torchvision's ``RandomResizedCrop.get_params`` with the item's random numbers."""
    area = height * width
    log_low, log_high = math.log(op.ratio[0]), math.log(op.ratio[1])
    for _ in range(10):
        target = area * random.uniform_between(*op.scale)
        aspect = math.exp(random.uniform_between(log_low, log_high))
        w = round(math.sqrt(target * aspect))
        h = round(math.sqrt(target / aspect))
        if 0 < w <= width and 0 < h <= height:
            return random.below(height - h + 1), random.below(width - w + 1), h, w
    in_ratio = width / height
    if in_ratio < op.ratio[0]:
        w, h = width, round(width / op.ratio[0])
    elif in_ratio > op.ratio[1]:
        h, w = height, round(height * op.ratio[1])
    else:
        h, w = height, width
    return (height - h) // 2, (width - w) // 2, h, w


def _random_resized_crop(op: RandomResizedCrop, image: Any, random: Any, index: Any) -> Any:
    top, left, h, w = crop_box(op, random, *_resample_from(op, image, index))
    out_h, out_w = op.size  # type: ignore[misc]
    return _resample(image[top : top + h, left : left + w], out_h, out_w, op.interpolation)


def random_crop_box(
    op: RandomCrop, random: ItemRandom, height: int, width: int
) -> tuple[tuple[int, int, int, int], int, int] | None:
    """torchvision's ``RandomCrop`` parameters: the padding (left, top, right,
    bottom) with ``pad_if_needed``'s, and the crop's top and left in the padded
    image; None when the padded image is smaller than the crop."""
    left, top, right, bottom = op.padding  # type: ignore[misc]
    crop_h, crop_w = op.size  # type: ignore[misc]
    padded_h, padded_w = height + top + bottom, width + left + right
    if op.pad_if_needed and padded_h < crop_h:
        more = crop_h - padded_h
        top, bottom, padded_h = top + more, bottom + more, padded_h + 2 * more
    if op.pad_if_needed and padded_w < crop_w:
        more = crop_w - padded_w
        left, right, padded_w = left + more, right + more, padded_w + 2 * more
    if padded_h < crop_h or padded_w < crop_w:
        return None
    crop_top = random.below(padded_h - crop_h + 1) if padded_h > crop_h else 0
    crop_left = random.below(padded_w - crop_w + 1) if padded_w > crop_w else 0
    return (left, top, right, bottom), crop_top, crop_left


def _random_crop(op: RandomCrop, image: Any, random: Any, index: Any) -> Any:
    height, width = image.shape[:2]
    box = random_crop_box(op, random, height, width)
    if box is None:
        raise TransformError(
            index, f"{op!r} does not fit in an image of {height}x{width} once padded"
        )
    (left, top, right, bottom), crop_top, crop_left = box
    widths = ((top, bottom), (left, right), (0, 0))
    if op.padding_mode == "constant":
        image = np.pad(image, widths, constant_values=image.dtype.type(op.fill))
    elif height and width:
        image = np.pad(image, widths, mode=op.padding_mode)  # type: ignore[call-overload]
    elif top or bottom or left or right:
        raise TransformError(index, f"{op!r} cannot pad an empty image ({height}x{width})")
    crop_h, crop_w = op.size  # type: ignore[misc]
    return image[crop_top : crop_top + crop_h, crop_left : crop_left + crop_w]


def _pad(op: Pad, image: Any, random: Any, index: Any) -> Any:
    widths = ((op.top, op.bottom), (op.left, op.right), (0, 0))
    return np.pad(image, widths, constant_values=image.dtype.type(op.value))


def _pad_to(op: PadTo, image: Any, random: Any, index: Any) -> Any:
    height, width = image.shape[:2]
    if height > op.height or width > op.width:
        raise TransformError(index, f"{op!r}: the image is larger ({height}x{width})")
    widths = ((0, op.height - height), (0, op.width - width), (0, 0))
    return np.pad(image, widths, constant_values=image.dtype.type(op.value))


def _random_flip(axis: int) -> Callable[[Any, Any, ItemRandom, Any], Any]:
    def flip(op: RandomHFlip | RandomVFlip, image: Any, random: ItemRandom, index: Any) -> Any:
        return np.flip(image, axis) if random.uniform() < op.p else image

    return flip


# Each geometry op's reference by its name: (op, image, random, index) -> image.
GEOMETRY: dict[str, Callable[..., Any]] = {
    "crop": _crop,
    "center_crop": _center_crop,
    "resize": _resize,
    "random_resized_crop": _random_resized_crop,
    "random_crop": _random_crop,
    "pad": _pad,
    "pad_to": _pad_to,
    "hflip": lambda op, image, random, index: np.flip(image, 1),
    "vflip": lambda op, image, random, index: np.flip(image, 0),
    "random_hflip": _random_flip(1),
    "random_vflip": _random_flip(0),
    "rotate90": lambda op, image, random, index: np.rot90(image, op.k, axes=(0, 1)),
}
