"""Image operations as plain data: frozen records with checked arguments.

An op says what it does and what it accepts, never how: the reference
(``_reference.py``) and native backends each execute the same records. Images
are arrays of ``uint8`` or ``float32`` in ``HWC`` layout (height, width,
channels) until ``ToCHW``; ``Decode`` takes the encoded bytes.

This module is the registry: every op by its ``name`` (``OPS``), one tuple per
``_op_*.py`` module, and ``op_from_dict``. The records themselves live by
concern (``_op_convert``, ``_op_geometry``, ``_op_color``, ``_op_blur``,
``_op_point``, ``_op_apply``, ``_op_erasing``); see the package README for how
to add one.
"""

from __future__ import annotations

from typing import Any

from ._op_apply import APPLY_OPS
from ._op_base import INTERPOLATIONS, Kind, Op
from ._op_blur import GaussianBlur
from ._op_color import ADJUST_OPS, ColorJitter
from ._op_convert import CONVERT_OPS, Decode, Normalize, ToCHW, ToFloat, ToGray, ToHWC, ToRGB
from ._op_erasing import RandomErasing
from ._op_geometry import (
    GEOMETRY_OPS,
    PADDING_MODES,
    CenterCrop,
    Crop,
    HFlip,
    Pad,
    PadTo,
    RandomCrop,
    RandomHFlip,
    RandomResizedCrop,
    RandomVFlip,
    Resize,
    Rotate90,
    VFlip,
)
from ._op_point import POINT_OPS

__all__ = [
    "INTERPOLATIONS",
    "OPS",
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

# Every op by its name in ``to_dict()``: what ``op_from_dict`` builds, and what
# the native parser must know (backends/rust/tests/test_op_parity.py).
OPS: dict[str, type[Op]] = {
    op.name: op
    for op in (
        *CONVERT_OPS, *GEOMETRY_OPS, RandomErasing, ColorJitter, *ADJUST_OPS, GaussianBlur,
        *APPLY_OPS, *POINT_OPS,
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
