"""The index cache of remote shards: no credential ever written to it, and a kept
index used only for the bytes it was made from (the object's ETag or
Last-Modified, with its length)."""

from __future__ import annotations

import base64
import json
import os
import platform
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from shard_files import make_shards, write_shard
from test_shards import BACKENDS, private_cache  # noqa: F401 (a fixture)

from dataloader_api import DataLoader
from dataloader_api.io import HttpDataset, ObjectStoreDataset
from dataloader_api.io.loopback import LoopbackServer
from dataloader_api.shards import ShardError, ShardSampler, TarShards
from dataloader_api.shards.__main__ import main

SECRETS = ("s3cr3tPassw0rd", "SIGNATUREs3cr3t", "ACCESSTOKENs3cr3t", "HEADERs3cr3t")


def _cache_bytes(folder: Path) -> list[tuple[str, bytes]]:
    """Every file under ``folder``: its name and its bytes."""
    return [(str(p), p.read_bytes()) for p in folder.rglob("*") if p.is_file()]


def _no_secret_in(folder: Path) -> None:
    userinfo = base64.b64encode(b"alice:" + SECRETS[0].encode())
    files = _cache_bytes(folder)
    assert files, "nothing was cached: the check would be vacuous"
    for name, data in files:
        for secret in (*(s.encode() for s in SECRETS), userinfo, b"alice"):
            assert secret not in data, f"{secret!r} written in {name}"
            assert secret.decode() not in name, f"{secret!r} in the file name {name}"


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_secret_of_a_url_or_header_reaches_the_cache(tmp_path, private_cache, backend):  # noqa: F811
    make_shards(tmp_path, 2, 3)
    data = [(tmp_path / f"train-{s:03d}.tar").read_bytes() for s in range(2)]
    signed = "?X-Amz-Signature={}&access_token={}&X-Amz-Expires=60"
    objects = {}
    for run, (sig, token) in enumerate([(SECRETS[1], SECRETS[2]), ("other1", "other2")]):
        for s in range(2):
            objects[f"/d/train-{s:03d}.tar" + signed.format(sig + str(run), token)] = data[s]
    for s in range(2):
        objects[f"/h/train-{s:03d}.tar"] = data[s]
    with LoopbackServer(objects) as server:
        host = server.url.replace("http://", f"http://alice:{SECRETS[0]}@")
        for run, (sig, token) in enumerate([(SECRETS[1], SECRETS[2]), ("other1", "other2")]):
            urls = [host + f"/d/train-{s:03d}.tar" + signed.format(sig + str(run), token)
                    for s in range(2)]  # fmt: skip
            dataset = TarShards(urls, decoders={"cls": "int"})
            loader = DataLoader(dataset, batch_size=2, num_workers=2, backend=backend)
            assert sorted(x for b in loader for x in b["cls"].tolist()) == list(range(6))
        # presigned URLs of one object share its entry: one per shard, not per signature
        assert len(list(private_cache.glob("*.json"))) == 2
        headers = {"Authorization": f"Bearer {SECRETS[3]}", "X-Token": SECRETS[3]}
        source = HttpDataset([server.url + f"/h/train-{s:03d}.tar" for s in range(2)],
                             headers=headers)  # fmt: skip
        dataset = TarShards(source, decoders={"cls": "int"})
        loader = DataLoader(dataset, batch_size=2, num_workers=2, backend=backend)
        assert sorted(x for b in loader for x in b["cls"].tolist()) == list(range(6))
        assert len(list(private_cache.glob("*.json"))) == 4
    _no_secret_in(private_cache.parent)


def _keyed_shard(path: Path, keys: range) -> bytes:
    """A shard whose every sample's one field holds its own key: any two such shards
    of as many keys have the same length and layout."""
    write_shard(path, [(f"k{key:05d}.txt", f"{key:05d}".encode()) for key in keys])
    return path.read_bytes()


def _items_carry_their_keys(dataset: TarShards, backend: str) -> list[str]:
    loader = DataLoader(dataset, batch_size=2, num_workers=2, backend=backend,
                        collate_fn=lambda batch: batch)  # fmt: skip
    items = [item for batch in loader for item in batch]
    assert [item["txt"] for item in items] == [item["__key__"][1:] for item in items]
    return [item["__key__"] for item in items]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_shard_replaced_by_one_of_the_same_length_is_indexed_again(
    tmp_path,
    private_cache,  # noqa: F811
    backend,
):
    before = _keyed_shard(tmp_path / "a.tar", range(0, 4))
    after = _keyed_shard(tmp_path / "b.tar", range(10, 14))
    assert len(before) == len(after) and before != after
    with LoopbackServer({"/d/a.tar": before}) as server:
        dataset = TarShards(server.url + "/d/a.tar", decoders={"txt": "text"})
        assert _items_carry_their_keys(dataset, backend) == [f"k{k:05d}" for k in range(4)]
        (entry,) = private_cache.glob("*.json")
        assert json.loads(entry.read_bytes())["validator"]  # the ETag, kept with the index
        server.objects["/d/a.tar"] = after  # same length, other samples
        again = TarShards(server.url + "/d/a.tar", decoders={"txt": "text"})
        assert _items_carry_their_keys(again, backend) == [f"k{k:05d}" for k in range(10, 14)]
        # unchanged: the kept index is used (one small range request, no download)
        asked = server.requests["/d/a.tar"]
        TarShards(server.url + "/d/a.tar", decoders={"txt": "text"})
        assert server.requests["/d/a.tar"] == asked + 1
        assert server.headers_seen[-1]["range"] == f"bytes={len(after) - 1}-"


def test_a_server_without_validators_warns_that_only_the_length_is_checked(tmp_path):
    data = _keyed_shard(tmp_path / "a.tar", range(4))
    with LoopbackServer({"/d/a.tar": data, "/d/b.tar": data}) as server:
        server.validators = False
        urls = [server.url + "/d/a.tar", server.url + "/d/b.tar"]
        with pytest.warns(RuntimeWarning, match="neither ETag nor Last-Modified") as caught:
            TarShards(urls)
        assert len([w for w in caught if "ETag" in str(w.message)]) == 1  # once per dataset
        with pytest.warns(RuntimeWarning, match="length only"):
            assert len(TarShards(urls)) == 8  # from the cache, said again
        server.validators = True  # the kept index has none, the server one now: again
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert len(TarShards(urls)) == 8


@pytest.mark.parametrize("backend", BACKENDS)
def test_random_access_that_reads_shards_again_and_again_names_shard_sampler(tmp_path, backend):
    make_shards(tmp_path, 6, 6)
    objects = {f"/d/train-{s:03d}.tar": (tmp_path / f"train-{s:03d}.tar").read_bytes()
               for s in range(6)}  # fmt: skip
    with LoopbackServer(objects) as server:
        pattern = server.url + "/d/train-{000..005}.tar"
        dataset = TarShards(pattern, decoders={"cls": "int"}, max_shards_in_memory=2,
                            index_cache=False)  # fmt: skip
        loader = DataLoader(dataset, batch_size=4, sampler=ShardSampler(dataset, window=1),
                            num_workers=2, backend=backend)  # fmt: skip
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert sorted(x for b in loader for x in b["cls"].tolist()) == list(range(36))
        assert not [w for w in caught if "ShardSampler" in str(w.message)]
        before = sum(server.requests.values())
        shuffled = DataLoader(dataset, batch_size=4, shuffle=True, num_workers=2,
                              backend=backend)  # fmt: skip
        with pytest.warns(RuntimeWarning, match=r"read again \d+ times.*ShardSampler") as caught:
            assert sorted(x for b in shuffled for x in b["cls"].tolist()) == list(range(36))
        assert len([w for w in caught if "ShardSampler" in str(w.message)]) == 1  # once
        assert sum(server.requests.values()) - before > 12  # why it warns: shards again


_FREED_BUFFERS = """
import gc
from dataloader_api.io._progressive import ProgressiveBytes

def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) * 1024

freed = bytearray(16 << 20)
del freed  # glibc's mmap threshold rises to 16 MiB: 8 MiB blocks then come from its heap
chunk = b"1" * (1 << 20)
base = rss()
buffers, pins = [], []
for _ in range(8):  # eight shard buffers of 8 MiB, filled as a reply fills them
    buffer = ProgressiveBytes(8 << 20, AssertionError)
    for _ in range(8):
        buffer.write(chunk)
    buffers.append(buffer)
    pins.append(bytearray(200_000))  # blocks after each on the heap, still alive
full = rss() - base
del buffers, buffer
gc.collect()
print(full >> 20, (rss() - base) >> 20)
"""


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
    reason="glibc's malloc and /proc/self/status",
)
def test_freed_shard_buffers_go_back_to_the_system():
    """A process cycling through shard buffers (shuffled reads under
    max_bytes_in_memory) kept every freed one: measured in a child process."""
    root = Path(__file__).resolve().parents[2]
    environment = {
        **os.environ,
        "PYTHONPATH": f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
    }
    done = subprocess.run([sys.executable, "-c", _FREED_BUFFERS], capture_output=True,
                          text=True, env=environment, timeout=120, check=True)  # fmt: skip
    full, after = map(int, done.stdout.split())
    assert full >= 60  # the 64 MiB were there
    assert after <= 16, f"{after} MiB of 64 MiB of freed shard buffers still resident"


def test_kept_indexes_are_checked_at_once_and_a_companions_validator_is_kept(
    tmp_path,
    private_cache,  # noqa: F811
):

    shards = [_keyed_shard(tmp_path / f"s-{s}.tar", range(4 * s, 4 * s + 4)) for s in range(8)]
    objects = {f"/d/s-{s}.tar": data for s, data in enumerate(shards)}
    main(["index", *(str(tmp_path / f"s-{s}.tar") for s in range(8))])
    objects.update({f"/d/s-{s}.idx": (tmp_path / f"s-{s}.idx").read_bytes() for s in range(8)})
    with LoopbackServer(objects, latency=0.05) as server:
        urls = [f"{server.url}/d/s-{s}.tar" for s in range(8)]
        first = TarShards(urls)  # from the companions: an index file and a range each
        assert all(index.from_companion for index in first._indexes)
        entries = [json.loads(p.read_bytes()) for p in private_cache.glob("*.json")]
        assert len(entries) == 8 and all(entry["validator"] for entry in entries)
        server.peak_in_flight = 0
        asked = dict(server.requests)
        TarShards(urls)  # kept: one range request per shard, all in flight at once
        assert {
            p: n - asked.get(p, 0) for p, n in server.requests.items() if n != asked.get(p, 0)
        } == {f"/d/s-{s}.tar": 1 for s in range(8)}
        assert server.peak_in_flight > 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_shard_replaced_while_the_dataset_is_used_is_an_error(
    tmp_path,
    private_cache,  # noqa: F811
    backend,
):
    # The rust backend streams natively: its reader checks the validator too.
    before = _keyed_shard(tmp_path / "a.tar", range(0, 4))
    after = _keyed_shard(tmp_path / "b.tar", range(10, 14))
    with LoopbackServer({"/d/a.tar": before, "/d/b.tar": before}) as server:
        dataset = TarShards([server.url + "/d/a.tar", server.url + "/d/b.tar"],
                            decoders={"txt": "text"}, max_shards_in_memory=1)  # fmt: skip
        server.objects["/d/a.tar"] = after  # same length, other samples
        loader = DataLoader(dataset, batch_size=2, backend=backend, collate_fn=lambda b: b)
        with pytest.raises(ShardError, match=r"a\.tar.*replaced since it was indexed"):
            list(loader)  # shard 1 (kept) first is fine; shard 0 is read again
        assert len(list(private_cache.glob("*.json"))) == 1  # its index is no longer kept


@pytest.fixture(scope="module")
def endpoint():
    from s3_server import run_s3_server

    yield from run_s3_server()


def test_object_store_shards_are_kept_by_key_with_their_etag_and_no_secret(
    tmp_path,
    endpoint,
    monkeypatch,
    private_cache,  # noqa: F811
):
    boto3 = pytest.importorskip("boto3", reason="boto3 uploads the test shards")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDs3cr3t")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRETS[0])
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    client.create_bucket(Bucket="kept")
    client.put_object(Bucket="kept", Key="a.tar", Body=_keyed_shard(tmp_path / "a.tar", range(4)))
    store = ObjectStoreDataset("s3://kept/", ["a.tar"], endpoint_url=endpoint, region="us-east-1")
    assert [item["__key__"] for item in TarShards(store)] == [f"k{k:05d}" for k in range(4)]
    (entry,) = [json.loads(p.read_bytes()) for p in private_cache.glob("*.json")]
    assert entry["path"] == f"{endpoint}/kept/a.tar" and entry["validator"]
    after = _keyed_shard(tmp_path / "b.tar", range(10, 14))
    client.put_object(Bucket="kept", Key="a.tar", Body=after)  # same length, other samples
    again = TarShards(ObjectStoreDataset("s3://kept/", ["a.tar"], endpoint_url=endpoint,
                                         region="us-east-1"), decoders={"txt": "text"})  # fmt: skip
    assert [(i["__key__"], i["txt"]) for i in again] == [
        (f"k{k:05d}", f"{k:05d}") for k in range(10, 14)
    ]
    for _, data in _cache_bytes(private_cache.parent):
        assert b"AKIDs3cr3t" not in data and SECRETS[0].encode() not in data


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_object_replaced_while_the_dataset_is_used_is_an_error(
    tmp_path,
    endpoint,
    monkeypatch,
    private_cache,  # noqa: F811
    backend,
):
    boto3 = pytest.importorskip("boto3", reason="boto3 uploads the test shards")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDs3cr3t")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRETS[0])
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    bucket = f"mid-{backend}"
    client.create_bucket(Bucket=bucket)
    before = _keyed_shard(tmp_path / "a.tar", range(0, 4))
    for key in ("a.tar", "b.tar"):
        client.put_object(Bucket=bucket, Key=key, Body=before)
    store = ObjectStoreDataset(f"s3://{bucket}/", ["a.tar", "b.tar"], endpoint_url=endpoint,
                               region="us-east-1")  # fmt: skip
    dataset = TarShards(store, decoders={"txt": "text"}, max_shards_in_memory=1)
    after = _keyed_shard(tmp_path / "b.tar", range(10, 14))
    client.put_object(Bucket=bucket, Key="a.tar", Body=after)  # same length, other samples
    loader = DataLoader(dataset, batch_size=2, backend=backend, collate_fn=lambda b: b)
    with pytest.raises(ShardError, match=r"a\.tar.*replaced since it was indexed"):
        list(loader)  # shard 1 (kept) first is fine; shard 0 is read again
