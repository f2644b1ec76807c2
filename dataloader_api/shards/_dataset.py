"""``TarShards``: a map-style dataset over WebDataset-convention tar shards."""

from __future__ import annotations

import bisect
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .._datasets import Dataset
from ..io._locations import item_index
from . import _index_cache
from ._pattern import ShardsArg, shard_list
from ._tar_index import ShardError, ShardIndex, scan_shard

__all__ = ["DECODERS", "TarShards"]


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


def _checked_decoders(decoders: Any) -> dict[str, Callable[[bytes], Any]]:
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


class TarShards(Dataset[dict[str, Any]]):
    """The samples of WebDataset-convention tar shards, as a map-style dataset.

    ``shards`` is a brace pattern (``"train-{000000..000099}.tar"``, as
    webdataset writes it), a path, a list of paths, or a function returning
    one of those; so far local files only. Each shard's headers are read once,
    when the dataset is made, into an index of its samples; ``len()``, any
    sampler, ``distributed=True`` and ``state_dict()`` then work as for any
    map-style dataset. ``ShardSampler`` orders an epoch shard by shard.

    Item ``i`` is a dict like webdataset's: ``"__key__"`` (the members' common
    name), ``"__url__"`` (the shard) and one entry per field, keyed by its
    extension in lower case (``"jpg"``, ``"cls"``), holding its bytes, or
    what ``decoders[extension]`` makes of them (``"text"``, ``"int"``,
    ``"json"``, ``"bytes"`` or a function). A sample's fields are read with
    one read of the file.

    Shard indexes are kept between runs in ``index_cache`` (a folder; by
    default ``$DATALOADER_CACHE_DIR/tar-index`` or the user's cache folder,
    ``~/.cache/dataloader-api/tar-index``; ``False`` keeps none), each valid
    while its shard's size and modification time are unchanged.

    Errors: a shard that does not exist raises ``FileNotFoundError`` naming
    it; a corrupt or cut-short shard, a field twice in a sample, or a shard
    changed since it was indexed raise ``ShardError`` naming the shard and the
    offset. No sample is ever silently dropped.
    """

    def __init__(
        self,
        shards: ShardsArg,
        *,
        decoders: Mapping[str, Any] | None = None,
        index_cache: str | os.PathLike[str] | bool | None = None,
    ) -> None:
        self._decoders = _checked_decoders(decoders)
        cache = _cache_folder(index_cache)
        self._indexes: tuple[ShardIndex, ...] = tuple(
            _indexed(s, cache) for s in shard_list(shards)
        )
        ends, total = [], 0
        for index in self._indexes:
            total += len(index.samples)
            ends.append(total)
        self._ends = ends

    @property
    def shards(self) -> tuple[str, ...]:
        return tuple(index.shard for index in self._indexes)

    @property
    def shard_sizes(self) -> tuple[int, ...]:
        """The number of samples in each shard, in ``shards``' order."""
        return tuple(len(index.samples) for index in self._indexes)

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    def locate(self, index: int) -> tuple[int, int]:
        """``(shard, sample within it)`` of item ``index``."""
        position = item_index(index, len(self), "TarShards")
        shard = bisect.bisect_right(self._ends, position)
        first = self._ends[shard - 1] if shard else 0
        return shard, position - first

    def __getitem__(self, index: int) -> dict[str, Any]:
        shard, position = self.locate(index)
        shard_index = self._indexes[shard]
        sample = shard_index.samples[position]
        start, length = sample.span
        data = _read_span(shard_index, start, length)
        item: dict[str, Any] = {"__key__": sample.key, "__url__": shard_index.shard}
        for extension, offset, size in sample.fields:
            field = data[offset - start : offset - start + size]
            decoder = self._decoders.get(extension)
            item[extension] = decoder(field) if decoder is not None else field
        return item

    def __repr__(self) -> str:
        return f"TarShards({len(self._indexes)} shards, {len(self)} samples)"


def _cache_folder(index_cache: Any) -> Path | None:
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


def _indexed(shard: str, cache: Path | None) -> ShardIndex:
    if cache is not None and (kept := _index_cache.load(cache, shard)) is not None:
        return kept
    index = scan_shard(shard)
    if cache is not None:
        _index_cache.store(cache, index)
    return index


def _read_span(shard: ShardIndex, start: int, length: int) -> bytes:
    """``length`` bytes at ``start`` of a shard that must be as it was indexed."""
    try:
        descriptor = os.open(shard.shard, os.O_RDONLY)
    except FileNotFoundError as error:
        raise FileNotFoundError(error.errno, "tar shard not found", shard.shard) from None
    try:
        status = os.fstat(descriptor)
        if (status.st_size, status.st_mtime_ns) != (shard.size, shard.mtime_ns):
            raise ShardError(
                shard.shard,
                start,
                f"changed since it was indexed ({shard.size} bytes then, {status.st_size} "
                "now, or a newer modification time): make the dataset again",
            )
        data = os.pread(descriptor, length, start)
    finally:
        os.close(descriptor)
    if len(data) != length:
        raise ShardError(shard.shard, start + len(data), "the file ends inside a sample")
    return data
