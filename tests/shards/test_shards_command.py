"""``python -m dataloader_api.shards index``: companion index files this package
accepts (pax headers, long names, dotted names), clear errors for what it cannot
index, and per-shard index names where DALI's are shared by several shards."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from test_shards import BACKENDS, private_cache  # noqa: F401 (a fixture)

from dataloader_api import DataLoader
from dataloader_api.io import FetchError, HttpDataset, RetryPolicy
from dataloader_api.io.loopback import LoopbackServer, Status
from dataloader_api.shards import ShardError, TarShards
from dataloader_api.shards import _dataset as dataset_module
from dataloader_api.shards.__main__ import main

ROOT = Path(__file__).resolve().parents[2]


def _shard(path: Path, keys: range, form: int = tarfile.USTAR_FORMAT, long: bool = False) -> Path:
    """Samples whose ``txt`` field is their key; pax headers (a comment on every
    member) or GNU long names (``long``) as asked."""
    with tarfile.open(path, "w", format=form) as tar:
        for key in keys:
            stem = ("d" * 120 + "/" if long else "") + f"k{key:05d}"
            for extension, data in (("txt", f"{key:05d}".encode()), ("cls", str(key).encode())):
                info = tarfile.TarInfo(f"{stem}.{extension}")
                info.size = len(data)
                if form == tarfile.PAX_FORMAT:
                    info.pax_headers = {"comment": "written by a tool that adds pax records"}
                tar.addfile(info, io.BytesIO(data))
    return path


def _command(*arguments: str) -> subprocess.CompletedProcess[str]:
    environment = {
        **os.environ,
        "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
    }
    return subprocess.run([sys.executable, "-m", "dataloader_api.shards", *arguments],
                          capture_output=True, text=True, env=environment, timeout=120)  # fmt: skip


@pytest.fixture
def no_scans(monkeypatch):
    def refuse(name, *_):
        raise AssertionError(f"{name} was scanned")

    monkeypatch.setattr(dataset_module, "scan_shard", refuse)


def _shards(tmp_path: Path) -> list[Path]:
    return [
        _shard(tmp_path / "set.v2-000.tar", range(0, 3)),
        _shard(tmp_path / "set.v2-001.tar", range(3, 6), tarfile.PAX_FORMAT),
        _shard(tmp_path / "set.v2-002.tar", range(6, 9), tarfile.GNU_FORMAT, long=True),
    ]


def _keys(dataset: TarShards, backend: str) -> list[str]:
    loader = DataLoader(dataset, batch_size=2, num_workers=2, backend=backend,
                        collate_fn=lambda batch: batch)  # fmt: skip
    items = [item for batch in loader for item in batch]
    assert all(item["txt"] == item["__key__"][-5:] for item in items)  # its own bytes
    return sorted(item["__key__"].rsplit("/", 1)[-1] for item in items)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_indexes_it_writes_are_read_instead_of_the_headers(tmp_path, backend):
    shards = _shards(tmp_path)
    done = _command("index", *map(str, shards))
    assert done.returncode == 0, done.stderr
    for shard in shards:  # one index per shard, though their names share "set."
        assert f"{shard.with_suffix('.idx')} (3 samples)" in done.stdout
    assert not (tmp_path / "set.idx").exists()
    headers = TarShards([str(s) for s in shards], decoders={"txt": "text"}, index_cache=False)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dataset_module, "scan_shard", lambda name, *_: pytest.fail(name))
        indexed = TarShards([str(s) for s in shards], decoders={"txt": "text"},
                            index_cache=False)  # fmt: skip
    assert all(index.from_companion for index in indexed._indexes)
    assert [i.samples for i in indexed._indexes] == [i.samples for i in headers._indexes]
    assert _keys(indexed, backend) == [f"k{k:05d}" for k in range(9)]
    objects = {f"/d/{s.name}": s.read_bytes() for s in shards}
    objects.update({f"/d/{s.stem}.idx": s.with_suffix(".idx").read_bytes() for s in shards})
    with LoopbackServer(objects) as server:
        remote = TarShards([f"{server.url}/d/{s.name}" for s in shards],
                           decoders={"txt": "text"}, index_cache=False)  # fmt: skip
        assert all(index.from_companion for index in remote._indexes)
        assert _keys(remote, backend) == [f"k{k:05d}" for k in range(9)]
        assert all(server.requests[f"/d/{s.stem}.idx"] == 1 for s in shards)


def test_a_dali_name_shared_by_shards_is_not_read(tmp_path):
    shards = _shards(tmp_path)[:2]
    main(["index", str(shards[0])])
    # DALI's wds2idx.py names both shards' index set.idx: the last one written wins
    os.replace(tmp_path / "set.v2-000.idx", tmp_path / "set.idx")
    main(["index", str(shards[1])])
    dataset = TarShards([str(s) for s in shards], decoders={"txt": "text"}, index_cache=False)
    assert [item["txt"] for item in dataset] == [f"{k:05d}" for k in range(6)]
    # set.idx (shard 0's) is not read for shard 1, nor for shard 0: their headers are
    assert [index.from_companion for index in dataset._indexes] == [False, True]


def test_a_dali_name_of_one_shard_is_still_read(tmp_path, no_scans):
    (shard,) = _shards(tmp_path)[:1]
    main(["index", str(shard)])
    os.replace(tmp_path / "set.v2-000.idx", tmp_path / "set.idx")
    dataset = TarShards(str(shard), decoders={"txt": "text"}, index_cache=False)
    assert dataset._indexes[0].from_companion
    assert [item["txt"] for item in dataset] == [f"{k:05d}" for k in range(3)]
    with LoopbackServer({"/d/set.v2-000.tar": shard.read_bytes(),
                         "/d/set.idx": (tmp_path / "set.idx").read_bytes()}) as server:  # fmt: skip
        remote = TarShards(server.url + "/d/set.v2-000.tar", index_cache=False)
        assert remote._indexes[0].from_companion
        assert server.requests["/d/set.v2-000.idx"] == 1  # its own name first


def test_what_it_cannot_index_is_named(tmp_path):
    good = _shard(tmp_path / "good.tar", range(2))
    (tmp_path / "text.tar").write_text("not a tar file\n" * 100)
    unreadable = shutil.copy(good, tmp_path / "locked.tar")
    os.chmod(unreadable, 0)
    shutil.copy(good, tmp_path / "spaced.tar")
    with tarfile.open(tmp_path / "spaced.tar", "a") as tar:
        info = tarfile.TarInfo("k 9.txt")
        tar.addfile(info, io.BytesIO(b""))
    cut = tmp_path / "cut.tar"
    cut.write_bytes(good.read_bytes()[:2048])  # no end-of-archive block
    names = ["good.tar", "text.tar", "missing.tar", "spaced.tar", "cut.tar", "good.idx"]
    names += [] if os.geteuid() == 0 else ["locked.tar"]  # root reads it anyway
    done = _command("index", *(str(tmp_path / n) for n in names))
    assert done.returncode == 1
    assert f"{tmp_path / 'good.idx'} (2 samples)" in done.stdout
    errors = done.stderr
    assert f"error: {str(tmp_path / 'text.tar')!r}" in errors and "not a tar file" in errors
    assert f"{str(tmp_path / 'missing.tar')!r}: cannot read it: No such file" in errors
    assert "'k 9.txt': a name with white space cannot be written" in errors
    assert "end-of-archive block" in errors
    assert "give the tar shard, not its index" in errors
    if os.geteuid() != 0:
        assert "cannot read it: Permission denied" in errors
    assert f"{len(names) - 1} of {len(names)} shards not indexed" in errors
    assert not (tmp_path / "text.idx").exists() and not (tmp_path / "cut.idx").exists()
    helped = _command("index", "--help")
    assert helped.returncode == 0 and "v1.2" in helped.stdout and "SHARD" in helped.stdout
    assert _command().returncode == 2


def test_a_bad_index_names_the_command_that_writes_a_good_one(tmp_path):
    shard = _shard(tmp_path / "a.tar", range(4))
    main(["index", str(shard)])
    index = tmp_path / "a.idx"
    lines = index.read_text().splitlines()
    index.write_text("v1.2 3\n" + "\n".join(lines[2:]) + "\n")  # the first sample left out
    with pytest.raises(ShardError, match=r"python -m dataloader_api\.shards index SHARD"):
        TarShards(str(shard), index_cache=False)
    index.write_text(lines[0].replace("v1.2", "v1.1") + "\n")
    with pytest.raises(ShardError, match=r"v1\.1.*python -m dataloader_api\.shards index"):
        TarShards(str(shard), index_cache=False)


@pytest.mark.parametrize("backend", BACKENDS)
def test_remote_errors_name_the_shard_not_an_item(tmp_path, backend):
    shards = [_shard(tmp_path / f"s-{s}.tar", range(3 * s, 3 * s + 3)) for s in range(3)]
    objects = {f"/d/{p.name}": p.read_bytes() for p in shards}
    fast = RetryPolicy(max_retries=1, backoff=0.001)
    with LoopbackServer(objects) as server:
        urls = [f"{server.url}/d/s-{s}.tar" for s in range(3)]
        with pytest.raises(FetchError, match=r"^shard 3: GET .*/d/s-3\.tar: HTTP 404") as caught:
            TarShards(HttpDataset([*urls, f"{server.url}/d/s-3.tar"]), index_cache=False)
        assert caught.value.index == 3 and caught.value.status == 404
        dataset = TarShards(HttpDataset(urls, retry=fast), index_cache=False)
        dataset._remote._kept.clear()  # read again: now failing
        server.fail("/d/s-1.tar", *[Status(500)] * 8)
        loader = DataLoader(dataset, batch_size=3, backend=backend)
        with pytest.raises(FetchError, match=r"^shard 1: GET .*/d/s-1\.tar: .*HTTP 500"):
            list(loader)
