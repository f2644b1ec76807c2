"""The ops that move pixels: crops, resizes, pads, flips and quarter turns.

Each is a frozen record whose fields are its arguments, checked when built;
``Op.to_dict`` writes those fields, and the native parser reads them by the
same names (``backends/rust/src/images/pipeline_record.rs``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ._op_base import (
    INTERPOLATIONS,
    Kind,
    Op,
    _box_size,
    _fill_fits,
    _int,
    _number,
    _range,
    _set,
    _side,
    _size,
)

__all__ = [
    "PADDING_MODES",
    "CenterCrop",
    "Crop",
    "HFlip",
    "Pad",
    "PadTo",
    "RandomCrop",
    "RandomHFlip",
    "RandomResizedCrop",
    "RandomVFlip",
    "Resize",
    "Rotate90",
    "VFlip",
]


@dataclass(frozen=True)
class Crop(Op):
    """The box at (``top``, ``left``) of ``height`` x ``width``; it must fit in the image."""

    top: int
    left: int
    height: int
    width: int
    name: ClassVar[str] = "crop"

    def __post_init__(self) -> None:
        for field, minimum in (("top", 0), ("left", 0), ("height", 1), ("width", 1)):
            _int("Crop", field, getattr(self, field), minimum)


@dataclass(frozen=True)
class CenterCrop(Op):
    """The centred ``size`` box (offsets rounded half to even, as torchvision);
    where the image is smaller, it is padded with zeros first, as torchvision does."""

    size: Sequence[int] | int
    name: ClassVar[str] = "center_crop"

    def __post_init__(self) -> None:
        _set(self, "size", _box_size("CenterCrop", "size", self.size))


@dataclass(frozen=True)
class Resize(Op):
    """To ``size``: an int sets the shorter side (aspect kept, the longer side
    truncated, as torchvision), a pair sets (height, width). Filters, passes
    and their order are Pillow 13's (antialiased when downscaling); each
    channel is resized on its own (alpha is not premultiplied)."""

    size: Sequence[int] | int
    interpolation: str = "bilinear"
    name: ClassVar[str] = "resize"

    def __post_init__(self) -> None:
        _set(self, "size", _size("Resize", "size", self.size))
        if self.interpolation not in INTERPOLATIONS:
            raise ValueError(
                f"Resize: interpolation should be one of {INTERPOLATIONS}, "
                f"but got interpolation={self.interpolation!r}"
            )


@dataclass(frozen=True)
class RandomResizedCrop(Op):
    """torchvision's ``RandomResizedCrop``: a box of random area (``scale`` of the
    image) and aspect ratio (log-uniform in ``ratio``), then resized to ``size``."""

    size: Sequence[int] | int
    scale: Sequence[float] = (0.08, 1.0)
    ratio: Sequence[float] = (3 / 4, 4 / 3)
    interpolation: str = "bilinear"
    name: ClassVar[str] = "random_resized_crop"
    random: ClassVar[bool] = True

    def __post_init__(self) -> None:
        _set(self, "size", _box_size("RandomResizedCrop", "size", self.size))
        _set(self, "scale", _range("RandomResizedCrop", "scale", self.scale, positive=True))
        _set(self, "ratio", _range("RandomResizedCrop", "ratio", self.ratio, positive=True))
        if self.interpolation not in INTERPOLATIONS:
            raise ValueError(
                f"RandomResizedCrop: interpolation should be one of {INTERPOLATIONS}, "
                f"but got interpolation={self.interpolation!r}"
            )


@dataclass(frozen=True)
class Pad(Op):
    """``top``/``bottom``/``left``/``right`` pixels of ``value`` around the image."""

    top: int = 0
    bottom: int = 0
    left: int = 0
    right: int = 0
    value: float = 0
    name: ClassVar[str] = "pad"

    def __post_init__(self) -> None:
        for field in ("top", "bottom", "left", "right"):
            _int("Pad", field, getattr(self, field), 0)
        _number("Pad", "value", self.value)

    def output_kind(self, kind: Kind) -> Kind:
        return _fill_fits(self, self.value, super().output_kind(kind))


@dataclass(frozen=True)
class PadTo(Op):
    """Pads bottom and right with ``value`` to ``height`` x ``width``; a larger image
    is an error (crop it first)."""

    height: int
    width: int
    value: float = 0
    name: ClassVar[str] = "pad_to"

    def __post_init__(self) -> None:
        _int("PadTo", "height", self.height, 1)
        _int("PadTo", "width", self.width, 1)
        _number("PadTo", "value", self.value)

    def output_kind(self, kind: Kind) -> Kind:
        return _fill_fits(self, self.value, super().output_kind(kind))


PADDING_MODES = ("constant", "edge", "reflect", "symmetric")


@dataclass(frozen=True)
class RandomCrop(Op):
    """torchvision's ``RandomCrop`` (the CIFAR recipe): ``padding`` around the
    image, then with ``pad_if_needed`` as much again on both sides of a dimension
    still smaller than ``size``, then a ``size`` crop at a random place (its top
    drawn first; each only when there is room). ``padding``: an int for every
    side, (left/right, top/bottom) or (left, top, right, bottom), as torchvision;
    ``padding_mode``: "constant" (``fill``), "edge", "reflect" or "symmetric",
    NumPy's modes, which torchvision uses for PIL images."""

    size: Sequence[int] | int
    padding: Sequence[int] | int | None = None
    pad_if_needed: bool = False
    fill: float = 0
    padding_mode: str = "constant"
    name: ClassVar[str] = "random_crop"
    random: ClassVar[bool] = True

    def __post_init__(self) -> None:
        _set(self, "size", _box_size("RandomCrop", "size", self.size))
        _set(self, "padding", _padding(self.padding))
        if not isinstance(self.pad_if_needed, bool):
            raise TypeError(
                f"RandomCrop: pad_if_needed should be a bool, but got "
                f"pad_if_needed={self.pad_if_needed!r}"
            )
        _number("RandomCrop", "fill", self.fill)
        if self.padding_mode not in PADDING_MODES:
            raise ValueError(
                f"RandomCrop: padding_mode should be one of {PADDING_MODES}, "
                f"but got padding_mode={self.padding_mode!r}"
            )

    def output_kind(self, kind: Kind) -> Kind:
        return _fill_fits(self, self.fill, super().output_kind(kind), "fill")


def _padding(value: Any) -> tuple[int, int, int, int]:
    """torchvision's padding forms as (left, top, right, bottom)."""
    given = (0,) if value is None else (value,) if isinstance(value, int) else value
    ok = isinstance(given, (tuple, list)) and len(given) in (1, 2, 4)
    if not ok or not all(_side(v, 0) for v in given):
        raise ValueError(
            "RandomCrop: padding should be None, an int from 0 to 2**31 - 1, or 2 or 4 of them "
            f"((left/right, top/bottom) or (left, top, right, bottom)), but got padding={value!r}"
        )
    values: list[int] = list(given)
    if len(values) == 1:
        values *= 4
    elif len(values) == 2:
        values *= 2
    return (values[0], values[1], values[2], values[3])


@dataclass(frozen=True)
class HFlip(Op):
    """Mirror left to right."""

    name: ClassVar[str] = "hflip"


@dataclass(frozen=True)
class VFlip(Op):
    """Mirror top to bottom."""

    name: ClassVar[str] = "vflip"


@dataclass(frozen=True)
class _RandomFlip(Op):
    p: float = 0.5
    random: ClassVar[bool] = True

    def __post_init__(self) -> None:
        name = type(self).__name__
        if not 0.0 <= _number(name, "p", self.p) <= 1.0:
            raise ValueError(f"{name}: p should be in [0, 1], but got p={self.p!r}")


@dataclass(frozen=True)
class RandomHFlip(_RandomFlip):
    """``HFlip`` with probability ``p`` (one draw per item)."""

    name: ClassVar[str] = "random_hflip"


@dataclass(frozen=True)
class RandomVFlip(_RandomFlip):
    """``VFlip`` with probability ``p`` (one draw per item)."""

    name: ClassVar[str] = "random_vflip"


@dataclass(frozen=True)
class Rotate90(Op):
    """``k`` quarter turns counter-clockwise (``numpy.rot90``)."""

    k: int = 1
    name: ClassVar[str] = "rotate90"

    def __post_init__(self) -> None:
        if not isinstance(self.k, int) or isinstance(self.k, bool):
            raise TypeError(f"Rotate90: k should be an int, but got k={self.k!r}")


GEOMETRY_OPS = (Crop, CenterCrop, Resize, RandomResizedCrop, RandomCrop, Pad, PadTo, HFlip, VFlip,
                RandomHFlip, RandomVFlip, Rotate90)  # fmt: skip
