"""Ops drawn with a probability, as torchvision v2's: ``RandomApply`` (ops over
ops), ``RandomGrayscale`` and ``RandomSolarize`` (the SimCLR/BYOL recipes), and
the lookup-table ops the augmentation policies use (``RandomPosterize``,
``RandomAutocontrast``, ``RandomEqualize``; ``p=1`` for the plain op).
Each draws one uniform number per item, and applies when it is below ``p``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ._op_base import Kind, Op, PilOp, _is_int, _number, _set

__all__ = [
    "RandomAdjustSharpness",
    "RandomApply",
    "RandomAutocontrast",
    "RandomEqualize",
    "RandomGrayscale",
    "RandomPosterize",
    "RandomSolarize",
]


def _probability(op: str, value: Any) -> float:
    p = _number(op, "p", value)
    if not 0 <= p <= 1:
        raise ValueError(f"{op}: p should be a number from 0 to 1, but got p={value!r}")
    return p


@dataclass(frozen=True)
class RandomApply(Op):
    """``transforms`` (ops of this package) in order, on a drawn fraction ``p`` of
    the items, as torchvision's ``RandomApply(transforms, p=0.5)``: one uniform
    number per item, below ``p`` applies them all (their own draws follow it),
    else the image is left as it is. The ops must give back the kind of image
    they take (a uint8 image stays uint8 HWC), as the pipeline's next op expects
    it either way. ``RandomApply([GaussianBlur(23)], p=0.5)`` is SimCLR's blur."""

    transforms: Any
    p: float = 0.5
    name: ClassVar[str] = "random_apply"
    random: ClassVar[bool] = True

    def __post_init__(self) -> None:
        transforms = self.transforms
        if (
            isinstance(transforms, Op)
            or not isinstance(transforms, Sequence)
            or not all(isinstance(op, Op) for op in transforms)
        ):
            raise TypeError(
                "RandomApply: transforms should be a list of dataloader_api.transforms ops, "
                f"but got transforms={transforms!r}"
            )
        if not transforms:
            raise ValueError("RandomApply: transforms should hold at least one op, but got []")
        _set(self, "transforms", tuple(transforms))
        _set(self, "p", _probability("RandomApply", self.p))

    def output_kind(self, kind: Kind) -> Kind:
        if kind[0] == "encoded":
            raise TypeError(f"{self!r} needs a decoded image: put Decode() before it")
        out = kind
        for position, op in enumerate(self.transforms):
            try:
                out = op.output_kind(out)
            except (TypeError, ValueError) as error:
                raise type(error)(f"RandomApply: transforms[{position}]: {error}") from None
        if out != kind:
            raise TypeError(
                f"{self!r} should give back the kind of image it takes, {kind[0]} {kind[1]}, "
                f"but its transforms give {out[0]} {out[1]}"
            )
        return kind

    def to_dict(self) -> dict[str, Any]:
        return {"op": self.name, "transforms": [op.to_dict() for op in self.transforms],
                "p": self.p}  # fmt: skip


@dataclass(frozen=True)
class RandomGrayscale(PilOp):
    """Pillow's luma (``convert("L")``) on a drawn fraction ``p`` of the items,
    with the channels the image had, as torchvision's ``RandomGrayscale(p=0.1)``:
    a 3-channel image stays 3 channels (the gray in each), a gray one is left
    as it is. Takes 1 or 3 channels (every image with other counts is refused,
    where torchvision refuses only those it draws)."""

    p: float = 0.1
    name: ClassVar[str] = "random_grayscale"
    random: ClassVar[bool] = True

    def __post_init__(self) -> None:
        _set(self, "p", _probability("RandomGrayscale", self.p))


@dataclass(frozen=True)
class RandomSolarize(PilOp):
    """Every value ``>= threshold`` inverted (``255 - v``) on a drawn fraction ``p``
    of the items, as torchvision's ``RandomSolarize(threshold, p=0.5)`` on a PIL
    image (``ImageOps.solarize``): ``threshold`` is on the uint8 scale, any finite
    number (above 255 nothing changes, at 0 or below everything is inverted).
    Takes 1 or 3 channels, as PIL's solarize."""

    threshold: float
    p: float = 0.5
    name: ClassVar[str] = "random_solarize"
    random: ClassVar[bool] = True

    def __post_init__(self) -> None:
        _set(self, "threshold", _number("RandomSolarize", "threshold", self.threshold))
        _set(self, "p", _probability("RandomSolarize", self.p))


@dataclass(frozen=True)
class RandomPosterize(PilOp):
    """Each value keeps its ``bits`` high bits (an int from 1 to 8) on a drawn
    fraction ``p`` of the items, as torchvision's ``RandomPosterize(bits, p=0.5)``
    on a PIL image (``ImageOps.posterize``). Takes 1 or 3 channels."""

    bits: int
    p: float = 0.5
    name: ClassVar[str] = "random_posterize"
    random: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if not (_is_int(self.bits) and 1 <= self.bits <= 8):
            raise ValueError(
                f"RandomPosterize: bits should be an int from 1 to 8, but got bits={self.bits!r}"
            )
        _set(self, "p", _probability("RandomPosterize", self.p))


@dataclass(frozen=True)
class RandomAutocontrast(PilOp):
    """Each channel stretched so its darkest value becomes 0 and its lightest 255,
    on a drawn fraction ``p`` of the items, as torchvision's
    ``RandomAutocontrast(p=0.5)`` on a PIL image (``ImageOps.autocontrast``: a
    table per channel, its values truncated). Takes 1 or 3 channels."""

    p: float = 0.5
    name: ClassVar[str] = "random_autocontrast"
    random: ClassVar[bool] = True

    def __post_init__(self) -> None:
        _set(self, "p", _probability("RandomAutocontrast", self.p))


@dataclass(frozen=True)
class RandomEqualize(PilOp):
    """Each channel's histogram equalized on a drawn fraction ``p`` of the items,
    as torchvision's ``RandomEqualize(p=0.5)`` on a PIL image
    (``ImageOps.equalize``, in integers). Takes 1 or 3 channels."""

    p: float = 0.5
    name: ClassVar[str] = "random_equalize"
    random: ClassVar[bool] = True

    def __post_init__(self) -> None:
        _set(self, "p", _probability("RandomEqualize", self.p))


@dataclass(frozen=True)
class RandomAdjustSharpness(PilOp):
    """PIL's ``ImageEnhance.Sharpness(image).enhance(sharpness_factor)`` on a drawn
    fraction ``p`` of the items, as torchvision's ``RandomAdjustSharpness
    (sharpness_factor, p=0.5)`` on a PIL image: a blend with the image smoothed
    by PIL's 3x3 ``SMOOTH`` kernel (its edge pixels kept), 0 smooth, 1 the
    image, 2 sharper; ``sharpness_factor`` >= 0. Takes 1 or 3 channels."""

    sharpness_factor: float
    p: float = 0.5
    name: ClassVar[str] = "random_adjust_sharpness"
    random: ClassVar[bool] = True

    def __post_init__(self) -> None:
        factor = _number("RandomAdjustSharpness", "sharpness_factor", self.sharpness_factor)
        if factor < 0:
            raise ValueError(
                "RandomAdjustSharpness: sharpness_factor should be a number >= 0, but got "
                f"sharpness_factor={self.sharpness_factor!r}"
            )
        _set(self, "sharpness_factor", factor)
        _set(self, "p", _probability("RandomAdjustSharpness", self.p))


APPLY_OPS = (RandomApply, RandomGrayscale, RandomSolarize, RandomPosterize, RandomAutocontrast,
             RandomEqualize, RandomAdjustSharpness)  # fmt: skip
