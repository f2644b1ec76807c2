"""``TarShards``: a map-style dataset over WebDataset-convention tar shards."""

from __future__ import annotations

import bisect
import os
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .._datasets import Dataset
from ..io._base import AsyncReadDataset
from ..io._errors import FetchError, relabeled
from ..io._locations import item_index
from . import _index_cache
from ._arguments import cache_folder, check_bool, check_bound, remote_source, shard_names
from ._companion import dali_path, read_companion
from ._coverage import check_header
from ._decoders import checked_decoders
from ._fields import check_fields, checked_optional
from ._local_files import ShardFiles
from ._pattern import ShardsArg
from ._remote_index import RemoteCompanions
from ._streamed import StreamedShards
from ._tar_index import ShardError, ShardIndex, scan_shard, warn_truncated
from ._validators import current

__all__ = ["TarShards"]

_BLOCK = 512


class TarShards(Dataset[dict[str, Any]]):
    """The samples of WebDataset-convention tar shards, as a map-style dataset.

    ``shards`` is a brace pattern (``"train-{000000..000099}.tar"``, as
    webdataset writes it), a path, a list of paths, or a function returning
    one of those; local files, or ``http(s)://`` URLs. An ``io`` dataset whose
    item ``s`` is shard ``s`` (``HttpDataset`` with your headers and retries,
    ``ObjectStoreDataset`` for S3) works too. Each shard's headers are read
    once into an index of its samples; ``len()``, any sampler,
    ``distributed=True`` and ``state_dict()`` then work as for any map-style
    dataset. ``ShardSampler`` orders an epoch shard by shard.

    Item ``i`` is a dict like webdataset's: ``"__key__"`` (the members' common
    name), ``"__url__"`` (the shard) and one entry per field, keyed by its
    extension in lower case (``"jpg"``, ``"cls"``), holding its bytes, or
    what ``decoders[extension]`` makes of them (``"text"``, ``"int"``,
    ``"json"``, ``"bytes"`` or a function). A local sample is one read of its
    file, or with ``local_reads="shard"`` its shard is read whole, once, in one
    sequential read (for network file systems and cold disks; use it with
    ``ShardSampler``). A remote shard is requested once, with one streamed
    request (a read cut short resumes where it stopped). A shard read whole
    is kept in memory while its samples are read, at most
    ``max_shards_in_memory`` of them and at most ``max_bytes_in_memory``
    bytes of them (None: no bound in bytes) at a time, the least recently
    used going first; a sample is handed out as soon as its own bytes have
    arrived.

    A shard with a companion index file from NVIDIA DALI's ``wds2idx.py``
    (``train-000001.idx`` beside ``train-000001.tar``, local or remote) is
    indexed from it (a remote one with two small requests, not a download),
    each field's tar header then checked as the field is read. Shard indexes are
    kept between runs in ``index_cache`` (a folder; by
    default ``$DATALOADER_CACHE_DIR/tar-index`` or the user's cache folder,
    ``~/.cache/dataloader-api/tar-index``; ``False`` keeps none), each valid
    while a local shard's size and modification time are unchanged, and a
    remote shard's length and ETag (else Last-Modified; checked with one small
    range request when the dataset is made: a shard replaced by one of the same
    length is indexed again; a server sending neither leaves the length, with a
    warning).

    Errors: a local shard that does not exist raises ``FileNotFoundError``
    naming it, a remote one the ``io`` dataset's ``FetchError`` (its message
    starting ``shard 1:``, its ``index`` the shard's); a corrupt or
    cut-short shard, a field twice in a sample, or a shard changed since it
    was indexed raise ``ShardError`` naming the shard and the offset. No
    sample is ever silently dropped: a shard must end with tar's
    end-of-archive block (one cut where a member's header would start parses,
    short of its later samples; ``allow_truncated=True`` reads such shards as
    they are, with a warning, as webdataset and ``tarfile`` do), a companion
    index must cover its whole shard, and a sample lacking a field that
    other samples have is an error naming shard, key and field, when the
    dataset is made, unless the field is in ``optional_fields`` (the item
    then holds None for it).
    """

    def __init__(
        self,
        shards: ShardsArg | AsyncReadDataset,
        *,
        decoders: Mapping[str, Any] | None = None,
        index_cache: str | os.PathLike[str] | bool | None = None,
        max_shards_in_memory: int = 8,
        max_bytes_in_memory: int | None = None,
        local_reads: str | None = None,
        allow_truncated: bool = False,
        optional_fields: Iterable[str] = (),
    ) -> None:
        self._decoders = checked_decoders(decoders)
        meaning = "read shards without their end-of-archive block as they are"
        self.allow_truncated = check_bool("allow_truncated", allow_truncated, meaning)
        self.optional_fields = checked_optional(optional_fields)
        check_bound("max_bytes_in_memory", max_bytes_in_memory, none=True)
        if local_reads not in (None, "sample", "shard"):
            raise ValueError(
                'local_reads should be "sample" (one read per sample, the default) or '
                f'"shard" (each shard read whole, once), but got local_reads={local_reads!r}'
            )
        check_bound("max_shards_in_memory", max_shards_in_memory, none=False)
        self.max_shards_in_memory = max_shards_in_memory
        self.max_bytes_in_memory = max_bytes_in_memory
        bounds = (max_shards_in_memory, max_bytes_in_memory)
        self._cache = cache_folder(index_cache)
        if isinstance(shards, AsyncReadDataset):
            self._remote: StreamedShards | None = StreamedShards(shards, *bounds)
            names = self._remote.names
        else:
            names = shard_names(shards)  # a function given as shards is called once
            self._remote = remote_source(names, bounds)
        if self._remote is not None and local_reads == "sample":
            raise ValueError(
                'local_reads="sample" is for local shards: remote ones are always read '
                "whole, one request each (leave local_reads out)"
            )
        self._companions = RemoteCompanions(self._remote.source) if self._remote else None
        self._warned_length_only = False
        dali = Counter(dali_path(name) for name in names)  # DALI's names shared by shards
        self._shared = [dali[dali_path(name)] > 1 for name in names]
        self._now = self._remote_now(names)
        self._indexes: tuple[ShardIndex, ...] = tuple(
            self._indexed(s, name) for s, name in enumerate(names)
        )
        self._companions = self._now = None  # what indexing needed: not kept, not pickled
        for index in self._indexes:
            if index.truncated:  # allow_truncated=True: from headers, a companion or the cache
                warn_truncated(index)
        check_fields(self._indexes, self.optional_fields)
        self._streams = self._remote
        if local_reads == "shard" and self._remote is None:
            self._streams = StreamedShards(ShardFiles(self._indexes), *bounds)
        ends, total = [], 0
        for index in self._indexes:
            total += len(index.samples)
            ends.append(total)
        self._ends = ends

    def _key(self, shard: int, name: str) -> str:
        """What names shard ``shard`` in the index cache: its URL (without user info or
        query: no credential is kept) or absolute path."""
        if self._remote is not None:
            source = self._remote.source
            return _index_cache.object_key(source, source.locations.of(shard))
        return os.path.abspath(name)

    def _indexed(self, shard: int, name: str) -> ShardIndex:
        """From the cache, else (local) a companion index file, else the shard's headers."""
        try:
            return self._index_of(shard, name)
        except FetchError as error:  # the io dataset's item is a shard here
            raise relabeled(error, f"shard {shard}") from None

    def _index_of(self, shard: int, name: str) -> ShardIndex:
        cache, remote, key = self._cache, self._remote, self._key(shard, name)
        status = None
        if remote is None:
            try:
                found = os.stat(name)
                status = (found.st_size, found.st_mtime_ns)
            except OSError:
                status = (-1, -1)  # scan_shard says what is wrong
        if cache is not None:
            kept = _index_cache.load(cache, key, name, status)
            if kept is not None and remote is not None:
                kept = self._unchanged(shard, kept)
            if kept is not None and (self.allow_truncated or not kept.truncated):
                return kept  # a truncated one is indexed again: that raises
        if status is not None and status[0] >= 0:
            shared = self._shared[shard]
            companion = read_companion(name, *status, self.allow_truncated, shared)
            if companion is not None:
                return companion
        companions, allowed = self._companions, self.allow_truncated
        index = companions.index(shard, name, allowed) if companions else None
        if index is None:
            index = remote.scan(shard, allowed) if remote else scan_shard(name, allowed)
        if cache is not None:
            if remote is not None and index.validator is None:
                self._length_only(index)
            _index_cache.store(cache, key, index)
        return index

    def _remote_now(self, names: list[str]) -> dict[int, tuple[int, str | None]] | None:
        """The length and validator now of each remote shard with a kept index (asked
        for all at once, when the dataset is made)."""
        if self._remote is None or self._cache is None:
            return None
        kept = [
            (s, _index_cache.load(self._cache, self._key(s, n), n, None))
            for s, n in enumerate(names)
        ]
        asked = [(s, index.shard, index.size) for s, index in kept if index is not None]
        try:
            return current(self._remote.source, asked) if asked else {}
        except FetchError as error:  # the io dataset's item is a shard here
            raise relabeled(error, f"shard {error.index}") from None

    def _unchanged(self, shard: int, kept: ShardIndex) -> ShardIndex | None:
        """A remote shard's kept index if the shard is the one it was made from (its
        length, and its ETag or Last-Modified, asked for with one range request)."""
        assert self._remote is not None
        now = self._now.get(shard) if self._now is not None else None
        if now is None:  # kept by another process meanwhile
            now = current(self._remote.source, [(shard, kept.shard, kept.size)])[shard]
        size, validator = now
        if size != kept.size or validator != kept.validator:
            return None  # replaced (even by one of the same length): indexed again
        if validator is None:
            self._length_only(kept)
        return kept

    def _length_only(self, index: ShardIndex) -> None:
        if not self._warned_length_only:
            self._warned_length_only = True
            warnings.warn(
                f"TarShards: the server sends neither ETag nor Last-Modified for "
                f"{index.shard!r} (and maybe other shards): a kept index is checked against "
                "the shard's length only, so a shard replaced by one of the same length "
                "would be read with the old index. Pass index_cache=False to index the "
                "shards in each run",
                RuntimeWarning,
                stacklevel=4,
            )

    def read_natively(self, open_reader: Callable[..., Any] | None) -> None:
        """Stream remote shards through a backend's reader (``open_reader``, the rust
        backend's), or through the reference's client (None); the loader calls it
        when an epoch starts. Local shards are read where they are either way."""
        if self._streams is not None:
            self._streams.read_natively(open_reader)

    @property
    def remote(self) -> bool:
        """Whether shards stream over the network."""
        return self._remote is not None

    @property
    def shards_in_memory(self) -> int | None:
        """How many of the largest shards the bounds keep at once (at least one), or
        None when samples are read one by one (local shards, ``local_reads="sample"``)."""
        if self._streams is None:
            return None
        largest = max((index.size for index in self._indexes), default=1)
        kept = self.max_shards_in_memory
        if self.max_bytes_in_memory is not None:
            kept = min(kept, self.max_bytes_in_memory // max(largest, 1))
        return max(kept, 1)

    def memory(self) -> tuple[int, int]:
        """``(now, peak)``: bytes of shard buffers alive now (kept, or pushed out but
        still read from), and the most there were at once; ``(0, 0)`` when samples
        are read one by one."""
        if self._streams is None:
            return 0, 0
        now = self._streams.in_memory()
        return now, max(now, self._streams.peak_bytes)

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
        item: dict[str, Any] = {"__key__": sample.key, "__url__": shard_index.shard}
        start, length = sample.span
        checked = shard_index.from_companion  # each field's tar header is checked too
        if self._streams is None:
            before = _BLOCK if checked else 0
            data = _read_span(shard_index, start - before, length + before)
            start -= before
            fields = [(e, data[o - start : o - start + n]) for e, o, n in sample.fields]
            headers = [data[o - start - _BLOCK : o - start] for _, o, _ in sample.fields]
        else:  # taken as soon as this sample's bytes have arrived
            try:
                validator = shard_index.validator
                expected = None if validator is None else (validator, self._replaced(shard))
                streamed = self._streams.streamed(
                    shard,
                    shard_index.size,
                    self._mismatch(shard),
                    len(shard_index.samples),
                    expected,
                )
                fields = [(e, streamed.take(o, o + n)) for e, o, n in sample.fields]
                if checked:
                    headers = [streamed.take(o - _BLOCK, o) for _, o, _ in sample.fields]
            except FetchError as error:  # the io dataset's item is a shard here
                raise relabeled(error, f"shard {shard}") from None
        if checked:
            for header, (extension, offset, size) in zip(headers, sample.fields, strict=True):
                check_header(shard_index.shard, header, offset, size, f"{sample.key}.{extension}")
        for extension, field in fields:
            decoder = self._decoders.get(extension)
            item[extension] = decoder(field) if decoder is not None else field
        for extension in self.optional_fields:  # in every item, None where it is missing
            item.setdefault(extension, None)
        return item

    def _mismatch(self, shard: int) -> Callable[[int], ShardError]:
        """What a remote shard of another size than indexed raises (its index is forgotten)."""
        indexed = self._indexes[shard]

        def changed(size: int) -> ShardError:
            if self._cache is not None:
                _index_cache.forget(self._cache, self._key(shard, indexed.shard))
            return ShardError(
                indexed.shard,
                0,
                f"changed since it was indexed ({indexed.size} bytes then, {size} now): "
                "make the dataset again (its index is no longer kept)",
            )

        return changed

    def _replaced(self, shard: int) -> Callable[[str], ShardError]:
        """What a remote shard with another validator than indexed raises (replaced by
        one of the same length since the dataset was made; its index is forgotten)."""
        indexed = self._indexes[shard]

        def replaced(validator: str) -> ShardError:
            if self._cache is not None:
                _index_cache.forget(self._cache, self._key(shard, indexed.shard))
            return ShardError(
                indexed.shard,
                0,
                f"replaced since it was indexed (validator {indexed.validator!r} then, "
                f"{validator!r} now, the same length): make the dataset again (its index "
                "is no longer kept)",
            )

        return replaced

    def __repr__(self) -> str:
        return f"TarShards({len(self._indexes)} shards, {len(self)} samples)"


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
