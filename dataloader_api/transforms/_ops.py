"""Image operations as plain data: frozen records with checked arguments.

An op says what it does and what it accepts, never how: the reference
(``_reference.py``) and native backends each execute the same records. Images
are arrays of ``uint8`` or ``float32`` in ``HWC`` layout (height, width,
channels) until ``ToCHW``; ``Decode`` takes the encoded bytes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, ClassVar

__all__ = [
    "INTERPOLATIONS",
    "CenterCrop",
    "Crop",
    "Decode",
    "HFlip",
    "Kind",
    "Normalize",
    "Op",
    "Pad",
    "PadTo",
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

# (dtype, layout) of the value between two ops: dtype "encoded" (bytes),
# "uint8" or "float32"; layout "HWC" or "CHW" ("" for encoded bytes).
Kind = tuple[str, str]
ENCODED: Kind = ("encoded", "")
INTERPOLATIONS = ("nearest", "bilinear", "bicubic", "lanczos")
# Pillow's own guard against decompression bombs (Image.MAX_IMAGE_PIXELS).
DEFAULT_MAX_PIXELS = 89_478_485


def _int(op: str, name: str, value: Any, minimum: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{op}: {name} should be an int >= {minimum}, but got {name}={value!r}")
    if value < minimum:
        raise ValueError(f"{op}: {name} should be an int >= {minimum}, but got {name}={value!r}")
    return value


def _size(op: str, name: str, value: Any) -> Sequence[int] | int:
    """An int (the shorter side, or a square for crops) or a (height, width) pair."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    if (
        isinstance(value, (tuple, list))
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in value)
    ):
        return (value[0], value[1])
    raise ValueError(
        f"{op}: {name} should be an int >= 1 or a (height, width) pair of them, "
        f"but got {name}={value!r}"
    )


def _number(op: str, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{op}: {name} should be a finite number, but got {name}={value!r}")
    return float(value)


def _range(op: str, name: str, value: Any, positive: bool) -> tuple[float, float]:
    ok = isinstance(value, (tuple, list)) and len(value) == 2
    pair = tuple(_number(op, name, v) for v in value) if ok else ()
    if not ok or pair[0] > pair[1] or (positive and pair[0] <= 0):
        allowed = "a (low, high) pair with 0 < low <= high" if positive else "a (low, high) pair"
        raise ValueError(f"{op}: {name} should be {allowed}, but got {name}={value!r}")
    return (pair[0], pair[1])


def _channels(op: str, name: str, value: Any, positive: bool) -> tuple[float, ...]:
    values = (value,) if isinstance(value, (int, float)) else value
    if not isinstance(values, (tuple, list)) or not values:
        raise ValueError(
            f"{op}: {name} should be a number or a non-empty sequence of numbers (one per "
            f"channel), but got {name}={value!r}"
        )
    numbers = tuple(_number(op, name, v) for v in values)
    if positive and min(numbers) <= 0:
        raise ValueError(f"{op}: {name} should be > 0 for every channel, but got {name}={value!r}")
    return numbers


def _fill_fits(op: Op, value: float, kind: Kind) -> Kind:
    if kind[0] == "uint8" and not (float(value).is_integer() and 0 <= value <= 255):
        raise ValueError(
            f"{op!r}: value should be an integer in [0, 255] for a uint8 image, "
            f"but got value={value!r}"
        )
    return kind


def _set(record: Any, name: str, value: Any) -> None:
    object.__setattr__(record, name, value)  # frozen records normalise their own fields


class Op:
    """One step of a pipeline. ``name`` is its name in ``to_dict()``."""

    name: ClassVar[str]
    random: ClassVar[bool] = False
    spatial: ClassVar[bool] = True  # needs an HWC image

    def output_kind(self, kind: Kind) -> Kind:
        """The kind this op produces from ``kind``; TypeError when it cannot take it."""
        dtype, layout = kind
        if dtype == "encoded":
            raise TypeError(f"{self!r} needs a decoded image: put Decode() before it")
        if self.spatial and layout != "HWC":
            raise TypeError(f"{self!r} needs an HWC image: put it before ToCHW()")
        return kind

    def to_dict(self) -> dict[str, Any]:
        """Plain data: ``{"op": name, **arguments}`` (tuples as lists)."""
        record: dict[str, Any] = {"op": self.name}
        for field in fields(self):  # type: ignore[arg-type]
            value = getattr(self, field.name)
            record[field.name] = list(value) if isinstance(value, tuple) else value
        return record


@dataclass(frozen=True)
class Decode(Op):
    """Encoded JPEG, PNG or WebP bytes (format sniffed) to a ``uint8`` HWC image with
    the file's channels (1 gray, 2 gray+alpha, 3 RGB, 4 RGBA; palette and CMYK
    images become RGB or RGBA). 16-bit and 32-bit images (Pillow modes ``I;16``,
    ``I``, ``F``: 16-bit gray PNGs, say) are refused with ``ImageDecodeError``:
    decode those yourself and start the pipeline after ``Decode``.
    ``max_pixels`` refuses larger images before their pixels are decoded; it
    replaces Pillow's ``Image.MAX_IMAGE_PIXELS``."""

    max_pixels: int = DEFAULT_MAX_PIXELS
    name: ClassVar[str] = "decode"

    def __post_init__(self) -> None:
        _int("Decode", "max_pixels", self.max_pixels, 1)

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
        size = _size("CenterCrop", "size", self.size)
        _set(self, "size", size if isinstance(size, tuple) else (size, size))


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
        size = _size("RandomResizedCrop", "size", self.size)
        _set(self, "size", size if isinstance(size, tuple) else (size, size))
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
        Decode, ToRGB, ToGray, Crop, CenterCrop, Resize, RandomResizedCrop, Pad, PadTo,
        HFlip, VFlip, RandomHFlip, RandomVFlip, Rotate90, ToFloat, Normalize, ToCHW, ToHWC,
    )
}  # fmt: skip


def op_from_dict(record: dict[str, Any]) -> Op:
    """The op a ``to_dict()`` record describes."""
    if not isinstance(record, dict) or record.get("op") not in OPS:
        raise ValueError(f"an op record should be a dict whose 'op' is one of {sorted(OPS)}, "
                         f"but got {record!r}")  # fmt: skip
    arguments = {k: tuple(v) if isinstance(v, list) else v for k, v in record.items() if k != "op"}
    return OPS[record["op"]](**arguments)
