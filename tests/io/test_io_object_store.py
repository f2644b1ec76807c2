"""ObjectStoreDataset against a real S3-compatible server on loopback (moto)."""

from __future__ import annotations

from datetime import UTC, datetime
from unittest import mock

import pytest
from s3_server import run_s3_server

from dataloader_api import DataLoader
from dataloader_api.io import FetchError, ObjectStoreDataset, RetryPolicy
from dataloader_api.io._sigv4 import Credentials, sign_get

boto3 = pytest.importorskip("boto3", reason="boto3 uploads the test objects")

KEYS = [f"train/{i:04d} shard.bin" for i in range(30)] + ["val/0000.bin", "val/ü #1.bin"]
FAST = RetryPolicy(max_retries=2, backoff=0.01)


def body(key: str) -> bytes:
    return key.encode() * 50


@pytest.fixture(scope="module")
def endpoint():
    yield from run_s3_server()


@pytest.fixture
def bucket(endpoint, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing-secret")
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    name = f"bucket-{len(client.list_buckets()['Buckets'])}"
    client.create_bucket(Bucket=name)
    for key in KEYS:
        client.put_object(Bucket=name, Key=key, Body=body(key))
    return name


def test_listed_objects_are_read_once_each(bucket, io_mode):
    backend = io_mode
    data = ObjectStoreDataset(f"s3://{bucket}/train/", retry=FAST)
    assert len(data) == 30 and data.locations.of(0) == "0000 shard.bin"
    loader = DataLoader(data, batch_size=4, shuffle=True, seed=2,
                        num_workers=0 if backend is None else 2, backend=backend,
                        collate_fn=list)  # fmt: skip
    got = [item for batch in loader for item in batch]
    assert sorted(got) == sorted(body(k) for k in KEYS[:30])
    # counted alike on every path (rust's native reads counted no connection)
    assert data.counters.requests == 31 and 1 <= data.counters.connections <= 31  # and the list


def test_keys_from_a_template(bucket):
    data = ObjectStoreDataset(f"s3://{bucket}", "train/{index:04d} shard.bin", length=30)
    assert [data[i] for i in (0, 29)] == [body(KEYS[0]), body(KEYS[29])]


def test_keys_are_sent_as_they_are(bucket, reads):
    data = ObjectStoreDataset(f"s3://{bucket}/val/", retry=FAST)
    assert [data.locations.of(i) for i in range(len(data))] == ["0000.bin", "ü #1.bin"]
    loader = DataLoader(data, batch_size=2, num_workers=1, backend=reads, collate_fn=list)
    assert list(loader) == [[body("val/0000.bin"), body("val/ü #1.bin")]]


def test_a_wrong_key_names_the_key_and_the_store_error(bucket, reads):
    data = ObjectStoreDataset(f"s3://{bucket}", ["val/0000.bin", "val/nope.bin"], retry=FAST)
    loader = DataLoader(data, batch_size=2, num_workers=2, backend=reads, collate_fn=list)
    with pytest.raises(FetchError) as raised:
        list(loader)
    error = raised.value
    assert error.index == 1 and error.status == 404 and error.attempts == 1
    assert f"s3://{bucket}/val/nope.bin" in str(error) and "NoSuchKey" in str(error)


def test_a_wrong_bucket_fails_when_listed(bucket):
    with pytest.raises(FetchError, match=r"listing s3://no-such-bucket/: HTTP 404.*NoSuchBucket"):
        ObjectStoreDataset("s3://no-such-bucket/", retry=FAST)


def test_missing_credentials_and_bad_urls_are_named(monkeypatch):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY", raising=False)
    with pytest.raises(ValueError, match="set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"):
        ObjectStoreDataset("s3://b", ["k"])
    with pytest.raises(ValueError, match=r"url='gs://b' is not 's3://bucket'"):
        ObjectStoreDataset("gs://b", ["k"], anonymous=True)
    with pytest.raises(ValueError, match=r"endpoint_url='localhost:9000' is not an http\(s\) URL"):
        ObjectStoreDataset("s3://b", ["k"], anonymous=True, endpoint_url="localhost:9000")


def test_signature_matches_botocore():
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials as BotoCredentials

    url = "http://127.0.0.1:9000/bucket/a%20b/c.bin?list-type=2&prefix=a%2Fb"
    when = datetime(2026, 12, 4, 10, 0, 0, tzinfo=UTC)
    ours = sign_get(url, "eu-west-1", Credentials("AKID", "SECRET", "TOKEN"), now=when)
    dated = {k: ours[k] for k in ("x-amz-date", "x-amz-content-sha256")}
    request = AWSRequest(method="GET", url=url, headers=dated)
    signer = S3SigV4Auth(BotoCredentials("AKID", "SECRET", "TOKEN"), "s3", "eu-west-1")
    with mock.patch("botocore.auth.get_current_datetime", lambda: when.replace(tzinfo=None)):
        signer.add_auth(request)
    assert request.headers["Authorization"] == ours["Authorization"]
