"""Remote shards stream: a sample is handed out once its own bytes have
arrived, a read cut short resumes where it stopped, and whatever a server
answers to that (the range, the whole object again, other bytes), nothing
but the shard's bytes ever reaches a sample."""

from __future__ import annotations

import asyncio
import io
import threading

import pytest
from test_shards import private_cache  # noqa: F401 (a fixture)
from test_shards_remote import endpoint, served  # noqa: F401 (a fixture)

import dataloader_api
from dataloader_api._common.backend_registry import resolve_backend
from dataloader_api.io import FetchError, HttpDataset, ObjectStoreDataset, RetryPolicy
from dataloader_api.io._base import run_sync
from dataloader_api.io._progressive import ProgressiveBytes, range_start, stream_body
from dataloader_api.io.loopback import IgnoreRange, LoopbackServer, Replace, Reset, Status
from dataloader_api.shards import ShardError, TarShards

FAST = RetryPolicy(max_retries=3, backoff=0.01)
SHARD = "/d/train-001.tar"


# Each shard streams through the reference's client, or the rust backend's reader.
READERS = ["reference"] + (["rust"] if "rust" in dataloader_api.backends() else [])


@pytest.fixture(params=READERS)
def reader(request) -> str:
    return request.param


def shard_over_http(
    tmp_path, server, reader="reference", retry=FAST
) -> tuple[TarShards, TarShards, HttpDataset]:
    urls = HttpDataset([server.url + f"/d/train-{s:03d}.tar" for s in range(2)], retry=retry)
    local = TarShards(str(tmp_path / "train-{000..001}.tar"), index_cache=False)
    remote = TarShards(urls, index_cache=False)
    if reader != "reference":
        remote.read_natively(resolve_backend(reader).open_reader)
    return remote, local, urls


def same(remote: TarShards, local: TarShards, indices: range) -> bool:
    """The samples are equal but for ``__url__`` (a URL, a path)."""
    strip = lambda sample: {k: v for k, v in sample.items() if k != "__url__"}  # noqa: E731
    return all(strip(remote[i]) == strip(local[i]) for i in indices)


def resumed_from(server) -> list[int]:
    return [int(h["range"][6:-1]) for h in server.headers_seen if "range" in h]


def test_a_shard_cut_short_resumes_where_it_stopped(tmp_path, reader):
    objects = served(tmp_path, 2, 40)
    with LoopbackServer(objects) as server:
        remote, local, urls = shard_over_http(tmp_path, server, reader)
        # Indexed whole on creation; forget it so that the samples stream.
        remote._remote._kept.clear()
        before = server.requests[SHARD]
        server.fail(SHARD, Reset(after=20_000), Reset(after=30_000))
        assert same(remote, local, range(40, 80))
        streamed = type(remote._remote._kept[1]).__name__
        assert streamed == ("ProgressiveBytes" if reader == "reference" else "NativeShard")
        assert server.requests[SHARD] - before == 3
        starts = resumed_from(server)
        assert len(starts) == 2 and 0 < starts[0] <= 20_000 < starts[1]
        assert all(h.get("if-range") for h in server.headers_seen if "range" in h)
        assert urls.counters.retries == 2


def test_a_read_that_moves_on_before_each_cut_is_not_out_of_retries(tmp_path, reader):
    # A large shard on a slow link: each attempt gets further, none uses up a retry.
    objects = served(tmp_path, 2, 40)
    with LoopbackServer(objects) as server:
        remote, local, urls = shard_over_http(
            tmp_path, server, reader, RetryPolicy(max_retries=1, backoff=0.001)
        )
        remote._remote._kept.clear()
        server.fail(SHARD, *[Reset(after=15_000)] * 6)
        assert same(remote, local, range(40, 80))
        assert len(resumed_from(server)) == 6 and urls.counters.retries == 6
        # Cuts without progress do use them up.
        remote._remote._kept.clear()
        server.fail(SHARD, Reset(after=0), Reset(after=0))
        with pytest.raises(FetchError, match="failed after 2 attempts"):
            remote[79]


def test_a_server_that_answers_a_range_with_everything_gives_exact_bytes(tmp_path, reader):
    objects = served(tmp_path, 2, 40)
    with LoopbackServer(objects) as server:
        remote, local, _ = shard_over_http(tmp_path, server, reader)
        remote._remote._kept.clear()
        server.fail(SHARD, Reset(after=25_000), IgnoreRange())
        assert same(remote, local, range(40, 80))
        assert len(resumed_from(server)) == 1


def test_other_bytes_on_a_resumed_read_are_an_error_not_a_sample(tmp_path, reader):
    objects = served(tmp_path, 2, 40)
    with LoopbackServer(objects) as server:
        remote, local, _ = shard_over_http(tmp_path, server, reader)
        remote._remote._kept.clear()
        changed = bytearray(objects[SHARD])
        changed[100] ^= 0xFF  # same size, another byte inside what was received
        server.fail(SHARD, Reset(after=25_000), Replace(bytes(changed)))
        assert same(remote, local, range(40, 41))  # from the first 25,000 bytes
        with pytest.raises(FetchError, match="other bytes at offset 0"):
            remote[79]


def test_a_sample_is_handed_out_before_its_shard_has_arrived(tmp_path, reader):
    objects = served(tmp_path, 2, 40)
    with LoopbackServer(objects) as server:
        remote, local, _ = shard_over_http(tmp_path, server, reader, RetryPolicy(max_retries=0))
        remote._remote._kept.clear()
        server.fail(SHARD, Reset(after=20_000), Status(404))
        assert same(remote, local, range(40, 41))
        streamed = remote._remote._kept[1]
        # The read failed for good after 20,000 bytes; sample 40 came from those.
        with pytest.raises(FetchError, match="404"):
            streamed.take(0, streamed.size)
        assert streamed.received < streamed.size


def test_a_shard_whose_size_changed_while_streaming_is_a_shard_error(tmp_path, reader):
    objects = served(tmp_path, 2, 40)
    with LoopbackServer(objects) as server:
        remote, _, _ = shard_over_http(tmp_path, server, reader)
        remote._remote._kept.clear()
        server.objects[SHARD] = objects[SHARD] + bytes(512)
        with pytest.raises(ShardError, match="changed since it was indexed"):
            remote[40]


def test_progressive_bytes_readers_wait_for_their_part_only():
    buffer = ProgressiveBytes(10, lambda total: ValueError(total))
    taken: list[bytes] = []
    reader = threading.Thread(target=lambda: taken.append(buffer.take(2, 8)))
    reader.start()
    buffer.write(b"abcd")
    assert buffer.take(0, 4) == b"abcd"
    reader.join(0.05)
    assert reader.is_alive() and not taken  # bytes 4:8 have not arrived
    buffer.write(b"efgh")
    reader.join()
    assert taken == [b"cdefgh"]
    buffer.fail(OSError("gone"))
    assert buffer.take(0, 8) == b"abcdefgh"  # what arrived stays readable
    with pytest.raises(OSError, match="gone"):
        buffer.take(8, 10)
    with pytest.raises(ValueError, match="13"):
        ProgressiveBytes(10, lambda total: ValueError(total)).write(bytes(13))


class _Trickle(io.RawIOBase):
    """A file that hands out ``data`` 4 KiB per ``readinto``."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def readinto(self, into) -> int:  # type: ignore[no-untyped-def, override]
        count = min(len(into), 4096, len(self.data) - self.at)
        into[:count] = self.data[self.at : self.at + count]
        self.at += count
        return count


def _read_all(buffer: ProgressiveBytes, data: bytes, wrong: list[object]) -> None:
    try:
        for start in range(0, len(data) - 64, 991):
            if buffer.take(start, start + 64) != data[start : start + 64]:
                wrong.append(start)
    except Exception as error:
        wrong.append(error)


def test_progressive_bytes_read_by_threads_while_it_fills():
    # On free-threaded 3.13, slices of one memoryview made in several threads at
    # once released it ("operation forbidden on released memoryview object").
    data = bytes(range(256)) * 1024
    for _ in range(20):
        buffer = ProgressiveBytes(len(data), lambda total: ValueError(total))
        wrong: list[object] = []
        readers = [threading.Thread(target=_read_all, args=(buffer, data, wrong)) for _ in range(3)]
        for reader in readers:
            reader.start()
        buffer.fill_from(_Trickle(data))
        assert buffer.matches(1000, data[1000:2000])
        for reader in readers:
            reader.join()
        assert wrong == []


def feed(reply: bytes) -> asyncio.StreamReader:
    reader = asyncio.StreamReader()
    reader.feed_data(reply)
    reader.feed_eof()
    return reader


def stream(status: int, headers: dict[str, str], body: bytes, sink: ProgressiveBytes) -> None:
    async def run() -> None:
        await stream_body(feed(body), status, headers, sink, ConnectionError, PermissionError)

    asyncio.run(run())


def test_stream_body_checks_what_a_resumed_reply_is():
    sink = ProgressiveBytes(8, lambda total: ValueError(f"total {total}"))
    with pytest.raises(ConnectionError, match=r"cut short \(3 of 8"):
        stream(200, {"content-length": "8", "etag": '"v1"'}, b"abc", sink)
    assert range_start(sink) == {"Range": "bytes=3-", "If-Range": '"v1"'}
    with pytest.raises(PermissionError, match="with bytes from 2"):
        stream(206, {"content-range": "bytes 2-7/8", "content-length": "6"}, b"cdefgh", sink)
    with pytest.raises(ValueError, match="total 9"):
        stream(206, {"content-range": "bytes 3-8/9", "content-length": "6"}, b"defghi", sink)
    chunked = b"2\r\nde\r\n3\r\nfgh\r\n0\r\n\r\n"
    stream(206, {"content-range": "bytes 3-7/8", "transfer-encoding": "chunked"}, chunked, sink)
    assert sink.take(0, 8) == b"abcdefgh"
    assert sink.done and range_start(sink)["Range"] == "bytes=8-"


def test_an_object_store_answers_a_resumed_read_with_its_range(tmp_path, endpoint, monkeypatch):  # noqa: F811
    boto3 = pytest.importorskip("boto3", reason="boto3 uploads the test shard")
    for name, value in [("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "secret"),
                        ("AWS_ENDPOINT_URL", endpoint), ("AWS_REGION", "us-east-1")]:  # fmt: skip
        monkeypatch.setenv(name, value)
    data = served(tmp_path, 2, 40)[SHARD]
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    client.create_bucket(Bucket="resume")
    client.put_object(Bucket="resume", Key="train-001.tar", Body=data)
    store = ObjectStoreDataset("s3://resume/", retry=FAST)
    sink = ProgressiveBytes(len(data), lambda total: ValueError(total))
    sink.write(data[:30_000])  # as if a first attempt had been cut there
    listed = store.counters.requests
    assert run_sync(store.read(0, store.locations.of(0), sink)) == b""
    assert sink.take(0, len(data)) == data
    assert (store.counters.requests - listed, store.counters.retries) == (1, 0)
