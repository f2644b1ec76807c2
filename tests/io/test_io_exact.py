"""What every backend's reads return and raise at the edges: servers that ignore
ranges, paths that are not UTF-8, several failures in one batch, credentials in
URLs, redirects. The reference and the rust backend's native reads agree."""

from __future__ import annotations

import asyncio
import base64
import gzip
import http.server
import os
import threading
from pathlib import Path

import pytest

import dataloader_api
from dataloader_api import DataLoader
from dataloader_api.io import FetchError, FileDataset, HttpDataset, ObjectStoreDataset, RetryPolicy
from dataloader_api.io.loopback import Delay, LoopbackServer, Redirect, Reset, Status

BACKENDS = [None, *[n for n in dataloader_api.backends() if not n.startswith("broken-")]]
FAST = RetryPolicy(max_retries=2, backoff=0.01, max_backoff=0.05)
BODY = bytes(range(256)) * 40


def load(data, backend, **options):
    workers = 0 if backend is None else 2
    return list(DataLoader(data, num_workers=workers, backend=backend, **options))


def load_error(data, backend, **options) -> BaseException:
    with pytest.raises(Exception) as caught:
        load(data, backend, **options)
    return caught.value


# Object stores: only the object's bytes, whatever the server answers


def store_dataset(server: LoopbackServer) -> ObjectStoreDataset:
    # The loopback server ignores Range headers: it always answers 200 and the
    # whole object, as some S3-compatible gateways and caches do.
    return ObjectStoreDataset("s3://b", ["k0"], endpoint_url=server.url, anonymous=True, retry=FAST)


def test_a_resumed_object_read_never_appends_a_whole_object(io_mode):
    with LoopbackServer({"/b/k0": BODY}) as server:
        server.fail("/b/k0", Reset(after=1000))  # cut short once, then whole
        got = load(store_dataset(server), io_mode, batch_size=None)
    assert len(got[0]) == len(BODY) and got == [BODY]


def test_an_object_cut_short_every_time_fails_in_plain_words(io_mode):
    with LoopbackServer({"/b/k0": BODY}) as server:
        server.fail("/b/k0", *[Reset(after=1000)] * 20)
        error = load_error(store_dataset(server), io_mode, batch_size=None)
    assert isinstance(error, FetchError), error
    assert error.attempts == 3 and "s3://b/k0" in str(error)
    assert "failed after 3 attempts; last: the body was cut short" in str(error)
    assert "Generic S3 error" not in str(error) and "retry_timeout" not in str(error)


def test_store_statuses_and_refused_connections_in_plain_words(io_mode):
    with LoopbackServer({"/b/k0": BODY}) as server:
        server.fail("/b/k0", *[Status(503)] * 20)
        error = load_error(store_dataset(server), io_mode, batch_size=None)
    assert isinstance(error, FetchError) and error.status == 503, error
    assert str(error).endswith("failed after 3 attempts; last: HTTP 503 Service Unavailable")
    closed = ObjectStoreDataset(
        "s3://b", ["k0"], endpoint_url="http://127.0.0.1:1", anonymous=True, retry=FAST
    )
    error = load_error(closed, io_mode, batch_size=None)
    assert isinstance(error, FetchError) and error.attempts == 3, error
    assert "refused" in str(error).lower() and "Generic S3 error" not in str(error)


# Files: a path is bytes to the system


def test_file_names_that_are_not_utf8_are_read_and_named(tmp_path: Path, io_mode):
    with open(os.path.join(os.fsencode(tmp_path), b"caf\xe9.bin"), "wb") as file:
        file.write(b"latin-1 name")
    (path,) = (str(p) for p in tmp_path.iterdir())  # as pathlib gives it: a surrogate
    assert "\udce9" in path
    assert load(FileDataset([path]), io_mode, batch_size=None) == [b"latin-1 name"]
    error = load_error(FileDataset([path, path + "-missing"]), io_mode, batch_size=None)
    assert isinstance(error, FileNotFoundError), error
    assert error.filename == path + "-missing" and "item 1" in str(error)


# A batch with several failures raises the first in index order


class _LaterFailsFirst:
    """Item 1 fails at once; item 0 fails after item 1 has failed and the batch has
    seen it (a timer fires only after the loop's ready callbacks have run)."""

    def __init__(self) -> None:
        self.failed: dict[int, asyncio.Event] = {}

    def __len__(self) -> int:
        return 2

    async def __getitem__(self, index: int) -> int:
        event = self.failed.setdefault(id(asyncio.get_running_loop()), asyncio.Event())
        if index == 1:
            event.set()
            raise KeyError("item 1")
        await event.wait()
        await asyncio.sleep(0.05)
        raise ValueError("item 0")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_batch_raises_its_first_failure_in_index_order(backend):
    for _ in range(5):
        error = load_error(_LaterFailsFirst(), backend, batch_size=2)
        assert isinstance(error, ValueError) and "item 0" in str(error), error


def test_failed_reads_of_a_batch_raise_the_first_index(io_mode):
    with LoopbackServer({}) as server:
        server.fail("/0", Delay(0.2))  # a 404, late; item 1's 404 comes first
        data = HttpDataset([server.url + "/0", server.url + "/1"], retry=FAST)
        error = load_error(data, io_mode, batch_size=2)
    assert isinstance(error, FetchError) and error.status == 404, error
    assert error.index == 0 and str(error).startswith("item 0:")


# Credentials in a URL: Basic auth, as curl and requests send it, never shown


def test_user_and_password_in_a_url_are_basic_auth_and_never_shown(io_mode):
    with LoopbackServer({"/a": b"secret data"}) as server:
        host = server.url.removeprefix("http://")
        data = HttpDataset([f"http://al%40ice:p%3Ass@{host}/a", f"http://al:pw@{host}/no"])
        error = load_error(data, io_mode, batch_size=None)
        assert data[0] == b"secret data"
        sent = {h.get("authorization") for h in server.headers_seen}
    expected = "Basic " + base64.b64encode(b"al@ice:p:ss").decode()
    assert expected in sent and "Basic " + base64.b64encode(b"al:pw").decode() in sent
    assert isinstance(error, FetchError) and error.status == 404, error
    assert "pw" not in str(error) and "***@" in str(error)


# Redirects: followed (bounded), counted, no credentials for another host


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
def test_redirects_are_followed_and_counted(io_mode, code):
    with LoopbackServer({"/new": BODY}) as server:
        server.fail("/old", Redirect("/new", code))
        data = HttpDataset([server.url + "/old"], retry=FAST)
        assert load(data, io_mode, batch_size=None) == [BODY]
        assert data.counters.redirects == 1 and server.requests["/new"] == 1


def test_too_many_redirects_and_no_location_fail_clearly(io_mode):
    with LoopbackServer({}) as server:
        server.fail("/loop", *[Redirect("/loop")] * 30)
        data = HttpDataset([server.url + "/loop"], retry=FAST)
        error = load_error(data, io_mode, batch_size=None)
        assert isinstance(error, FetchError) and error.status == 302, error
        assert "HTTP 302 Found after 10 redirects (not retried)" in str(error)
        assert server.requests["/loop"] == 11
        # A dataset of its own: a loader's read of "/bare" still in flight after the
        # error above could otherwise take the fault queued here (seen in CI).
        server.fail("/bare", Redirect(None, 301))
        with pytest.raises(FetchError, match=r"HTTP 301 Moved Permanently without a Location"):
            HttpDataset([server.url + "/bare"], retry=FAST)[0]


def test_authorization_is_not_sent_to_another_host(io_mode):
    with LoopbackServer({"/a": BODY}) as other, LoopbackServer({}) as server:
        server.fail("/a", Redirect(other.url + "/a", 307))
        host = server.url.removeprefix("http://")
        data = HttpDataset([f"http://u:pw@{host}/a"], headers={"Authorization": "Bearer t"})
        assert load(data, io_mode, batch_size=None) == [BODY]
        assert server.headers_seen[0].get("authorization") == "Bearer t"
        assert "authorization" not in other.headers_seen[0]


# Servers that close every connection (HTTP/1.0): one request per item


def test_an_http10_server_gets_one_request_per_item(io_mode):
    objects = {f"/{i}": BODY[: 100 + i] for i in range(40)}
    with LoopbackServer(objects, close=True) as server:
        data = HttpDataset([server.url + f"/{i}" for i in range(40)], retry=FAST)
        got = load(data, io_mode, batch_size=8, collate_fn=list)
        assert [item for batch in got for item in batch] == list(objects.values())
        assert sum(server.requests.values()) == 40 and server.connections == 40
        assert data.counters.requests == 40  # none sent on a connection the server closed


# Compression: the item is the bytes on the wire


class _GzipHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.server.accept_encodings.append(self.headers.get("Accept-Encoding"))  # type: ignore[attr-defined]
        body = gzip.compress(b"plain text " * 100)
        self.send_response(200)
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_a_gzip_body_is_the_item_as_sent(io_mode):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _GzipHandler)
    server.accept_encodings = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        data = HttpDataset([f"http://127.0.0.1:{server.server_port}/z"], retry=FAST)
        (item,) = load(data, io_mode, batch_size=None)
    finally:
        server.shutdown()
        server.server_close()
    assert gzip.decompress(item) == b"plain text " * 100
    assert server.accept_encodings == ["identity"]  # type: ignore[attr-defined]


# A host's requests start as TCP's window does (io/_host_limit.py): slow-accepting
# servers drop the connects past their backlog, and the kernel resends them 1 s later


def test_a_host_gets_eight_requests_at_first(io_mode):
    # Replies held 1 s: the first 8 requests are all at the server before any
    # reply, however busy the machine (0.3 s missed once beside a CPU load).
    with LoopbackServer({f"/{i}": BODY for i in range(16)}, latency=1.0) as server:
        data = HttpDataset([server.url + f"/{i}" for i in range(16)], retry=FAST)
        got = load(data, io_mode, batch_size=16, collate_fn=list)
        assert got == [[BODY] * 16]
        # 16 reads of one job start together; the host gets 8, then one more per
        # reply (two free turns each): never all 16 at once
        assert 8 <= server.peak_in_flight < 16
