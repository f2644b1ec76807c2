"""The ops that change what an image is, not where its pixels are: ``Decode``,
channels (``ToRGB``, ``ToGray``), dtype (``ToFloat``, ``Normalize``) and layout
(``ToCHW``, ``ToHWC``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ._op_base import DEFAULT_MAX_PIXELS, ENCODED, Kind, Op, _channels, _int, _set

__all__ = ["Decode", "Normalize", "ToCHW", "ToFloat", "ToGray", "ToHWC", "ToRGB"]


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


CONVERT_OPS = (Decode, ToRGB, ToGray, ToFloat, Normalize, ToCHW, ToHWC)
