"""The reference execution of every op, with Pillow and NumPy.

Every backend without a native pipeline runs this on its worker threads; a
native one must match it (bit for bit, or within the tolerances of
``TOLERANCES``). Geometry follows torchvision where torchvision defines it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ._blur import gaussian_blur
from ._color import ADJUSTMENTS, adjust, color_jitter
from ._decode import decode
from ._errors import TransformError
from ._op_base import Op
from ._op_convert import Normalize
from ._op_erasing import RandomErasing
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
from ._point import luma, random_grayscale, random_lookup, random_sharpness
from ._random import ItemRandom

if TYPE_CHECKING:
    import numpy as np
else:
    from .._common.lazy_import import LazyModule

    np = LazyModule("numpy", globals(), "np")

__all__ = ["TOLERANCES", "erasing_params", "random_crop_box", "resized_size", "run_ops"]

# The largest difference a native op may have from this reference, by op name
# (absent: none at all). Resampling rounds in fixed point natively and in
# double precision here; normalize may fuse its multiply-add.
TOLERANCES = {"resize": 1, "random_resized_crop": 1, "normalize": 1e-5}


def run_ops(ops: tuple[Op, ...], image: Any, random: ItemRandom | None, index: Any) -> Any:
    """``image`` through ``ops``; errors name the item's ``index``."""
    value = _as_input(image, ops, index)
    chw = False  # the layout, as Compose checked it: Normalize needs the channel axis
    if ops and ops[0].name == "decode" and ops[0].draft:  # type: ignore[attr-defined]
        value, done = _decode_drafted(ops, value, random, index)
        ops = ops[done:]
    return _run_each(ops, value, random, index, chw)[0]


def _run_each(ops: tuple[Op, ...], value: Any, random: Any, index: Any, chw: bool) -> Any:
    """``value`` through ``ops``, and whether it is CHW after them."""
    for op in ops:
        if op.name == "normalize":
            value = _normalize(op, value, index, chw)  # type: ignore[arg-type]
        elif op.name == "random_apply":  # torchvision's: one draw, then the ops' own
            if random.uniform() < op.p:  # type: ignore[attr-defined]
                value, chw = _run_each(op.transforms, value, random, index, chw)  # type: ignore[attr-defined]
        else:
            value = _RUN[op.name](op, value, random, index)
            chw = (chw or op.name == "to_chw") and op.name != "to_hwc"
    return value, chw


def _as_input(image: Any, ops: tuple[Op, ...], index: Any) -> Any:
    encoded = bool(ops) and ops[0].name == "decode"
    if encoded:
        if isinstance(image, (bytes, bytearray, memoryview)):
            return image
        raise TransformError(index, f"Decode() takes bytes, but the item is {_what(image)}")
    if type(image).__module__.startswith("PIL."):
        image = np.asarray(image)
    if not isinstance(image, np.ndarray) or image.ndim not in (2, 3):
        raise TransformError(
            index,
            f"the pipeline takes an HWC image array (or a Pillow image), but got {_what(image)}; "
            "for an item holding an image among other parts, pass Compose(..., on=position)",
        )
    if image.dtype not in (np.uint8, np.float32):
        raise TransformError(index, f"images should be uint8 or float32, not {image.dtype}")
    return image[:, :, None] if image.ndim == 2 else image


def _what(value: Any) -> str:
    shape = getattr(value, "shape", None)
    return f"{type(value).__name__}" + (f" of shape {shape}" if shape is not None else "")


def _to_rgb(op: Op, image: Any, random: Any, index: Any) -> Any:
    channels = image.shape[2]
    if channels in (1, 2):
        return np.repeat(image[:, :, :1], 3, axis=2)
    return image[:, :, :3]


def _to_gray(op: Op, image: Any, random: Any, index: Any) -> Any:
    return image[:, :, :1] if image.shape[2] in (1, 2) else luma(image)


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


def dct_scale(box_h: int, box_w: int, out_h: int, out_w: int) -> int:
    """``Decode(draft=True)``'s scale for a box resized to (out_h, out_w): the
    largest of 8, 4 and 2 that keeps the box at least that size, else 1."""
    return next((s for s in (8, 4, 2) if box_h >= s * out_h and box_w >= s * out_w), 1)


def _decode_drafted(ops: tuple[Op, ...], data: Any, random: Any, index: Any) -> tuple[Any, int]:
    """``Decode(draft=True)`` and, when a RandomResizedCrop follows past ToRGB or
    ToGray, the ops up to it: its box drawn from the JPEG's size, the JPEG decoded
    at the scale the box allows, the box scaled. Returns the image and how many ops ran."""
    between = 1
    while between < len(ops) and ops[between].name in ("to_rgb", "to_gray"):
        between += 1
    crop = ops[between] if between < len(ops) else None
    if not isinstance(crop, RandomResizedCrop):
        return decode(ops[0], data, index), 1  # type: ignore[arg-type]
    out_h, out_w = crop.size  # type: ignore[misc]
    drawn: list[tuple[int, ...]] = []

    def scale_for(height: int, width: int) -> int:
        top, left, h, w = crop_box(crop, random, height, width)
        drawn.append((top, left, h, w, dct_scale(h, w, out_h, out_w)))
        return drawn[0][4]

    image = decode(ops[0], data, index, scale_for)  # type: ignore[arg-type]
    if not drawn:  # not a JPEG: the crop draws its box from the whole image
        return image, 1
    for op in ops[1:between]:
        image = _RUN[op.name](op, image, random, index)
    top, left, h, w = (value // drawn[0][4] for value in drawn[0][:4])
    box = image[top : top + h, left : left + w]
    return _resample(box, out_h, out_w, crop.interpolation), between + 1


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


def erasing_params(
    op: RandomErasing, random: ItemRandom, channels: int, height: int, width: int
) -> tuple[int, int, int, int, Any] | None:
    """torchvision's ``RandomErasing`` draws, in its order: (top, left, h, w, the
    box's float32 values), or None (``p`` not drawn, or ten boxes that do not fit)."""
    if random.uniform() >= op.p:
        return None
    log_low, log_high = math.log(op.ratio[0]), math.log(op.ratio[1])
    for _ in range(10):
        area = height * width * random.uniform_between(*op.scale)
        aspect = math.exp(random.uniform_between(log_low, log_high))
        h, w = round(math.sqrt(area * aspect)), round(math.sqrt(area / aspect))
        if not (h < height and w < width):
            continue
        if op.value == "random":
            draws = [random.normal() for _ in range(channels * h * w)]
            value = np.asarray(draws, np.float32).reshape(channels, h, w)
        else:
            value = np.asarray(op.value, np.float32).reshape(-1, 1, 1)
        return random.below(height - h + 1), random.below(width - w + 1), h, w, value
    return None


def _random_erasing(op: RandomErasing, image: Any, random: Any, index: Any) -> Any:
    channels, height, width = image.shape
    if isinstance(op.value, tuple) and len(op.value) not in (1, channels):
        count = len(op.value)
        raise TransformError(index, f"{op!r}: value has {count} numbers for {channels} channels")
    params = erasing_params(op, random, channels, height, width)
    if params is None:
        return image
    top, left, h, w, value = params
    out = image.copy()
    out[:, top : top + h, left : left + w] = value
    return out


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


def _normalize(op: Normalize, image: Any, index: Any, chw: bool) -> Any:
    channel_axis = 0 if chw else 2
    channels = image.shape[channel_axis]
    for name, values in (("mean", op.mean), ("std", op.std)):
        if len(values) not in (1, channels):
            raise TransformError(
                index, f"Normalize: {name} has {len(values)} values for {channels} channels"
            )
    shape = (-1, 1, 1) if channel_axis == 0 else (1, 1, -1)
    mean = np.asarray(op.mean, np.float32).reshape(shape)
    std = np.asarray(op.std, np.float32).reshape(shape)
    return (image - mean) / std


_RUN: dict[str, Callable[..., Any]] = {
    "decode": lambda op, data, random, index: decode(op, data, index),
    "to_rgb": _to_rgb,
    "to_gray": _to_gray,
    "crop": _crop,
    "center_crop": _center_crop,
    "resize": _resize,
    "random_resized_crop": _random_resized_crop,
    "pad": _pad,
    "random_crop": _random_crop,
    "random_erasing": _random_erasing,
    "color_jitter": color_jitter,
    **dict.fromkeys(ADJUSTMENTS, adjust),
    "gaussian_blur": gaussian_blur,
    "random_grayscale": random_grayscale,
    "random_solarize": random_lookup,
    "random_posterize": random_lookup,
    "random_autocontrast": random_lookup,
    "random_equalize": random_lookup,
    "random_adjust_sharpness": random_sharpness,
    "pad_to": _pad_to,
    "hflip": lambda op, image, random, index: np.flip(image, 1),
    "vflip": lambda op, image, random, index: np.flip(image, 0),
    "random_hflip": _random_flip(1),
    "random_vflip": _random_flip(0),
    "rotate90": lambda op, image, random, index: np.rot90(image, op.k, axes=(0, 1)),
    "to_float": lambda op, image, random, index: image.astype(np.float32) / np.float32(255),
    "to_chw": lambda op, image, random, index: np.ascontiguousarray(image.transpose(2, 0, 1)),
    "to_hwc": lambda op, image, random, index: np.ascontiguousarray(image.transpose(1, 2, 0)),
}
