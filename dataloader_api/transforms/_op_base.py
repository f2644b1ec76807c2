"""What every op shares: the base record ``Op``, the kinds of value between ops,
and the argument checks (each error names the op, the argument and its value)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import fields
from typing import Any, ClassVar, TypeGuard

# (dtype, layout) of the value between two ops: dtype "encoded" (bytes),
# "uint8" or "float32"; layout "HWC" or "CHW" ("" for encoded bytes).
Kind = tuple[str, str]
ENCODED: Kind = ("encoded", "")
INTERPOLATIONS = ("nearest", "bilinear", "bicubic", "lanczos")
# Pillow's own guard against decompression bombs (Image.MAX_IMAGE_PIXELS).
DEFAULT_MAX_PIXELS = 89_478_485
# The largest side, offset, padding or kernel an op takes: a native backend holds
# them in machine integers, and no image comes near it. Checked when the op is
# built, so every backend refuses the same values.
MAX_SIDE = 2**31 - 1


def _is_int(value: Any) -> TypeGuard[int]:
    """An int and not a bool (``True`` is 1 to Python, never a size to a user)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _int(op: str, name: str, value: Any, minimum: int, bounded: bool = True) -> int:
    """An int >= ``minimum``, and at most ``MAX_SIDE`` when ``bounded``."""
    if not _is_int(value):
        raise TypeError(f"{op}: {name} should be an int >= {minimum}, but got {name}={value!r}")
    if value < minimum:
        raise ValueError(f"{op}: {name} should be an int >= {minimum}, but got {name}={value!r}")
    if bounded and value > MAX_SIDE:
        raise ValueError(
            f"{op}: {name} should be an int from {minimum} to 2**31 - 1, but got {name}={value!r}"
        )
    return value


def _side(value: Any, minimum: int = 1) -> bool:
    """Whether ``value`` is an int from ``minimum`` to ``MAX_SIDE``."""
    return _is_int(value) and minimum <= value <= MAX_SIDE


def _size(op: str, name: str, value: Any) -> Sequence[int] | int:
    """An int (the shorter side, or a square for crops) or a (height, width) pair."""
    if _side(value):
        return value  # type: ignore[no-any-return]
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(map(_side, value)):
        return (value[0], value[1])
    raise ValueError(
        f"{op}: {name} should be an int from 1 to 2**31 - 1 or a (height, width) pair of "
        f"them, but got {name}={value!r}"
    )


def _box_size(op: str, name: str, value: Any) -> tuple[int, int]:
    """A crop's (height, width): an int is a square, as torchvision's crops take it."""
    size = _size(op, name, value)
    return size if isinstance(size, tuple) else (size, size)


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


def _probability(op: str, value: Any) -> float:
    p = _number(op, "p", value)
    if not 0 <= p <= 1:
        raise ValueError(f"{op}: p should be a number from 0 to 1, but got p={value!r}")
    return p


def _fill_fits(op: Op, value: float, kind: Kind, name: str = "value") -> Kind:
    if kind[0] == "uint8" and not (float(value).is_integer() and 0 <= value <= 255):
        raise ValueError(
            f"{op!r}: {name} should be an integer in [0, 255] for a uint8 image, "
            f"but got {name}={value!r}"
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


class PilOp(Op):
    """An op on ``uint8`` images, as torchvision's on a PIL image."""

    def output_kind(self, kind: Kind) -> Kind:
        super().output_kind(kind)
        if kind[0] != "uint8":
            raise TypeError(f"{self!r} needs a uint8 image, as PIL's: put it before ToFloat()")
        return kind
