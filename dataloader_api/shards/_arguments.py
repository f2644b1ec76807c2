"""The checks of ``TarShards``' arguments: each bad value is named with what is allowed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from . import _index_cache
from ._pattern import shard_list
from ._streamed import StreamedShards

__all__ = ["cache_folder", "check_bool", "check_bound", "remote_source", "shard_names"]

_REMOTE = ("http://", "https://")


def shard_names(shards: Any) -> list[str]:
    names = shard_list(shards)
    for name in names:
        if name.startswith("s3://"):
            raise ValueError(
                "shards: for an object store pass ObjectStoreDataset(url, keys=[...]) (its "
                f"endpoint, region and credentials), not the location {name!r}"
            )
    return names


def check_bound(name: str, value: Any, *, none: bool) -> None:
    if value is None and none:
        return
    allowed = "a positive int" + (" or None" if none else "")
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} should be {allowed}, but got {name}={value!r}")
    if value < 1:
        raise ValueError(f"{name} should be {allowed}, but got {name}={value!r}")


def remote_source(names: list[str], bounds: tuple[int, int | None]) -> StreamedShards | None:
    remote = [n.startswith(_REMOTE) for n in names]
    if not any(remote):
        return None
    if not all(remote):
        raise ValueError(
            "shards should be all local paths or all http(s):// URLs, but got both: "
            f"{names[remote.index(False)]!r} and {names[remote.index(True)]!r}"
        )
    from ..io import HttpDataset

    return StreamedShards(HttpDataset(names), *bounds)


def cache_folder(index_cache: Any) -> Path | None:
    if index_cache is None or index_cache is True:
        return _index_cache.default_folder()
    if index_cache is False:
        return None
    if isinstance(index_cache, str | os.PathLike):
        return Path(index_cache)
    raise TypeError(
        "index_cache should be a folder, None or True (the user cache folder), or False "
        f"(keep no index), but got index_cache={index_cache!r}"
    )


def check_bool(name: str, value: Any, meaning: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} should be True or False ({meaning}), but got {name}={value!r}")
    return value
