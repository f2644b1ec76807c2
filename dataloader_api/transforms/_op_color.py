"""``ColorJitter``: torchvision's, on PIL's arithmetic (``ImageEnhance`` for
brightness, contrast and saturation; the HSV round trip for hue)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ._op_base import PilOp, _number, _set

__all__ = ["ColorJitter"]


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
