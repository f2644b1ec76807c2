"""Every sample of a ``TarShards`` has every field: checked once, on the index,
when the dataset is made.

The fields a dataset's samples have are the union of those its indexes name.
A sample lacking one of them (an ``.cls`` left out when its sample was
written, a shard cut where a sample's last members were) is an error naming
the shard, the sample's key, the missing field and the fields it has, unless
that field is in ``optional_fields``: then the item holds None for it. An
optional field is in every item, None where its sample lacks it, so that the
items of one batch have the same keys. The check is a pass over the index
(no read of the shards), so a sample never reaches a model without a field
its batch's other samples have.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ._tar_index import Sample, ShardError, ShardIndex

__all__ = ["check_fields", "checked_optional"]

_BLOCK = 512


def checked_optional(optional_fields: Any) -> tuple[str, ...]:
    """``optional_fields=``: field names (extensions in lower case) a sample may lack."""
    allowed = "a tuple of fields' extensions in lower case, as samples name them ('cls', 'txt')"
    if isinstance(optional_fields, str | bytes) or not isinstance(optional_fields, Iterable):
        raise TypeError(f"optional_fields should be {allowed}, but got "
                        f"optional_fields={optional_fields!r}")  # fmt: skip
    names = tuple(optional_fields)
    for name in names:
        if not isinstance(name, str) or not name or name != name.lower() or name.startswith("__"):
            raise ValueError(f"optional_fields should be {allowed}, but got "
                             f"optional_fields={optional_fields!r} (with {name!r})")  # fmt: skip
    return names


def check_fields(indexes: Sequence[ShardIndex], optional: tuple[str, ...]) -> None:
    """Raise ``ShardError`` for the first sample (in the dataset's order) lacking a
    field that other samples have and that is not ``optional``."""
    kinds: dict[frozenset[str], list[Any]] = {}  # fields -> [count, shard, first sample]
    for index in indexes:
        for sample in index.samples:
            fields = frozenset(extension for extension, _, _ in sample.fields)
            kind = kinds.get(fields)
            if kind is None:
                kinds[fields] = [1, index.shard, sample]
            else:
                kind[0] += 1
    if len(kinds) < 2:
        return
    every = frozenset().union(*kinds)
    required = every.difference(optional)
    total = sum(kind[0] for kind in kinds.values())
    for fields, (_, shard, sample) in kinds.items():
        missing = sorted(required - fields)
        if missing:
            raise _missing(shard, sample, missing[0], kinds, total)


def _missing(
    shard: str, sample: Sample, field: str, kinds: dict[frozenset[str], list[Any]], total: int
) -> ShardError:
    having = sum(count for fields, (count, _, _) in kinds.items() if field in fields)
    present = ", ".join(repr(extension) for extension, _, _ in sample.fields)
    start = min(offset for _, offset, _ in sample.fields) - _BLOCK
    return ShardError(
        shard,
        start,
        f"sample {sample.key!r} has no {field!r} field (it has {present}), while "
        f"{having} of the dataset's {total} samples have one: pass "
        f"optional_fields=({field!r},) to read it as None",
    )
