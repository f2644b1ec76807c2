"""``RandomApply``: ops over ops, as torchvision v2's, applied together on a
drawn fraction ``p`` of the items (one uniform number per item, below ``p``
applies them). Its reference runs in ``_reference.py`` (one draw, then its ops)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ._op_base import Kind, Op, _probability, _set

__all__ = ["RandomApply"]


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
