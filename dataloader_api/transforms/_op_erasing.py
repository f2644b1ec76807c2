"""``RandomErasing``: torchvision's, on the float CHW image (after ``ToCHW``,
usually after ``Normalize``), with the item's random numbers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from ._op_base import Kind, Op, _number, _range, _set

__all__ = ["RandomErasing"]


@dataclass(frozen=True)
class RandomErasing(Op):
    """With probability ``p``, a box of random area (``scale`` of the image) and
    aspect ratio (log-uniform in ``ratio``) set to ``value``: a number, one per
    channel, or ``"random"`` (standard normal noise, one draw per erased value).
    Ten boxes that do not fit leave the image as it is, as torchvision's."""

    p: float = 0.5
    scale: Sequence[float] = (0.02, 0.33)
    ratio: Sequence[float] = (0.3, 3.3)
    value: float | Sequence[float] | str = 0
    name: ClassVar[str] = "random_erasing"
    random: ClassVar[bool] = True
    spatial: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if not 0.0 <= _number("RandomErasing", "p", self.p) <= 1.0:
            raise ValueError(f"RandomErasing: p should be in [0, 1], but got p={self.p!r}")
        scale = _range("RandomErasing", "scale", self.scale, positive=False)
        if scale[0] < 0 or scale[1] > 1:
            raise ValueError(
                "RandomErasing: scale should be a (low, high) pair within [0, 1], "
                f"but got scale={self.scale!r}"
            )
        _set(self, "scale", scale)
        _set(self, "ratio", _range("RandomErasing", "ratio", self.ratio, positive=True))
        _set(self, "value", _value(self.value))

    def output_kind(self, kind: Kind) -> Kind:
        super().output_kind(kind)
        if kind != ("float32", "CHW"):
            raise TypeError(
                f"{self!r} needs a float32 CHW image, as torchvision's: put it after "
                "ToFloat() and ToCHW()"
            )
        return kind


def _value(value: object) -> tuple[float, ...] | str:
    if value == "random":
        return "random"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (_number("RandomErasing", "value", value),)
    if isinstance(value, (tuple, list)) and value:
        return tuple(_number("RandomErasing", "value", v) for v in value)
    raise ValueError(
        "RandomErasing: value should be a number, a non-empty sequence of them (one per "
        f"channel) or 'random', but got value={value!r}"
    )
