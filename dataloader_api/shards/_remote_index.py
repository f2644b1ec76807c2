"""Companion index files of remote shards: a shard with a DALI ``.idx`` beside
it (``train-000001.idx`` at the same URL or in the same bucket) is indexed
from that small file and the end of the shard, without downloading the
shard.

Two small requests per shard, the first time: the index file, then the
shard from its last indexed member's header (``Range: bytes=H-``), or from
the first gap between indexed members if there is one, whose reply gives
the shard's length and the bytes ``_coverage.check_coverage`` reads: the last
member's header must be that member's, a gap must hold only headers of
members an index leaves out (pax, long names, directories), and the last
member must be followed by the tar's end-of-archive block. An index that
does not cover its whole shard is an error when the dataset is made. A
server that ignores the range sends the whole shard, which is then read as
it is. An index file that is absent (HTTP 404, or 401/403 as object stores
answer for a key they do not show) means "no companion"; after one absent
the dataset stops asking.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..io._base import run_sync
from ..io._errors import FetchError
from ..io._locations import Locations
from ._companion import companion_path, dali_path, parse_members
from ._coverage import check_coverage, first_read
from ._tar_index import ShardError, ShardIndex, group_members
from ._validators import Tail

__all__ = ["RemoteCompanions"]

_ABSENT = (401, 403, 404)


class RemoteCompanions:
    """The companion index files of an ``io`` dataset's shards, read with its client."""

    def __init__(self, source: Any) -> None:
        self.source = source
        self.asking = True
        located = [source.locations.of(s) for s in range(len(source))]
        self._files = self._beside(source, [_beside(at, companion_path) for at in located])
        dali = [_beside(at, dali_path) for at in located]
        # DALI's name (up to the file name's first dot) when no other shard has it
        self._dali = [d if dali.count(d) == 1 else None for d in dali]
        self._dali_files = self._beside(source, [d or "" for d in dali])

    @staticmethod
    def _beside(source: Any, locations: list[str]) -> Any:
        files = copy.copy(source)  # the same options: headers, retries, credentials
        files.counters = source.counters  # their requests count as the dataset's
        files.locations = Locations(locations, owner="TarShards")
        return files

    def index(self, shard: int, name: str, allow_truncated: bool = False) -> ShardIndex | None:
        """Shard ``shard``'s index from its companion, or None (no companion)."""
        if not self.asking:
            return None
        folder, _, file_name = name.rpartition("/")
        tried = [(self._files, companion_path)]
        if self._dali[shard] is not None and self._dali[shard] != self._files.locations.of(shard):
            tried.append((self._dali_files, dali_path))
        text, shown = None, ""
        for files, named in tried:
            try:
                text = bytes(files[shard])
            except FetchError as error:
                if error.status in _ABSENT:
                    continue
                raise
            shown = f"{folder}/{named(file_name)}"
            break
        if text is None:
            self.asking = False
            return None
        members = parse_members(shown, text, None)
        end = max((data + size for _, _, data, size in members), default=0)
        tail = Tail(first_read(members), end, name)
        location = self.source.locations.of(shard)
        run_sync(self.source.read(shard, location, tail))
        if end > tail.size:
            raise ShardError(shown, 0, f"indexes bytes past the shard's {tail.size}")
        truncated = check_coverage(shown, name, members, tail.read, allow_truncated)
        samples = group_members(shown, members)
        return ShardIndex(name, tail.size, 0, samples, True, truncated, validator=tail.validator)


def _beside(location: str, named: Callable[[str], str]) -> str:
    """A companion's location: a URL's path (or an object key) ``named``."""
    if "://" not in location:
        return named(location)
    parts = urlsplit(location)
    return urlunsplit(parts._replace(path=named(parts.path)))
