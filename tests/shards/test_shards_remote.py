"""``TarShards`` over HTTP (a loopback server with latency and injected faults)
and an S3-compatible store (moto): one request per shard and epoch with
``ShardSampler``, the same samples as local shards, and shards that changed."""

from __future__ import annotations

import pytest
from s3_server import run_s3_server
from shard_files import make_shards
from test_shards import BACKENDS, private_cache  # noqa: F401 (a fixture)

from dataloader_api import DataLoader
from dataloader_api.io import FetchError, HttpDataset, ObjectStoreDataset, RetryPolicy
from dataloader_api.io.loopback import LoopbackServer, Reset, Status
from dataloader_api.shards import ShardError, ShardSampler, TarShards

FAST = RetryPolicy(max_retries=3, backoff=0.01)


def served(tmp_path, shards: int, per_shard: int) -> dict[str, bytes]:
    make_shards(tmp_path, shards, per_shard)
    return {
        f"/d/train-{s:03d}.tar": (tmp_path / f"train-{s:03d}.tar").read_bytes()
        for s in range(shards)
    }


@pytest.mark.parametrize("backend", BACKENDS)
def test_each_shard_is_requested_once_per_epoch(tmp_path, backend):
    objects = served(tmp_path, 6, 5)
    local = TarShards(str(tmp_path / "train-{000..005}.tar"), decoders={"cls": "int"})
    with LoopbackServer(objects, latency=0.005) as server:
        dataset = TarShards(server.url + "/d/train-{000..005}.tar", decoders={"cls": "int"},
                            max_shards_in_memory=4, index_cache=False)  # fmt: skip
        assert [dataset[i]["cls"] for i in range(30)] == [local[i]["cls"] for i in range(30)]
        assert dataset[7]["__url__"] == server.url + "/d/train-001.tar"
        sampler = ShardSampler(dataset, seed=1, window=2)
        loader = DataLoader(dataset, batch_size=4, sampler=sampler, num_workers=2, backend=backend)
        for epoch in range(2):
            before = dict(server.requests)
            sampler.set_epoch(epoch)
            labels = [label for batch in loader for label in batch["cls"].tolist()]
            assert sorted(labels) == list(range(30))
            asked = {path: n - before.get(path, 0) for path, n in server.requests.items()}
            kept = set(dataset._remote.kept()) if dataset._remote else set()
            # every shard once, but those still in memory from before (not asked again)
            assert all(asked[f"/d/train-{s:03d}.tar"] in (0, 1) for s in range(6))
            assert sum(asked.values()) >= 6 - len(kept)


def test_a_fault_is_retried_and_a_missing_shard_is_named(tmp_path):
    objects = served(tmp_path, 2, 3)
    with LoopbackServer(objects) as server:
        server.fail("/d/train-001.tar", Status(503), Reset())
        urls = HttpDataset([server.url + f"/d/train-{s:03d}.tar" for s in range(2)], retry=FAST)
        dataset = TarShards(urls, decoders={"cls": "int"}, index_cache=False)
        assert [dataset[i]["cls"] for i in range(6)] == list(range(6))
        assert urls.counters.retries == 2
        with pytest.raises(FetchError, match="HTTP 404") as caught:
            TarShards(server.url + "/d/train-{000..002}.tar", index_cache=False)
        assert "train-002.tar" in str(caught.value)


def test_a_remote_shard_that_changed_is_an_error_and_forgotten(tmp_path, private_cache):  # noqa: F811
    objects = served(tmp_path, 2, 3)
    with LoopbackServer(objects) as server:
        pattern = server.url + "/d/train-{000..001}.tar"
        dataset = TarShards(pattern, max_shards_in_memory=1)
        assert len(list(private_cache.glob("*.json"))) == 2
        server.objects["/d/train-000.tar"] = objects["/d/train-001.tar"][:-1024]
        dataset[5]  # shard 1 now fills the one place in memory
        with pytest.raises(ShardError, match="changed since it was indexed"):
            dataset[0]
        assert len(list(private_cache.glob("*.json"))) == 1  # its index is no longer kept


def test_a_window_the_memory_cannot_hold_warns(tmp_path):
    with LoopbackServer(served(tmp_path, 4, 2)) as server:
        dataset = TarShards(server.url + "/d/train-{000..003}.tar", max_shards_in_memory=3,
                            index_cache=False)  # fmt: skip
        fix = r"keep 4 \(max_shards_in_memory=, max_bytes_in_memory=\) or use a window of 1"
        with pytest.warns(RuntimeWarning, match=fix):
            ShardSampler(dataset, window=2)


@pytest.mark.parametrize(
    ("arguments", "error", "match"),
    [
        ({"shards": "s3://bucket/x-{0..3}.tar"}, ValueError, "pass ObjectStoreDataset"),
        ({"shards": ["a.tar", "http://h/b.tar"]}, ValueError, "all local paths or all http"),
        ({"shards": "a.tar", "max_shards_in_memory": 0}, ValueError, "max_shards_in_memory"),
        ({"shards": "a.tar", "max_shards_in_memory": 2.0}, TypeError, "max_shards_in_memory"),
    ],
)
def test_bad_remote_arguments_are_named(arguments, error, match):
    with pytest.raises(error, match=match):
        TarShards(**arguments)


@pytest.fixture(scope="module")
def endpoint():
    yield from run_s3_server()


def test_shards_in_an_object_store(tmp_path, endpoint, monkeypatch):
    boto3 = pytest.importorskip("boto3", reason="boto3 uploads the test shards")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing-secret")
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    client.create_bucket(Bucket="shards")
    for path, data in served(tmp_path, 3, 4).items():
        client.put_object(Bucket="shards", Key=path.removeprefix("/d/"), Body=data)
    store = ObjectStoreDataset("s3://shards/", retry=FAST)
    dataset = TarShards(store, decoders={"cls": "int"}, index_cache=False)
    assert dataset.shards[0] == "s3://shards/train-000.tar"
    loader = DataLoader(dataset, batch_size=5, shuffle=True, num_workers=2)
    assert sorted(label for batch in loader for label in batch["cls"].tolist()) == list(range(12))


def test_shards_in_an_object_store_indexed_from_their_companions(tmp_path, endpoint, monkeypatch):
    boto3 = pytest.importorskip("boto3", reason="boto3 uploads the test shards")
    from test_shards_companion import served_with_indexes

    for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "secret")):
        monkeypatch.setenv(name, value)
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    client.create_bucket(Bucket="indexed")
    for path, data in served_with_indexes(tmp_path, 3, 4).items():
        client.put_object(Bucket="indexed", Key=path.removeprefix("/d/"), Body=data)
    keys = [f"train-{s:03d}.tar" for s in range(3)]
    store = ObjectStoreDataset("s3://indexed/", keys, endpoint_url=endpoint, region="us-east-1")
    dataset = TarShards(store, decoders={"cls": "int"}, index_cache=False)
    assert store.counters.requests == 6  # each shard's index file and its end: no download
    assert dataset._indexes[0].from_companion
    assert dataset._streams.kept() == []
    loader = DataLoader(dataset, batch_size=5, shuffle=True, num_workers=2)
    assert sorted(label for batch in loader for label in batch["cls"].tolist()) == list(range(12))
