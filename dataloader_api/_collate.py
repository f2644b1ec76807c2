"""Collate functions with PyTorch's structural rules and NumPy output.

``default_collate`` follows ``torch.utils.data.default_collate`` case for case
(mappings, namedtuples, tuples become lists, sequences, numbers, strings,
bytes), but stacks NumPy arrays into NumPy arrays, so torch stays optional.
Torch tensors are stacked with torch. ``torch_collate`` is torch's own
``default_collate`` for users who want tensors everywhere.
"""

from __future__ import annotations

import collections.abc
import copy
from typing import TYPE_CHECKING, Any

from ._common.lazy_import import LazyModule

if TYPE_CHECKING:
    import numpy as np
else:  # NumPy is imported when first used (_common.lazy_import)
    np = LazyModule("numpy", globals(), "np")


__all__ = ["default_collate", "default_convert", "torch_collate"]

_BAD_TYPE = (
    "default_collate: batch must contain numpy arrays, tensors, numbers, dicts or lists; found {}"
)
_BAD_ARRAY_DTYPE = "default_collate: cannot stack numpy arrays of dtype {}; use a custom collate_fn"


def _is_tensor(value: Any) -> bool:
    kind = type(value)
    return kind.__module__.startswith("torch") and hasattr(value, "is_floating_point")


def _is_namedtuple(value: Any) -> bool:
    return isinstance(value, tuple) and hasattr(value, "_fields")


def _rebuild_mapping(elem: Any, values: dict[Any, Any]) -> Any:
    if isinstance(elem, collections.abc.MutableMapping):
        # A copy keeps the user's mapping type and any extra state it carries.
        clone = copy.copy(elem)
        clone.update(values)
        return clone
    try:
        return type(elem)(values)
    except TypeError:
        return values


def _rebuild_sequence(elem: Any, items: list[Any]) -> Any:
    """``items`` in ``elem``'s sequence type when it can be built from a list."""
    sequence_type: Any = type(elem)
    try:
        return sequence_type(items)
    except TypeError:
        return items


def default_collate(batch: Any) -> Any:
    """Stack a list of samples into a batch with
    [torch's rules](https://pytorch.org/docs/stable/data.html#torch.utils.data.default_collate),
    into NumPy: mappings collate per key, namedtuples per field, tuples and
    other sequences per position (as lists), ints into ``int64`` arrays, floats
    into ``float64``, bools into ``bool``, NumPy arrays and scalars keep their
    dtype, strings and bytes stay lists, torch tensors are stacked with torch.

    Unlike torch's, mappings whose keys differ within a batch raise
    ``KeyError`` (naming the key and the position) whichever has more: torch
    takes the first mapping's keys, so a key only later ones have is dropped.

    Args:
        batch: The samples of one batch, all of the same structure.
    """
    if not isinstance(batch, collections.abc.Sequence) or isinstance(batch, str | bytes):
        raise TypeError(
            f"default_collate: batch must be a sequence of samples, got {type(batch).__name__}"
        )
    if len(batch) == 0:
        raise ValueError("default_collate: cannot collate an empty batch")
    elem = batch[0]
    if _is_tensor(elem):
        return _stack_tensors(batch, elem)
    if isinstance(elem, np.ndarray):
        if elem.dtype.kind in "OUSV":
            raise TypeError(_BAD_ARRAY_DTYPE.format(elem.dtype))
        return np.stack(batch, axis=0)
    if isinstance(elem, np.bool_ | np.number):
        return np.array(batch, dtype=elem.dtype)
    if isinstance(elem, bool):
        return np.array(batch, dtype=np.bool_)
    if isinstance(elem, int):
        return np.array(batch, dtype=np.int64)
    if isinstance(elem, float):
        return np.array(batch, dtype=np.float64)
    if isinstance(elem, str | bytes):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        _check_same_keys(batch, elem)
        return _rebuild_mapping(
            elem, {key: default_collate([d[key] for d in batch]) for key in elem}
        )
    if _is_namedtuple(elem):
        return type(elem)(*(default_collate(list(samples)) for samples in zip(*batch, strict=True)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if not all(len(e) == size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = [list(samples) for samples in zip(*batch, strict=True)]
        if isinstance(elem, tuple):
            return [default_collate(samples) for samples in transposed]
        return _rebuild_sequence(elem, [default_collate(samples) for samples in transposed])
    raise TypeError(_BAD_TYPE.format(type(elem)))


class CollateKeyError(KeyError):
    """The mappings of one batch have different keys. A ``KeyError``, as torch's
    ``default_collate`` raises for a key of ``batch[0]`` missing in another
    (a key only the others have, torch drops without a word)."""

    def __str__(self) -> str:
        return str(self.args[0])


def _check_same_keys(batch: Any, elem: Any) -> None:
    keys = elem.keys()
    for position, other in enumerate(batch):
        if position and (not isinstance(other, collections.abc.Mapping) or other.keys() != keys):
            if not isinstance(other, collections.abc.Mapping):
                raise TypeError(f"default_collate: batch[0] is a mapping but batch[{position}] "
                                f"is a {type(other).__name__}")  # fmt: skip
            missing = [key for key in elem if key not in other]
            extra = [key for key in other if key not in keys]
            said = [f"lacks {missing!r}" if missing else "", f"has {extra!r}" if extra else ""]
            raise CollateKeyError(
                f"default_collate: batch[{position}] {' and '.join(s for s in said if s)} "
                f"where batch[0] has keys {list(keys)!r}: the items of one batch must have "
                "the same keys (torch would fail on a missing one and drop an extra one "
                "silently); give every item every key (None for a missing value, as "
                "TarShards(optional_fields=...) does) or pass your own collate_fn"
            )


def default_convert(data: Any) -> Any:
    """Convert one sample when batching is off (``batch_size=None``).

    Like torch's, it walks mappings, namedtuples and sequences; NumPy arrays
    and tensors are returned as they are (torch would turn arrays into tensors).
    """
    if isinstance(data, str | bytes | np.ndarray) or _is_tensor(data):
        return data
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {key: default_convert(data[key]) for key in data})
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence):
        return _rebuild_sequence(data, [default_convert(d) for d in data])
    return data


def _stack_tensors(batch: Any, elem: Any) -> Any:
    import torch

    # torch's own checks and words (its tests match them): stack cannot batch these
    for kind, odd in (("nested", elem.is_nested), ("sparse", elem.layout in _sparse_layouts())):
        if odd:
            raise RuntimeError(
                f"Batches of {kind} tensors are not currently supported by the default "
                "collate_fn; please provide a custom collate_fn to handle them appropriately."
            )
    return torch.stack(list(batch), 0)


def _sparse_layouts() -> set[Any]:
    import torch

    names = ("sparse_coo", "sparse_csr", "sparse_bsr", "sparse_csc", "sparse_bsc")
    return {getattr(torch, name) for name in names if hasattr(torch, name)}


def torch_collate(batch: Any) -> Any:
    """``torch.utils.data.default_collate`` itself: NumPy arrays and numbers become
    tensors. Needs torch.

    Args:
        batch: The samples of one batch.
    """
    try:
        from torch.utils.data import default_collate as torch_default_collate
    except ImportError as error:
        raise ImportError(
            "collate_fn=torch_collate needs torch; install it with `pip install torch`"
        ) from error
    return torch_default_collate(batch)
