"""``ColorJitter``: torchvision's, on PIL's arithmetic (``ImageEnhance`` for
brightness, contrast and saturation; the HSV round trip for hue), and each of
its adjustments with a fixed factor as an op of its own (the policies'
``adjust_brightness`` ... ``adjust_hue``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ._op_base import PilOp, _number, _set

__all__ = ["AdjustBrightness", "AdjustContrast", "AdjustHue", "AdjustSaturation", "ColorJitter"]


@dataclass(frozen=True)
class ColorJitter(PilOp):
    """Brightness, contrast, saturation and hue, each by a factor drawn per item,
    in an order drawn per item, as torchvision's ``ColorJitter`` on a PIL image.

    ``brightness``, ``contrast``, ``saturation``: ``b`` means factors in
    ``[max(0, 1 - b), 1 + b]``, or a ``(low, high)`` pair; ``hue``: ``h`` in
    ``[0, 0.5]`` means shifts in ``[-h, h]``, or a pair within ``[-0.5, 0.5]``.
    A range that is only the identity (``0``) is off and draws nothing. Takes a
    ``uint8`` image of 1 or 3 channels (hue leaves gray images as they are)."""

    brightness: Any = 0
    contrast: Any = 0
    saturation: Any = 0
    hue: Any = 0
    name: ClassVar[str] = "color_jitter"
    random: ClassVar[bool] = True

    def __post_init__(self) -> None:
        for factor in ("brightness", "contrast", "saturation"):
            _set(self, factor, _factor_range(factor, getattr(self, factor)))
        _set(self, "hue", _hue_range(self.hue))


def _pair(name: str, value: Any) -> tuple[float, float]:
    if isinstance(value, Sequence) and not isinstance(value, str) and len(value) == 2:
        return (_number("ColorJitter", name, value[0]), _number("ColorJitter", name, value[1]))
    raise ValueError(
        f"ColorJitter: {name} should be a number >= 0 or a (low, high) pair, "
        f"but got {name}={value!r}"
    )


def _factor_range(name: str, value: Any) -> tuple[float, float] | None:
    """torchvision's ``_check_input`` with centre 1: None when it is off."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if _number("ColorJitter", name, value) < 0:
            raise ValueError(f"ColorJitter: {name} should be >= 0, but got {name}={value!r}")
        low, high = max(1.0 - value, 0.0), 1.0 + value
    else:
        low, high = _pair(name, value)
    if not 0 <= low <= high:
        raise ValueError(
            f"ColorJitter: {name} should give 0 <= low <= high, but got {name}={value!r}"
        )
    return None if low == high == 1.0 else (float(low), float(high))


def _hue_range(value: Any) -> tuple[float, float] | None:
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not 0 <= _number("ColorJitter", "hue", value) <= 0.5:
            raise ValueError(f"ColorJitter: hue should be in [0, 0.5], but got hue={value!r}")
        low, high = -float(value), float(value)
    else:
        low, high = _pair("hue", value)
    if not -0.5 <= low <= high <= 0.5:
        raise ValueError(
            f"ColorJitter: hue should give -0.5 <= low <= high <= 0.5, but got hue={value!r}"
        )
    return None if low == high == 0.0 else (low, high)


@dataclass(frozen=True)
class _Adjust(PilOp):
    """One adjustment of ``ColorJitter`` by ``factor``, as torchvision's
    ``adjust_*`` on a PIL image; a ``uint8`` image of 1 or 3 channels."""

    factor: float
    low: ClassVar[float] = 0.0
    high: ClassVar[float] = math.inf

    def __post_init__(self) -> None:
        factor = _number(type(self).__name__, "factor", self.factor)
        if not self.low <= factor <= self.high:
            allowed = "a number >= 0" if self.high == math.inf else "a number from -0.5 to 0.5"
            raise ValueError(
                f"{type(self).__name__}: factor should be {allowed}, but got factor={self.factor!r}"
            )
        _set(self, "factor", factor)


class AdjustBrightness(_Adjust):
    """torchvision's ``adjust_brightness(image, factor)``: 0 black, 1 the image."""

    name: ClassVar[str] = "adjust_brightness"


class AdjustContrast(_Adjust):
    """torchvision's ``adjust_contrast(image, factor)``: 0 the mean gray, 1 the image."""

    name: ClassVar[str] = "adjust_contrast"


class AdjustSaturation(_Adjust):
    """torchvision's ``adjust_saturation(image, factor)``: 0 gray, 1 the image."""

    name: ClassVar[str] = "adjust_saturation"


class AdjustHue(_Adjust):
    """torchvision's ``adjust_hue(image, factor)``: the hue turned by ``factor``
    (from -0.5 to 0.5) of a full turn; a gray image is left as it is."""

    name: ClassVar[str] = "adjust_hue"
    low: ClassVar[float] = -0.5
    high: ClassVar[float] = 0.5


ADJUST_OPS = (AdjustBrightness, AdjustContrast, AdjustSaturation, AdjustHue)
