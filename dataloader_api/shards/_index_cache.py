"""Shard indexes kept between runs: a tar's headers are read once per version
of the file, not once per process.

One JSON file per shard in the cache folder, named by a hash of the shard's
absolute path (or the object's identity: its URL without user info, query or
fragment, so that no credential, signature or token of a URL is ever written,
in a file's name or its content; headers are never part of it), valid while
a local shard's size and modification time are those it records; a remote
shard's entry is checked against its length and validator (ETag, else
Last-Modified) when the dataset is made (``_validators``), against its length
each time the shard is read, and forgotten when it differs. Written
to a temporary name then renamed, so that ranks indexing the same shards at
once never read half a file. The folder is ``index_cache=``,
else ``$DATALOADER_CACHE_DIR/tar-index``, else ``$XDG_CACHE_HOME`` or
``~/.cache``, then ``dataloader-api/tar-index``. A cache that cannot be read
is indexed again; one that cannot be written warns once and is not used.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ._tar_index import Sample, ShardIndex

__all__ = ["default_folder", "forget", "load", "object_key", "store"]

_VERSION = 3  # 2: companion indexes checked to cover their shard, truncated shards marked;
# 3: a remote shard's validator (ETag or Last-Modified) kept
_warned: set[str] = set()


def default_folder() -> Path:
    chosen = os.environ.get("DATALOADER_CACHE_DIR")
    if chosen:
        return Path(chosen) / "tar-index"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "dataloader-api" / "tar-index"


def object_key(source: Any, location: str) -> str:
    """What names a remote object in the cache: its URL (an object store's from its
    endpoint, bucket and key) without user info, query or fragment. Presigned URLs of
    one object share it; a query naming another object (``?version=``) does not tell
    them apart, and the length and validator checks then index it again."""
    url = source.object_url(location) if hasattr(source, "object_url") else str(location)
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def _entry(folder: Path, key: str) -> Path:
    name = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()
    return folder / f"{name[:32]}.json"


def load(folder: Path, key: str, shard: str, status: tuple[int, int] | None) -> ShardIndex | None:
    """The index kept for ``key`` (a local shard's absolute path, a URL), if it is
    for ``status`` (the shard's size and modification time now; None: unknown)."""
    try:
        with open(_entry(folder, key), encoding="utf-8") as file:
            data: dict[str, Any] = json.load(file)
        recorded = (data["size"], data["mtime_ns"])
        if (data["version"], data["path"]) != (_VERSION, key) or (
            status is not None and recorded != status
        ):
            return None
        samples = tuple(
            Sample(name, tuple((extension, offset, size) for extension, offset, size in fields))
            for name, fields in data["samples"]
        )
        validator = data["validator"]
        if validator is not None and not isinstance(validator, str):
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None  # absent, stale or unreadable: index again
    return ShardIndex(
        shard,
        *recorded,
        samples,
        bool(data["from_companion"]),
        bool(data["truncated"]),
        validator,
    )


def forget(folder: Path, key: str) -> None:
    """Drop ``key``'s entry (its shard changed)."""
    with contextlib.suppress(OSError):
        os.unlink(_entry(folder, key))


def store(folder: Path, key: str, index: ShardIndex) -> None:
    """Keep ``index`` for the next run; warns once per folder if it cannot."""
    data = {
        "version": _VERSION,
        "path": key,
        "size": index.size,
        "mtime_ns": index.mtime_ns,
        "samples": [[s.key, [list(field) for field in s.fields]] for s in index.samples],
        "from_companion": index.from_companion,  # its tar headers are checked as read
        "truncated": index.truncated,  # read as it is (allow_truncated=True) only
        "validator": index.validator,  # a remote shard's ETag or Last-Modified: checked
    }
    try:
        folder.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=folder, suffix=".tmp")
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as file:
                json.dump(data, file, separators=(",", ":"))
            os.replace(temporary, _entry(folder, key))
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError as error:
        if str(folder) not in _warned:
            _warned.add(str(folder))
            warnings.warn(
                f"TarShards: cannot keep shard indexes in {str(folder)!r} ({error}); each "
                "process reads the shards' headers again. Pass index_cache= a writable "
                "folder, or index_cache=False to not keep them",
                RuntimeWarning,
                stacklevel=4,
            )
