"""The reference of ``GaussianBlur``: a separable blur in ``float32``, a
horizontal pass then a vertical one, each summing its taps in order, so the
native port gives the same bits. torchvision convolves with the 2-D kernel
(another summing order): the two differ by at most 1 after rounding."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ._errors import TransformError
from ._op_blur import GaussianBlur
from ._random import ItemRandom

if TYPE_CHECKING:
    import numpy as np
else:
    from .._common.lazy_import import LazyModule

    np = LazyModule("numpy", globals(), "np")

__all__ = ["blur_sigma", "gaussian_blur", "gaussian_kernel"]


def blur_sigma(op: GaussianBlur, random: ItemRandom) -> float:
    """The item's sigma: one uniform draw, as torchvision's ``GaussianBlur``."""
    return random.uniform_between(*op.sigma)


def gaussian_kernel(size: int, sigma: float) -> Any:
    """``exp(-x**2 / (2 sigma**2))`` at ``x`` = -(size-1)/2 .. (size-1)/2, divided by
    its sum, in double precision (summed in order), then as float32."""
    half = (size - 1) / 2
    weights = []
    for i in range(size):
        t = (i - half) / sigma
        weights.append(math.exp(-0.5 * (t * t)))
    total = 0.0
    for weight in weights:  # not sum(): 3.12's compensated sum differs from a loop
        total += weight
    return np.array([weight / total for weight in weights], np.float32)


def gaussian_blur(op: GaussianBlur, image: Any, random: ItemRandom, index: Any) -> Any:
    sigma = blur_sigma(op, random)
    (size_x, size_y), (height, width) = op.kernel_size, image.shape[:2]
    reach_x, reach_y = size_x // 2, size_y // 2
    if reach_x >= max(width, 1) or reach_y >= max(height, 1):
        raise TransformError(
            index,
            f"{op!r} mirrors the image's edges, {reach_y} rows and {reach_x} columns, so "
            f"it needs an image larger than that, not {height}x{width} (as torchvision)",
        )
    padded = np.pad(image, ((reach_y, reach_y), (reach_x, reach_x), (0, 0)), mode="reflect")
    padded = padded.astype(np.float32)
    across = _pass(padded, gaussian_kernel(size_x, sigma), width, axis=1)
    down = _pass(across, gaussian_kernel(size_y, sigma), height, axis=0)
    return np.clip(np.rint(down), 0, 255).astype(np.uint8)


def _pass(image: Any, kernel: Any, length: int, axis: int) -> Any:
    """Each output pixel's taps summed in order: ``k[0]*x[0] + k[1]*x[1] + ...``."""

    def taps(i: int) -> Any:
        return image[:, i : i + length] if axis == 1 else image[i : i + length]

    total = kernel[0] * taps(0)
    for i in range(1, len(kernel)):
        total = total + kernel[i] * taps(i)
    return total
