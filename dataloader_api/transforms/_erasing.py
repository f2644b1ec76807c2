"""The reference of ``RandomErasing`` (``_op_erasing.py``): torchvision's draws
in its order, on the float CHW image."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ._errors import TransformError
from ._op_erasing import RandomErasing
from ._random import ItemRandom

if TYPE_CHECKING:
    import numpy as np
else:
    from .._common.lazy_import import LazyModule

    np = LazyModule("numpy", globals(), "np")

__all__ = ["erasing_params", "random_erasing"]


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


def random_erasing(op: RandomErasing, image: Any, random: Any, index: Any) -> Any:
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
