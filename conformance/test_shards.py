"""Property 15: remote tar shards give, on the backend, the samples Python's
``tarfile`` reads from the same shards.

Hypothesis draws shards (samples of one to three fields, declared
``optional_fields`` and so None where a sample lacks one, of random sizes,
empty ones included), the offset at which the server cuts each shard's first reply (a
read that must resume where it stopped), batch size, shuffling and 1 to 3
workers. ``TarShards`` over the loopback server, with its indexes from the
cache so that the epoch streams every shard, gives each batch the samples
``tarfile`` reads, in the order of the calling thread's sampler. A backend
that offers ``open_reader`` streams the shards natively; the others run the
reference (Python's client on the io datasets' event loop).
"""

from __future__ import annotations

import io
import tarfile
import tempfile
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from dataloader_api import DataLoader
from dataloader_api.io import HttpDataset, RetryPolicy
from dataloader_api.io.loopback import LoopbackServer, Reset
from dataloader_api.shards import TarShards

# A shard: its samples, each a list of field sizes (jpg, cls, json).
samples = st.lists(st.integers(0, 3000), min_size=1, max_size=3)
shards = st.lists(st.lists(samples, min_size=1, max_size=5), min_size=1, max_size=3)
EXTENSIONS = ("jpg", "cls", "json")


def write_shards(drawn: list[list[list[int]]]) -> dict[str, bytes]:
    objects = {}
    for s, shard in enumerate(drawn):
        data = io.BytesIO()
        with tarfile.open(fileobj=data, mode="w") as tar:
            for k, sizes in enumerate(shard):
                for extension, size in zip(EXTENSIONS, sizes, strict=False):
                    member = tarfile.TarInfo(f"{s}-{k:03d}.{extension}")
                    member.size = size
                    tar.addfile(member, io.BytesIO(bytes((s + k + i) % 251 for i in range(size))))
        objects[f"/s/{s}.tar"] = data.getvalue()
    return objects


def tarfile_samples(objects: dict[str, bytes], url: str) -> list[dict[str, Any]]:
    """Every shard's samples as tarfile reads them: the reference."""
    found: list[dict[str, Any]] = []
    for path, data in objects.items():
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            for member in tar.getmembers():
                key, _, extension = member.name.partition(".")
                if not found or found[-1]["__key__"] != key or found[-1]["__url__"] != url + path:
                    found.append({"__key__": key, "__url__": url + path})
                found[-1][extension] = tar.extractfile(member).read()  # type: ignore[union-attr]
    for sample in found:  # a field some samples lack: optional, None where it is missing
        for extension in EXTENSIONS:
            sample.setdefault(extension, None)
    return found


@given(
    drawn=shards,
    cuts=st.lists(st.floats(0.0, 0.99), min_size=3, max_size=3),
    batch_size=st.sampled_from([1, 3, 8]),
    shuffle=st.booleans(),
    workers=st.integers(1, 3),
)
def test_remote_shards_give_tarfiles_samples(backend, drawn, cuts, batch_size, shuffle, workers):
    objects = write_shards(drawn)
    retry = RetryPolicy(max_retries=3, backoff=0.001)
    with tempfile.TemporaryDirectory() as cache, LoopbackServer(objects) as server:
        urls = [server.url + path for path in objects]
        optional = {"optional_fields": EXTENSIONS}  # samples have 1 to 3 of them
        TarShards(HttpDataset(urls, retry=retry), index_cache=cache, **optional)  # indexes
        for path, cut in zip(objects, cuts, strict=False):
            server.fail(path, Reset(after=int(cut * len(objects[path]))))
        # Indexes from the cache: nothing is in memory, every shard streams.
        dataset = TarShards(HttpDataset(urls, retry=retry), index_cache=cache, **optional)
        expected = tarfile_samples(objects, server.url)
        order = DataLoader(range(len(expected)), batch_size=batch_size, shuffle=shuffle, seed=3)
        loader = DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, seed=3,
                            num_workers=workers, backend=backend, collate_fn=list)  # fmt: skip
        got = list(loader)
    assert got == [[expected[int(i)] for i in batch] for batch in order]
