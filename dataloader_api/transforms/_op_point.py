"""Per-pixel ops drawn with a probability, as torchvision v2's on a PIL image:
``RandomGrayscale`` and ``RandomSolarize`` (the SimCLR/BYOL recipes), and the
lookup-table ops the augmentation policies use (``RandomPosterize``,
``RandomAutocontrast``, ``RandomEqualize``, ``RandomAdjustSharpness``; ``p=1``
for the plain op). Each draws one uniform number per item, and applies when it
is below ``p``; their reference is ``_point.py``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ._op_base import PilOp, _is_int, _number, _probability, _set

__all__ = [
    "RandomAdjustSharpness",
    "RandomAutocontrast",
    "RandomEqualize",
    "RandomGrayscale",
    "RandomPosterize",
    "RandomSolarize",
]


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


POINT_OPS = (RandomGrayscale, RandomSolarize, RandomPosterize, RandomAutocontrast, RandomEqualize,
             RandomAdjustSharpness)  # fmt: skip
