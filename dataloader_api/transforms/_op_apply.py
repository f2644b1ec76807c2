"""Ops over ops, as torchvision v2's: ``RandomApply`` (its ops together on a
drawn fraction ``p`` of the items), ``RandomChoice`` (one of its ops, drawn by
weight) and ``RandomOrder`` (all of its ops, in a drawn order). Their reference
runs in ``_reference.py`` (the draws, then the ops with their own draws)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ._op_base import Kind, Op, _number, _probability, _set

__all__ = ["APPLY_OPS", "RandomApply", "RandomChoice", "RandomOrder"]


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
        _set(self, "transforms", _ops_of(self, "RandomApply"))
        _set(self, "p", _probability("RandomApply", self.p))

    def output_kind(self, kind: Kind) -> Kind:
        return _same_kind(self, "RandomApply", kind)

    def to_dict(self) -> dict[str, Any]:
        return {"op": self.name, "transforms": [op.to_dict() for op in self.transforms],
                "p": self.p}  # fmt: skip


@dataclass(frozen=True)
class RandomChoice(Op):
    """One of ``transforms`` per item, drawn with weights ``p`` (None: each as
    likely), as torchvision v2's ``RandomChoice(transforms, p=None)``, which also
    divides ``p`` by its sum. One uniform number per item picks the op (the first
    whose running sum of weights exceeds it); the op's own draws follow. Each op
    must give back the kind of image it takes."""

    transforms: Any
    p: Any = None
    name: ClassVar[str] = "random_choice"
    random: ClassVar[bool] = True

    def __post_init__(self) -> None:
        ops = _ops_of(self, "RandomChoice")
        _set(self, "transforms", ops)
        if self.p is None:
            _set(self, "p", tuple(1.0 / len(ops) for _ in ops))
            return
        if isinstance(self.p, (str, bytes)) or not isinstance(self.p, Sequence):
            raise TypeError(f"RandomChoice: p should be None or a list of {len(ops)} weights, "
                            f"but got p={self.p!r}")  # fmt: skip
        weights = [_number("RandomChoice", "p", w) for w in self.p]
        if len(weights) != len(ops) or min(weights) < 0 or sum(weights) <= 0:
            raise ValueError(
                f"RandomChoice: p should hold {len(ops)} weights (one per op), none below 0 "
                f"and not all 0, but got p={self.p!r}"
            )
        total = sum(weights)
        _set(self, "p", tuple(w / total for w in weights))

    def output_kind(self, kind: Kind) -> Kind:
        return _same_kind(self, "RandomChoice", kind, each=True)

    def choose(self, uniform: float) -> int:
        """The op a uniform draw in [0, 1) picks (the native run does the same sums)."""
        running = 0.0
        for position, weight in enumerate(self.p):
            running += weight
            if uniform < running:
                return position
        # a sum a rounding short of 1: the last op with a weight
        return max(i for i, weight in enumerate(self.p) if weight > 0)

    def to_dict(self) -> dict[str, Any]:
        return {"op": self.name, "transforms": [op.to_dict() for op in self.transforms],
                "p": list(self.p)}  # fmt: skip


@dataclass(frozen=True)
class RandomOrder(Op):
    """All of ``transforms``, in an order drawn per item, as torchvision v2's
    ``RandomOrder(transforms)``: a Fisher-Yates shuffle of their positions (from
    the last down, each swapped with one drawn below it, inclusive), then the ops
    in that order with their own draws. Each op must give back the kind of image
    it takes, as any may come first."""

    transforms: Any
    name: ClassVar[str] = "random_order"
    random: ClassVar[bool] = True

    def __post_init__(self) -> None:
        _set(self, "transforms", _ops_of(self, "RandomOrder"))

    def output_kind(self, kind: Kind) -> Kind:
        return _same_kind(self, "RandomOrder", kind, each=True)

    def order(self, below: Callable[[int], int]) -> list[int]:
        """The positions in the order drawn with ``below(n)`` (an int in [0, n))."""
        order = list(range(len(self.transforms)))
        for last in range(len(order) - 1, 0, -1):
            other = below(last + 1)
            order[last], order[other] = order[other], order[last]
        return order

    def to_dict(self) -> dict[str, Any]:
        return {"op": self.name, "transforms": [op.to_dict() for op in self.transforms]}


APPLY_OPS = (RandomApply, RandomChoice, RandomOrder)


def _ops_of(record: Op, op: str) -> tuple[Op, ...]:
    """``record.transforms`` as a tuple of this package's ops, at least one."""
    transforms = record.transforms  # type: ignore[attr-defined]
    if (
        isinstance(transforms, Op)
        or not isinstance(transforms, Sequence)
        or not all(isinstance(each, Op) for each in transforms)
    ):
        raise TypeError(
            f"{op}: transforms should be a list of dataloader_api.transforms ops, "
            f"but got transforms={transforms!r}"
        )
    if not transforms:
        raise ValueError(f"{op}: transforms should hold at least one op, but got []")
    return tuple(transforms)


def _same_kind(record: Op, op: str, kind: Kind, each: bool = False) -> Kind:
    """``kind``, once ``record``'s ops are known to give it back: all of them in
    turn, or (``each``) every one on its own, as any may run first or alone."""
    if kind[0] == "encoded":
        raise TypeError(f"{record!r} needs a decoded image: put Decode() before it")
    out = kind
    for position, step in enumerate(record.transforms):  # type: ignore[attr-defined]
        try:
            out = step.output_kind(kind if each else out)
        except (TypeError, ValueError) as error:
            raise type(error)(f"{op}: transforms[{position}]: {error}") from None
        if each and out != kind:
            break
    if out != kind:
        raise TypeError(
            f"{record!r} should give back the kind of image it takes, {kind[0]} {kind[1]}, "
            f"but its transforms give {out[0]} {out[1]}"
        )
    return kind
