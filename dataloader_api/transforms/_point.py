"""The references of the per-pixel ops on ``uint8`` images drawn with a
probability (``RandomGrayscale`` and the lookup tables of ``RandomSolarize``,
``RandomPosterize``, ``RandomAutocontrast``, ``RandomEqualize``): PIL's
arithmetic, ``ImageOps``' loops written out, which the native port equals bit
for bit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._errors import TransformError
from ._op_base import Op
from ._op_point import RandomAdjustSharpness, RandomGrayscale
from ._random import ItemRandom

if TYPE_CHECKING:
    import numpy as np
else:
    from .._common.lazy_import import LazyModule

    np = LazyModule("numpy", globals(), "np")

__all__ = ["luma", "random_grayscale", "random_lookup", "random_sharpness"]


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


def random_sharpness(op: RandomAdjustSharpness, image: Any, random: ItemRandom, index: Any) -> Any:
    """Pillow's own ``ImageEnhance.Sharpness`` (the native port follows its
    ``SMOOTH`` filter and ``blend`` in float32)."""
    channels = _one_or_three(op, image, index)
    if random.uniform() >= op.p:
        return image
    from PIL import Image, ImageEnhance

    picture = Image.fromarray(np.ascontiguousarray(image[:, :, 0] if channels == 1 else image))
    out = np.asarray(ImageEnhance.Sharpness(picture).enhance(op.sharpness_factor))
    return out[:, :, None] if out.ndim == 2 else out


def random_lookup(op: Op, image: Any, random: ItemRandom, index: Any) -> Any:
    """A table per channel (``ImageOps._lut``), made from the op and the image."""
    channels = _one_or_three(op, image, index)
    if random.uniform() >= op.p:  # type: ignore[attr-defined]
        return image
    out = np.empty_like(image)
    for c in range(channels):
        band = image[:, :, c]
        table = _TABLES[op.name](op, np.bincount(band.ravel(), minlength=256).tolist())
        out[:, :, c] = np.clip(table, 0, 255).astype(np.uint8)[band]  # as PIL's point()
    return out


def _solarize(op: Any, histogram: list[int]) -> list[int]:
    return [i if i < op.threshold else 255 - i for i in range(256)]


def _posterize(op: Any, histogram: list[int]) -> list[int]:
    mask = ~(2 ** (8 - op.bits) - 1)
    return [i & mask for i in range(256)]


def _autocontrast(op: Any, h: list[int]) -> list[int]:
    """``ImageOps.autocontrast(image)`` (no cutoff) for one band."""
    lo = next((i for i in range(256) if h[i]), 255)
    hi = next((i for i in range(255, -1, -1) if h[i]), 0)
    if hi <= lo:
        return list(range(256))
    scale = 255.0 / (hi - lo)
    offset = -lo * scale
    return [min(max(int(i * scale + offset), 0), 255) for i in range(256)]


def _equalize(op: Any, h: list[int]) -> list[int]:
    """``ImageOps.equalize(image)`` for one band."""
    histo = [count for count in h if count]
    step = (sum(histo) - histo[-1]) // 255 if len(histo) > 1 else 0
    if not step:
        return list(range(256))
    table, n = [], step // 2
    for i in range(256):
        table.append(n // step)
        n += h[i]
    return table


_TABLES = {
    "random_solarize": _solarize,
    "random_posterize": _posterize,
    "random_autocontrast": _autocontrast,
    "random_equalize": _equalize,
}
