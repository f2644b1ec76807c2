"""The decoders ``TarShards(decoders=...)`` names, and the check of that argument."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["DECODERS", "checked_decoders"]


def _text(data: bytes) -> str:
    return data.decode("utf-8")


def _int(data: bytes) -> int:
    return int(data.decode("utf-8").strip())


def _json(data: bytes) -> Any:
    return json.loads(data)


def _bytes(data: bytes) -> bytes:
    return data


# The decoders named by a string in ``decoders=``.
DECODERS: dict[str, Callable[[bytes], Any]] = {
    "bytes": _bytes,
    "text": _text,
    "int": _int,
    "json": _json,
}


def checked_decoders(decoders: Any) -> dict[str, Callable[[bytes], Any]]:
    if decoders is None:
        return {}
    if not isinstance(decoders, Mapping):
        raise TypeError(
            "decoders should map a field's extension to a decoder, for example "
            f"{{'cls': 'int', 'json': 'json'}}, but got decoders={decoders!r}"
        )
    checked = {}
    for extension, decoder in decoders.items():
        if not isinstance(extension, str) or not extension or extension != extension.lower():
            raise ValueError(
                "decoders: each key should be a field's extension in lower case, as samples "
                f"name them ('jpg', 'cls'), but got {extension!r}"
            )
        if isinstance(decoder, str):
            if decoder not in DECODERS:
                raise ValueError(
                    f"decoders[{extension!r}]={decoder!r} is not a known decoder: use one of "
                    f"{sorted(DECODERS)} or a function of the field's bytes"
                )
            decoder = DECODERS[decoder]
        elif not callable(decoder):
            raise TypeError(
                f"decoders[{extension!r}] should be a decoder's name or a function of the "
                f"field's bytes, but got {decoder!r}"
            )
        checked[extension] = decoder
    return checked
