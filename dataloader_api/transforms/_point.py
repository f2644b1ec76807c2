"""The references of the per-pixel ops on ``uint8`` images drawn with a
probability (``RandomGrayscale``, ``RandomSolarize``): PIL's arithmetic in
integers, which the native port equals bit for bit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._errors import TransformError
from ._op_apply import RandomGrayscale, RandomSolarize
from ._op_base import Op
from ._random import ItemRandom

if TYPE_CHECKING:
    import numpy as np
else:
    from .._common.lazy_import import LazyModule

    np = LazyModule("numpy", globals(), "np")

__all__ = ["luma", "random_grayscale", "random_solarize"]


def luma(rgb: Any) -> Any:
    """Pillow's ``convert("L")`` of an RGB image, (H, W, 1): ITU-R 601-2 in 16-bit fixed point."""
    wide = rgb[:, :, :3].astype(np.uint32)
    gray = wide[:, :, 0] * 19595 + wide[:, :, 1] * 38470 + wide[:, :, 2] * 7471 + 0x8000
    return (gray >> 16).astype(np.uint8)[:, :, None]


def _one_or_three(op: Op, image: Any, index: Any) -> int:
    channels: int = image.shape[2]
    if channels not in (1, 3):
        raise TransformError(
            index,
            f"{op!r} takes an image of 1 or 3 channels (PIL's L or RGB), not {channels}: "
            "put ToRGB() or ToGray() before it",
        )
    return channels


def random_grayscale(op: RandomGrayscale, image: Any, random: ItemRandom, index: Any) -> Any:
    channels = _one_or_three(op, image, index)
    if random.uniform() >= op.p or channels == 1:
        return image
    return np.repeat(luma(image), 3, axis=2)


def random_solarize(op: RandomSolarize, image: Any, random: ItemRandom, index: Any) -> Any:
    _one_or_three(op, image, index)
    if random.uniform() >= op.p:
        return image
    values = np.arange(256)
    table = np.where(values < op.threshold, values, 255 - values).astype(np.uint8)
    return table[image]
