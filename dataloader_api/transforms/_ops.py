"""Image operations as plain data: frozen records with checked arguments.

An op says what it does and what it accepts, never how: the reference
(``_reference.py``) and native backends each execute the same records. Images
are arrays of ``uint8`` or ``float32`` in ``HWC`` layout (height, width,
channels) until ``ToCHW``; ``Decode`` takes the encoded bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ._op_apply import APPLY_OPS
from ._op_base import (
    DEFAULT_MAX_PIXELS,
    ENCODED,
    INTERPOLATIONS,
    Kind,
    Op,
    _box_size,
    _channels,
    _fill_fits,
    _int,
    _number,
    _range,
    _set,
    _side,
    _size,
)
from ._op_blur import GaussianBlur
from ._op_color import ADJUST_OPS, ColorJitter
from ._op_erasing import RandomErasing

__all__ = [
    "INTERPOLATIONS",
    "PADDING_MODES",
    "CenterCrop",
    "Crop",
    "Decode",
    "HFlip",
    "Kind",
    "Normalize",
    "Op",
    "Pad",
    "PadTo",
    "RandomCrop",
    "RandomHFlip",
    "RandomResizedCrop",
    "RandomVFlip",
    "Resize",
    "Rotate90",
    "ToCHW",
    "ToFloat",
    "ToGray",
    "ToHWC",
    "ToRGB",
    "VFlip",
    "op_from_dict",
]


@dataclass(frozen=True)
class Decode(Op):
    """Encoded JPEG, PNG or WebP bytes (format sniffed) to a ``uint8`` HWC image with
    the file's channels (1 gray, 2 gray+alpha, 3 RGB, 4 RGBA; palette and CMYK
    images become RGB or RGBA). 16-bit and 32-bit images (Pillow modes ``I;16``,
    ``I``, ``F``: 16-bit gray PNGs, say) are refused with ``ImageDecodeError``:
    decode those yourself and start the pipeline after ``Decode``.
    ``max_pixels`` refuses larger images before their pixels are decoded; it
    replaces Pillow's ``Image.MAX_IMAGE_PIXELS``. ``draft=True``: when a
    ``RandomResizedCrop`` follows (past ``ToRGB``/``ToGray``) and its box is at
    least twice its size both ways, a JPEG is decoded at 1/2, 1/4 or 1/8 scale
    (Pillow's ``draft``, the largest that keeps the box at least that size) and
    the box's top, left, height and width are divided by it, rounded down:
    faster on large photos (about 1.6x on a 2000x1500 JPEG cropped to 224), with
    other pixels than a full decode."""

    max_pixels: int = DEFAULT_MAX_PIXELS
    draft: bool = False
    name: ClassVar[str] = "decode"

    def __post_init__(self) -> None:
        _int("Decode", "max_pixels", self.max_pixels, 1, bounded=False)
        if not isinstance(self.draft, bool):
            raise TypeError(f"Decode: draft should be a bool, but got draft={self.draft!r}")

    def output_kind(self, kind: Kind) -> Kind:
        if kind != ENCODED:
            raise TypeError(f"{self!r} takes encoded bytes, and the image is already decoded")
        return ("uint8", "HWC")


@dataclass(frozen=True)
class _Uint8Only(Op):
    def output_kind(self, kind: Kind) -> Kind:
        super().output_kind(kind)
        if kind[0] != "uint8":
            raise TypeError(f"{self!r} needs a uint8 image: put it before ToFloat()")
        return kind


@dataclass(frozen=True)
class ToRGB(_Uint8Only):
    """Three channels: gray is repeated, alpha is dropped (as Pillow's ``convert``)."""

    name: ClassVar[str] = "to_rgb"


@dataclass(frozen=True)
class ToGray(_Uint8Only):
    """One channel, ``L = (19595 R + 38470 G + 7471 B + 2**15) >> 16`` (Pillow's
    ITU-R 601-2 luma); alpha is dropped."""

    name: ClassVar[str] = "to_gray"


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


@dataclass(frozen=True)
class ToFloat(Op):
    """``uint8`` to ``float32`` in [0, 1]: ``float32(x) / 255`` (torchvision's ``ToTensor``)."""

    name: ClassVar[str] = "to_float"
    spatial: ClassVar[bool] = False

    def output_kind(self, kind: Kind) -> Kind:
        super().output_kind(kind)
        if kind[0] != "uint8":
            raise TypeError(f"{self!r} needs a uint8 image, and the image is already float32")
        return ("float32", kind[1])


@dataclass(frozen=True)
class Normalize(Op):
    """``(x - mean) / std`` per channel in ``float32``; one number applies to every channel."""

    mean: Any  # a number or a sequence of them; kept as a tuple
    std: Any
    name: ClassVar[str] = "normalize"
    spatial: ClassVar[bool] = False

    def __post_init__(self) -> None:
        _set(self, "mean", _channels("Normalize", "mean", self.mean, positive=False))
        _set(self, "std", _channels("Normalize", "std", self.std, positive=True))

    def output_kind(self, kind: Kind) -> Kind:
        super().output_kind(kind)
        if kind[0] != "float32":
            raise TypeError(f"{self!r} needs a float32 image: put ToFloat() before it")
        return kind


@dataclass(frozen=True)
class ToCHW(Op):
    """Channels first (a contiguous copy), as torch models expect."""

    name: ClassVar[str] = "to_chw"

    def output_kind(self, kind: Kind) -> Kind:
        super().output_kind(kind)
        return (kind[0], "CHW")


@dataclass(frozen=True)
class ToHWC(Op):
    """Channels last again after ``ToCHW``."""

    name: ClassVar[str] = "to_hwc"
    spatial: ClassVar[bool] = False

    def output_kind(self, kind: Kind) -> Kind:
        super().output_kind(kind)
        if kind[1] != "CHW":
            raise TypeError(f"{self!r} needs a CHW image: the image is already HWC")
        return (kind[0], "HWC")


OPS: dict[str, type[Op]] = {
    op.name: op
    for op in (
        Decode, ToRGB, ToGray, Crop, CenterCrop, Resize, RandomResizedCrop, RandomCrop, Pad,
        PadTo, HFlip, VFlip, RandomHFlip, RandomVFlip, Rotate90, ToFloat, Normalize, ToCHW, ToHWC,
        RandomErasing, ColorJitter, GaussianBlur, *APPLY_OPS, *ADJUST_OPS,
    )
}  # fmt: skip


def op_from_dict(record: dict[str, Any]) -> Op:
    """The op a ``to_dict()`` record describes."""
    if not isinstance(record, dict) or record.get("op") not in OPS:
        raise ValueError(f"an op record should be a dict whose 'op' is one of {sorted(OPS)}, "
                         f"but got {record!r}")  # fmt: skip
    arguments = {k: _argument(v) for k, v in record.items() if k != "op"}
    return OPS[record["op"]](**arguments)


def _argument(value: Any) -> Any:
    """A record's value as the op takes it: lists as tuples, op records (RandomApply's) as ops."""
    if isinstance(value, list):
        return tuple(op_from_dict(v) if isinstance(v, dict) else v for v in value)
    return value
