"""``GaussianBlur``: torchvision's, on a ``uint8`` image (the SimCLR and BYOL
recipes blur the PIL image before ``ToTensor``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ._op_base import PilOp, _number, _set, _side

__all__ = ["GaussianBlur"]


@dataclass(frozen=True)
class GaussianBlur(PilOp):
    """A Gaussian blur with a ``sigma`` drawn per item, as torchvision's
    ``GaussianBlur(kernel_size, sigma)``.

    ``kernel_size``: an odd int, or an ``(x, y)`` pair of them (torchvision's
    order: width first). ``sigma``: a number > 0, or a ``(low, high)`` pair
    with ``0 < low <= high`` from which each item draws one, used along both
    axes. The image's edges are mirrored (torchvision's ``reflect``), so it
    must be larger than half the kernel along each axis. Takes a ``uint8``
    image; the result is rounded to the nearest integer, ties to even."""

    kernel_size: Any
    sigma: Any = (0.1, 2.0)
    name: ClassVar[str] = "gaussian_blur"
    random: ClassVar[bool] = True

    def __post_init__(self) -> None:
        _set(self, "kernel_size", _kernel_size(self.kernel_size))
        _set(self, "sigma", _sigma(self.sigma))


def _kernel_size(value: Any) -> tuple[int, int]:
    pair = value if isinstance(value, Sequence) and not isinstance(value, str) else (value, value)
    if len(pair) == 2 and all(_side(v) and v % 2 == 1 for v in pair):
        return (pair[0], pair[1])
    raise ValueError(
        "GaussianBlur: kernel_size should be an odd int from 1 to 2**31 - 1 or an (x, y) pair "
        f"of them, but got kernel_size={value!r}"
    )


def _sigma(value: Any) -> tuple[float, float]:
    if isinstance(value, Sequence) and not isinstance(value, str) and len(value) == 2:
        low, high = (_number("GaussianBlur", "sigma", v) for v in value)
    else:
        low = high = _number("GaussianBlur", "sigma", value)
    if not 0 < low <= high:
        raise ValueError(
            "GaussianBlur: sigma should be a number > 0 or a (low, high) pair with "
            f"0 < low <= high, but got sigma={value!r}"
        )
    return (low, high)
