"""Companion index files (NVIDIA DALI's webdataset index, v1.2) next to local
shards: read instead of the shards' headers, checked, and refused loudly when
they are stale, of another version, or do not match their shard."""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

import pytest
from shard_files import make_shards
from test_shards import BACKENDS, private_cache  # noqa: F401 (a fixture)

from dataloader_api import DataLoader
from dataloader_api.io.loopback import IgnoreRange, LoopbackServer
from dataloader_api.shards import ShardError, ShardSampler, TarShards
from dataloader_api.shards import _dataset as dataset_module


def write_dali_index(shard: Path) -> Path:
    """The index DALI's tools/wds2idx.py writes for ``shard``, by its documented
    format: ``v1.2 <samples>``, then per sample ``ext offset size name`` per member."""
    lines: list[list[str]] = []
    last = None
    with tarfile.open(shard) as tar:
        for member in tar:
            if not member.isreg():
                continue
            base, _, extension = member.name.partition(".")
            if base != last:
                lines.append([])
                last = base
            lines[-1] += [extension, str(member.offset_data), str(member.size), member.name]
    index = shard.with_suffix(".idx")
    index.write_text(f"v1.2 {len(lines)}\n" + "".join(" ".join(line) + "\n" for line in lines))
    return index


@pytest.fixture
def no_scans(monkeypatch):
    """Reading a shard's headers fails the test: the index must come from elsewhere."""

    def refuse(name, *_):
        raise AssertionError(f"{name} was scanned")

    monkeypatch.setattr(dataset_module, "scan_shard", refuse)


def indexed_shards(tmp_path: Path, shards: int = 3, per_shard: int = 4) -> str:
    pattern = make_shards(tmp_path, shards, per_shard)
    for s in range(shards):
        write_dali_index(tmp_path / f"train-{s:03d}.tar")
    return pattern


def test_the_companion_index_is_read_instead_of_the_headers(tmp_path):
    pattern = indexed_shards(tmp_path)
    scanned = TarShards(pattern, index_cache=False)  # its headers: the companions say the same
    assert (tmp_path / "train-000.idx").exists()
    os.utime(tmp_path / "train-000.idx")  # newer than the shard either way
    expected = [scanned[i] for i in range(len(scanned))]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dataset_module, "scan_shard", lambda name, *_: pytest.fail(f"{name} scanned"))
        for reads in ("sample", "shard"):
            dataset = TarShards(pattern, index_cache=False, local_reads=reads)
            assert dataset.shard_sizes == (4, 4, 4)
            assert [dataset[i] for i in range(len(dataset))] == expected


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_companion_indexed_epoch_through_the_loader(tmp_path, backend, no_scans):
    dataset = TarShards(indexed_shards(tmp_path, 4, 5), decoders={"cls": "int"})
    sampler = ShardSampler(dataset, seed=3, window=2)
    loader = DataLoader(dataset, batch_size=3, sampler=sampler, num_workers=2, backend=backend)
    assert sorted(k for batch in loader for k in batch["cls"].tolist()) == list(range(20))


def test_an_index_older_than_its_shard_is_not_used(tmp_path):
    pattern = indexed_shards(tmp_path, 1, 3)
    stamp = os.stat(tmp_path / "train-000.tar").st_mtime_ns
    os.utime(tmp_path / "train-000.idx", ns=(stamp - 10**9, stamp - 10**9))
    with pytest.warns(RuntimeWarning, match="train-000.idx' is older than its shard"):
        dataset = TarShards(pattern, index_cache=False)
    assert len(dataset) == 3


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("v1.1 1\njpg 512 3 k.jpg\n", "index version 'v1.1': only v1.2"),
        ("hello\n", "not a DALI webdataset index"),
        ("v1.2 2\njpg 512 3 k.jpg\n", "says 2 samples but has 1 lines"),
        ("v1.2 1\njpg 512 3\n", "line 2: not '<extension> <offset> <size> <name>' groups"),
        ("v1.2 1\njpg 700 3 k.jpg\n", "line 2: member 'k.jpg' at 700"),
        ("v1.2 1\njpg 512 99999 k.jpg\n", "line 2: member 'k.jpg' at 512 \\(99999 bytes\\)"),
        ("v1.2 1\njpg x 3 k.jpg\n", "line 2: an offset or size that is not a number"),
    ],
)
def test_a_malformed_index_names_the_file_and_line(tmp_path, text, match):
    pattern = make_shards(tmp_path, 1, 2)
    (tmp_path / "train-000.idx").write_text(text)
    with pytest.raises(ShardError, match=match) as caught:
        TarShards(pattern, index_cache=False)
    assert caught.value.shard == str(tmp_path / "train-000.idx")


@pytest.mark.parametrize("reads", ["sample", "shard"])
def test_an_index_that_does_not_match_its_shard_is_an_error_when_read(tmp_path, reads):
    indexed_shards(tmp_path, 1, 3)
    lines = (tmp_path / "train-000.idx").read_text().splitlines()
    lines[1] = lines[1].replace("00000.", "00077.")  # sample 0 misnamed
    (tmp_path / "train-000.idx").write_text("\n".join(lines) + "\n")
    dataset = TarShards(str(tmp_path / "train-000.tar"), index_cache=False, local_reads=reads)
    with pytest.raises(ShardError, match=r"no tar header of member 's/00077\.jpg'"):
        dataset[0]
    assert dataset[1]["__key__"] == "s/00001"  # the lines that hold are read


def served_with_indexes(tmp_path: Path, shards: int, per_shard: int) -> dict[str, bytes]:
    indexed_shards(tmp_path, shards, per_shard)
    return {f"/d/{p.name}": p.read_bytes() for p in sorted(tmp_path.glob("train-*"))}


@pytest.mark.parametrize("backend", BACKENDS)
def test_remote_shards_are_indexed_from_their_companions(tmp_path, backend):
    objects = served_with_indexes(tmp_path, 3, 4)
    local = TarShards(str(tmp_path / "train-{000..002}.tar"), index_cache=False)
    with LoopbackServer(objects) as server:
        dataset = TarShards(server.url + "/d/train-{000..002}.tar", index_cache=False)
        # the index file, then the shard's end from its last member: no shard downloaded
        assert dict(server.requests) == {p: 1 for p in objects}
        ranges = [h.get("range", "") for h in server.headers_seen]
        assert sum(r.startswith("bytes=") for r in ranges) == 3
        assert dataset._streams.kept() == []
        sampler = ShardSampler(dataset, seed=1, window=1)
        loader = DataLoader(dataset, batch_size=5, sampler=sampler, num_workers=2,
                            backend=backend, collate_fn=list)  # fmt: skip
        by_key = {sample["__key__"]: sample for sample in (local[i] for i in range(12))}
        for batch in loader:
            for sample in batch:
                assert sample == {**by_key[sample["__key__"]], "__url__": sample["__url__"]}
        assert all(server.requests[f"/d/train-{s:03d}.tar"] == 2 for s in range(3))


def test_without_companions_one_absent_index_stops_the_asking(tmp_path):
    make_shards(tmp_path, 3, 2)
    objects = {f"/d/{p.name}": p.read_bytes() for p in sorted(tmp_path.glob("*.tar"))}
    with LoopbackServer(objects) as server:
        dataset = TarShards(server.url + "/d/train-{000..002}.tar", index_cache=False)
        assert len(dataset) == 6
        assert server.requests["/d/train-000.idx"] == 1
        assert "/d/train-001.idx" not in server.requests


def test_a_remote_index_that_misses_the_last_sample_is_an_error(tmp_path):
    objects = served_with_indexes(tmp_path, 1, 3)
    text = objects["/d/train-000.idx"].decode().splitlines()
    objects["/d/train-000.idx"] = ("v1.2 2\n" + "\n".join(text[1:3]) + "\n").encode()
    with LoopbackServer(objects) as server, pytest.raises(ShardError, match="does not cover"):
        TarShards(server.url + "/d/train-000.tar", index_cache=False)


def test_a_server_that_ignores_the_range_still_gives_the_index(tmp_path):
    objects = served_with_indexes(tmp_path, 1, 3)
    with LoopbackServer(objects) as server:
        server.fail("/d/train-000.tar", IgnoreRange())
        dataset = TarShards(server.url + "/d/train-000.tar", index_cache=False)
        assert [dataset[i]["__key__"] for i in range(3)] == ["s/00000", "s/00001", "s/00002"]
