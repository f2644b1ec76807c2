"""The reference of ``ColorJitter``: torchvision's order and factors drawn from
the item's numbers, then PIL's own arithmetic (``ImageEnhance``, the HSV round
trip), which the native port equals bit for bit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._errors import TransformError
from ._op_base import Op
from ._op_color import ColorJitter
from ._random import ItemRandom

if TYPE_CHECKING:
    import numpy as np
else:
    from .._common.lazy_import import LazyModule

    np = LazyModule("numpy", globals(), "np")

__all__ = ["ADJUSTMENTS", "adjust", "color_jitter", "jitter_params"]

BRIGHTNESS, CONTRAST, SATURATION, HUE = range(4)


def jitter_params(op: ColorJitter, random: ItemRandom) -> tuple[list[int], list[float | None]]:
    """torchvision's ``ColorJitter`` draws: the order of the four adjustments (a
    shuffle, as ``randperm(4)``), then each factor that is on, in that order."""
    order = [BRIGHTNESS, CONTRAST, SATURATION, HUE]
    for i in range(3, 0, -1):
        j = random.below(i + 1)
        order[i], order[j] = order[j], order[i]
    ranges = (op.brightness, op.contrast, op.saturation, op.hue)
    factors = [None if r is None else random.uniform_between(*r) for r in ranges]
    return order, factors


def color_jitter(op: ColorJitter, image: Any, random: ItemRandom, index: Any) -> Any:
    order, factors = jitter_params(op, random)
    steps = [(step, factors[step]) for step in order if factors[step] is not None]
    return _enhance(op, image, steps, index)  # type: ignore[arg-type]


def adjust(op: Op, image: Any, random: ItemRandom | None, index: Any) -> Any:
    """One of the adjustments with the op's factor (``AdjustBrightness`` ...)."""
    step = ADJUSTMENTS.index(op.name)
    return _enhance(op, image, [(step, op.factor)], index)  # type: ignore[attr-defined]


ADJUSTMENTS = ("adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_hue")


def _enhance(op: Op, image: Any, steps: list[tuple[int, float]], index: Any) -> Any:
    channels = image.shape[2]
    if channels not in (1, 3):
        raise TransformError(
            index,
            f"{op!r} takes an image of 1 or 3 channels, not {channels}: put ToRGB() "
            "or ToGray() before it",
        )
    from PIL import Image, ImageEnhance

    pixels = np.ascontiguousarray(image[:, :, 0] if channels == 1 else image)
    picture = Image.fromarray(pixels, "L" if channels == 1 else "RGB")
    enhancers = {
        BRIGHTNESS: ImageEnhance.Brightness,
        CONTRAST: ImageEnhance.Contrast,
        SATURATION: ImageEnhance.Color,
    }
    for step, factor in steps:
        if step == HUE:
            picture = _shift_hue(picture, factor)
        else:
            picture = enhancers[step](picture).enhance(factor)
    out = np.asarray(picture)
    return out[:, :, None] if out.ndim == 2 else out


def _shift_hue(picture: Any, factor: float) -> Any:
    """torchvision's ``adjust_hue`` on PIL: the H band of PIL's HSV plus
    ``int(factor * 255)``, wrapping; a gray image is left as it is."""
    from PIL import Image

    if picture.mode == "L":
        return picture
    hue, saturation, value = picture.convert("HSV").split()
    shifted = np.asarray(hue, np.uint8) + np.uint8(int(factor * 255) % 256)
    merged = Image.merge("HSV", (Image.fromarray(shifted, "L"), saturation, value))
    return merged.convert("RGB")
