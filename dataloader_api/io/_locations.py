"""Where each item lives: a list, a template filled from per-item columns, or a
function of the index. One ``Locations`` per dataset; ``of(index)`` is the
item's path, URL or key."""

from __future__ import annotations

import operator
import string
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

__all__ = ["Locations", "item_index"]


def item_index(index: Any, length: int, owner: str) -> int:
    """``index`` as a position in ``range(length)`` (negative ones count from the end)."""
    try:
        position = operator.index(index)
    except TypeError:
        raise TypeError(
            f"{owner} indices must be integers, not {type(index).__name__} ({index!r})"
        ) from None
    if position < 0:
        position += length
    if not 0 <= position < length:
        raise IndexError(f"{owner} index {index!r} is out of range for {length} items")
    return position


def _is_column(value: Any) -> bool:
    return not isinstance(value, (str, bytes, bytearray)) and hasattr(value, "__len__")


class Locations:
    """The location of each item.

    - a sequence of strings: item ``i`` is ``locations[i]``;
    - a template (a ``str`` with ``{index}`` and ``{name}`` fields, in
      ``str.format`` syntax): each ``name`` in ``columns`` is either a
      per-item sequence or one value for every item. With ``quote=True`` (URLs)
      the string values of per-item columns are percent-encoded (``/`` kept);
    - a function of the index returning a string, with ``length``.
    """

    def __init__(
        self,
        locations: Sequence[str] | str | Callable[[int], str],
        *,
        columns: Mapping[str, Any] | None = None,
        length: int | None = None,
        quote: bool = False,
        owner: str = "dataset",
    ) -> None:
        self._owner = owner
        self._quote = quote
        self._columns: dict[str, Sequence[Any]] = {}
        self._constants: dict[str, Any] = {}
        self._template: str | None = None
        self._function: Callable[[int], str] | None = None
        self._list: Sequence[str] | None = None
        if columns is not None and not isinstance(locations, str):
            raise TypeError(
                f"{owner}: columns= fills a template; locations={_short(locations)} is not "
                "a str template"
            )
        if length is not None and (
            isinstance(length, bool) or not isinstance(length, int) or length < 0
        ):
            raise ValueError(f"{owner}: length must be an int >= 0, got {length!r}")
        if isinstance(locations, str):
            self._template = locations
            self.length = self._init_template(locations, columns or {}, length)
        elif callable(locations):
            if length is None:
                raise TypeError(
                    f"{owner}: locations={_short(locations)} is a function of the index: "
                    "pass length= (the number of items)"
                )
            self._function = locations
            self.length = length
        elif _is_column(locations):
            for i, location in enumerate(locations):
                if not isinstance(location, str):
                    raise TypeError(
                        f"{owner}: locations[{i}] must be a str, got "
                        f"{type(location).__name__} ({location!r})"
                    )
            if length is not None and length != len(locations):
                raise ValueError(
                    f"{owner}: length={length} but locations has {len(locations)} items"
                )
            self._list = locations
            self.length = len(locations)
        else:
            raise TypeError(
                f"{owner}: locations must be a sequence of str, a str template or a "
                f"function of the index, got {type(locations).__name__} ({locations!r})"
            )

    def _init_template(self, template: str, columns: Mapping[str, Any], length: int | None) -> int:
        owner = self._owner
        fields = {name for _, name, _, _ in string.Formatter().parse(template) if name}
        for name in fields:
            root = name.split(".")[0].split("[")[0]
            if root != "index" and root not in columns:
                raise ValueError(
                    f"{owner}: the template {template!r} uses {{{root}}}, which is not in "
                    f"columns= ({sorted(columns)!r}) and is not 'index'"
                )
        for name, value in columns.items():
            if name == "index":
                raise ValueError(f"{owner}: 'index' is the item's index, not a column")
            if name not in {f.split(".")[0].split("[")[0] for f in fields}:
                raise ValueError(
                    f"{owner}: columns[{name!r}] is not used by the template {template!r}"
                )
            if _is_column(value):
                self._columns[name] = value
            else:
                self._constants[name] = value
        lengths = {name: len(column) for name, column in self._columns.items()}
        if length is None and not lengths:
            raise TypeError(
                f"{owner}: the template {template!r} has no per-item column: pass length="
            )
        expected = length if length is not None else next(iter(lengths.values()))
        for name, size in lengths.items():
            if size != expected:
                raise ValueError(
                    f"{owner}: columns[{name!r}] has {size} items, expected {expected} "
                    f"({'length=' if length is not None else 'the other columns'})"
                )
        if expected:
            self.of(0)  # a bad format spec fails now, not in a worker
        return expected

    def __len__(self) -> int:
        return self.length

    def of(self, position: int) -> str:
        """The location of item ``position`` (already in ``range(len(self))``)."""
        if self._list is not None:
            return self._list[position]
        if self._function is not None:
            location = self._function(position)
            if not isinstance(location, str):
                raise TypeError(
                    f"{self._owner}: the locations function returned "
                    f"{type(location).__name__} ({location!r}) for index {position}; "
                    "it must return a str"
                )
            return location
        assert self._template is not None
        values = dict(self._constants)
        for name, column in self._columns.items():
            value = column[position]
            if hasattr(value, "item") and not isinstance(value, str):
                value = value.item()  # NumPy scalars format as Python ones
            if self._quote and isinstance(value, str):
                value = quote(value, safe="/")
            values[name] = value
        try:
            return self._template.format(index=position, **values)
        except (ValueError, KeyError, IndexError, AttributeError) as error:
            raise ValueError(
                f"{self._owner}: the template {self._template!r} could not be filled for "
                f"index {position}: {error}"
            ) from None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
