"""The reference execution of every op, with Pillow and NumPy.

Every backend without a native pipeline runs this on its worker threads; a
native one must match it (bit for bit, or within the tolerances of
``TOLERANCES``). Each op's reference lives with its concern (``_geometry``,
``_color``, ``_point``, ``_blur``, ``_erasing``, ``_decode``); this module
holds the conversions, ``RandomApply`` (one draw, then its ops), the table of
every op's reference by name (``_RUN``) and the run over a pipeline.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._blur import gaussian_blur
from ._color import ADJUSTMENTS, adjust, color_jitter
from ._decode import decode
from ._erasing import erasing_params, random_erasing
from ._errors import TransformError
from ._geometry import GEOMETRY, _resample, crop_box, random_crop_box, resized_size
from ._op_base import Op
from ._op_convert import Normalize
from ._op_geometry import RandomResizedCrop
from ._point import luma, random_grayscale, random_lookup, random_sharpness
from ._random import ItemRandom

if TYPE_CHECKING:
    import numpy as np
else:
    from .._common.lazy_import import LazyModule

    np = LazyModule("numpy", globals(), "np")

# crop_box, erasing_params, random_crop_box and resized_size live with their
# ops' references (_geometry, _erasing); the tests read them from here too.
__all__ = [
    "TOLERANCES",
    "crop_box",
    "erasing_params",
    "random_crop_box",
    "resized_size",
    "run_ops",
]

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
        elif op.name in ("random_choice", "random_order"):  # the draws, then the ops'
            value, chw = _run_each(_drawn(op, random), value, random, index, chw)
        else:
            value = _RUN[op.name](op, value, random, index)
            chw = (chw or op.name == "to_chw") and op.name != "to_hwc"
    return value, chw


def _drawn(op: Any, random: ItemRandom) -> tuple[Op, ...]:
    """The ops ``RandomChoice`` (one, by weight) or ``RandomOrder`` (all, shuffled)
    runs for this item."""
    if op.name == "random_choice":
        return (op.transforms[op.choose(random.uniform())],)
    return tuple(op.transforms[i] for i in op.order(random.below))


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
    **GEOMETRY,
    "random_erasing": random_erasing,
    "color_jitter": color_jitter,
    **dict.fromkeys(ADJUSTMENTS, adjust),
    "gaussian_blur": gaussian_blur,
    "random_grayscale": random_grayscale,
    "random_solarize": random_lookup,
    "random_posterize": random_lookup,
    "random_autocontrast": random_lookup,
    "random_equalize": random_lookup,
    "random_adjust_sharpness": random_sharpness,
    "to_float": lambda op, image, random, index: image.astype(np.float32) / np.float32(255),
    "to_chw": lambda op, image, random, index: np.ascontiguousarray(image.transpose(2, 0, 1)),
    "to_hwc": lambda op, image, random, index: np.ascontiguousarray(image.transpose(1, 2, 0)),
}
