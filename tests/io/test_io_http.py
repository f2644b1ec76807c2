"""HttpDataset against a real HTTP server on loopback, with injected faults."""

from __future__ import annotations

import socket

import numpy as np
import pytest
from rawserver import RawServer

import dataloader_api
from dataloader_api import DataLoader
from dataloader_api.io import FetchError, HttpDataset, ItemTooLargeError, RetryPolicy
from dataloader_api.io.loopback import Delay, LoopbackServer, Redirect, Reset, Status
from dataloader_api.testing import wait_until

BACKENDS = [None, *[n for n in dataloader_api.backends() if not n.startswith("broken-")]]
COUNT = 64
FAST = RetryPolicy(max_retries=4, backoff=0.01, max_backoff=0.05)


def body(i: int) -> bytes:
    return bytes((i * 7 + j) % 256 for j in range(500 + 37 * i))


@pytest.fixture
def server():
    with LoopbackServer({f"/items/{i}.bin": body(i) for i in range(COUNT)}) as running:
        yield running


def dataset(server, **options) -> HttpDataset:
    options.setdefault("retry", FAST)
    return HttpDataset(server.url + "/items/{i}.bin", columns={"i": list(range(COUNT))}, **options)


def items_of(loader) -> list[bytes]:
    return [item for batch in loader for item in batch]


def workers_for(backend):
    return 0 if backend is None else 2


def test_every_fault_survived_each_item_once_and_byte_exact(server, io_mode):
    server.fail("/items/3.bin", Status(503, retry_after=0.02), Status(429))
    server.fail("/items/10.bin", Reset(after=100))  # connection reset mid-body
    server.fail("/items/11.bin", Reset(after=0))
    server.fail("/items/20.bin", Delay(1.0))  # past the timeout
    server.fail("/items/30.bin", Status(500), Status(502), Status(504), Status(408))
    data = dataset(server, timeout=0.3)
    loader = DataLoader(
        data, batch_size=8, shuffle=True, seed=1, num_workers=workers_for(io_mode),
        backend=io_mode, collate_fn=list,
    )  # fmt: skip
    got = items_of(loader)
    assert got != [body(i) for i in range(COUNT)]  # shuffled
    assert sorted(got) == sorted(body(i) for i in range(COUNT))  # each once, byte-exact
    assert data.counters.retries == 9
    assert server.requests["/items/30.bin"] == 5
    assert server.requests["/items/5.bin"] == 1


@pytest.mark.parametrize("status", [404, 403, 401, 400])
def test_permanent_statuses_fail_at_once_for_the_right_index(server, status, reads):
    server.fail("/items/13.bin", Status(status))
    loader = DataLoader(dataset(server), batch_size=4, num_workers=2, backend=reads,
                        collate_fn=list)  # fmt: skip
    with pytest.raises(FetchError) as raised:
        items_of(loader)
    error = raised.value
    assert error.index == 13 and error.status == status and error.attempts == 1
    assert f"HTTP {status}" in str(error) and "/items/13.bin" in str(error)
    assert "item 13" in str(error)
    assert server.requests["/items/13.bin"] == 1


def test_missing_object_is_a_404(server):
    data = HttpDataset([server.url + "/nowhere"], retry=FAST)
    with pytest.raises(FetchError, match=r"item 0: GET http://127\.0\.0\.1:\d+/nowhere: HTTP 404"):
        data[0]


def test_retries_run_out_with_the_last_failure_named(server, reads):
    server.fail("/items/2.bin", *[Status(503)] * 10)
    data = dataset(server, retry=RetryPolicy(max_retries=2, backoff=0.01))
    with pytest.raises(FetchError) as raised:
        items_of(DataLoader(data, batch_size=4, num_workers=2, backend=reads, collate_fn=list))
    assert raised.value.index == 2 and raised.value.attempts == 3
    assert raised.value.status == 503
    assert "failed after 3 attempts; last: HTTP 503 Service Unavailable" in str(raised.value)
    assert server.requests["/items/2.bin"] == 3


def test_credentials_never_appear_in_errors(server, reads):
    url = server.url.replace("http://", "http://user:hunter2@") + "/x?X-Amz-Signature=s3cr3t&a=1"
    data = HttpDataset([url], headers={"Authorization": "Bearer t0ken"}, retry=FAST)
    with pytest.raises(FetchError) as raised:
        list(DataLoader(data, num_workers=1, backend=reads))
    text = str(raised.value)
    assert "hunter2" not in text and "s3cr3t" not in text and "t0ken" not in text
    assert "***@127.0.0.1" in text and "X-Amz-Signature=***" in text and "a=1" in text


def test_headers_go_with_every_request_and_connections_are_reused(server, reads):
    data = dataset(server, headers={"Authorization": "Bearer abc", "X-Trace": "7"})
    loader = DataLoader(data, batch_size=8, num_workers=2, backend=reads, collate_fn=list)
    items_of(loader)
    first_epoch = server.connections
    items_of(loader)
    assert len(server.headers_seen) == 2 * COUNT
    assert all(h["authorization"] == "Bearer abc" for h in server.headers_seen)
    assert all(h["x-trace"] == "7" for h in server.headers_seen)
    # Keep-alive: in each epoch connections serve several requests. An epoch's
    # close closes the idle ones (test_break_and_close_leave_no_idle_connection_open),
    # so the second epoch opens its own.
    assert first_epoch < COUNT
    assert server.connections - first_epoch < COUNT
    assert data.counters.requests == 2 * COUNT and data.counters.retries == 0
    assert data.counters.bytes == 2 * sum(len(body(i)) for i in range(COUNT))


def test_max_bytes_is_a_permanent_error(server, reads):
    data = dataset(server, max_bytes=1000)
    loader = DataLoader(data, batch_size=4, num_workers=2, backend=reads, collate_fn=list)
    it = iter(loader)
    assert [next(it) for _ in range(3)] == [[body(i) for i in range(j, j + 4)] for j in (0, 4, 8)]
    with pytest.raises(
        ItemTooLargeError, match=r"item 14: .*14\.bin: 1018 bytes, more than "
    ) as raised:
        list(it)
    assert raised.value.index == 14 and "max_bytes=1000" in str(raised.value)
    assert server.requests["/items/14.bin"] == 1


@pytest.mark.timing
def test_break_is_prompt_while_requests_are_in_flight(server, reads):
    for i in range(8, COUNT):
        server.fail(f"/items/{i}.bin", Delay(30))
    loader = DataLoader(dataset(server), batch_size=8, num_workers=2, backend=reads,
                        collate_fn=list)  # fmt: skip
    it = iter(loader)
    assert next(it) == [body(i) for i in range(8)]
    # 16 once the first 8 replied (io/_host_limit.py), fewer if a connect stalled
    # under load and the host's limit was halved: some, at least, are in flight.
    assert wait_until(lambda: server.in_flight >= 4)
    del it  # a `break`
    loader.close()
    # The threads end with the 30 s responses still pending: they did not wait.
    assert loader.join(20)
    assert server.in_flight >= 1, "the threads waited for the delayed responses"


def test_resume_mid_epoch_delivers_the_rest_once(server, io_mode):
    workers = workers_for(io_mode)
    options = dict(batch_size=4, shuffle=True, seed=9, num_workers=workers, backend=io_mode,
                   collate_fn=list)  # fmt: skip
    loader = DataLoader(dataset(server), **options)
    it = iter(loader)
    first = [next(it) for _ in range(5)]
    state = loader.state_dict()
    resumed = DataLoader(dataset(server), **options)
    resumed.load_state_dict(state)
    rest = list(resumed)
    got = [item for batch in first + rest for item in batch]
    assert sorted(got) == sorted(body(i) for i in range(COUNT))


def test_distributed_ranks_share_the_items_exactly_once(server, monkeypatch, reads):
    shards = []
    for rank in (0, 1):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "2")
        loader = DataLoader(
            dataset(server), batch_size=4, shuffle=True, seed=3, num_workers=2, backend=reads,
            distributed=True, collate_fn=list,
        )  # fmt: skip
        shards.append(items_of(loader))
    assert len(shards[0]) == len(shards[1]) == COUNT // 2
    assert sorted(shards[0] + shards[1]) == sorted(body(i) for i in range(COUNT))


@pytest.mark.timing
def test_many_requests_in_flight_on_few_threads(server, reads):
    server.latency = 0.2
    data = dataset(server)
    loader = DataLoader(data, batch_size=16, num_workers=1, max_concurrency=64, backend=reads,
                        collate_fn=list)  # fmt: skip
    assert items_of(loader) == [body(i) for i in range(COUNT)]
    # One thread: a batch at once natively, more async; a host gets 8 at first,
    # then more as they reply (fewer if a connect stalls under load). Counted.
    assert server.peak_in_flight >= 8


def test_composes_with_image_transforms(server):
    Image = pytest.importorskip("PIL.Image")
    import io

    from dataloader_api import transforms as T

    rng = np.random.default_rng(0)
    for i in range(8):
        buffer = io.BytesIO()
        Image.fromarray(rng.integers(0, 256, (20 + i, 24, 3), np.uint8)).save(buffer, "PNG")
        server.objects[f"/img/{i}.png"] = buffer.getvalue()
    urls = [f"{server.url}/img/{i}.png" for i in range(8)]
    pipeline = T.Compose([T.Decode(), T.Resize((8, 8)), T.ToCHW()])
    results = {}
    for backend in BACKENDS[1:]:  # rust: native reads, then the native pipeline
        loader = DataLoader(
            HttpDataset(urls, retry=FAST), batch_size=4, num_workers=2, backend=backend,
            transform=pipeline, collate_fn=T.ImageCollate(),
        )  # fmt: skip
        results[backend] = np.concatenate([batch for batch in loader])
    first = next(iter(results.values()))
    assert first.shape == (8, 3, 8, 8)
    for images in results.values():
        assert np.abs(images.astype(int) - first.astype(int)).max() <= 1


def test_bad_arguments_name_the_value():
    with pytest.raises(ValueError, match=r"timeout must be a number of seconds > 0, got 0"):
        HttpDataset(["http://127.0.0.1/a"], timeout=0)
    with pytest.raises(TypeError, match="pass max_retries= or retry=, not both"):
        HttpDataset(["http://127.0.0.1/a"], max_retries=2, retry=FAST)
    with pytest.raises(ValueError, match=r"max_connections must be an int >= 1, got 0"):
        HttpDataset(["http://127.0.0.1/a"], max_connections=0)
    with pytest.raises(ValueError, match="header 'Host' is set by the client"):
        HttpDataset(["http://127.0.0.1/a"], headers={"Host": "x"})
    with pytest.raises(ValueError, match=r"'ftp://127\.0\.0\.1/a' is not an http\(s\) URL"):
        HttpDataset(["ftp://127.0.0.1/a"])[0]
    with pytest.raises(IndexError, match="HttpDataset index 1 is out of range for 1 items"):
        HttpDataset(["http://127.0.0.1/a"])[1]


def test_worker_info_in_transforms_is_the_workers(server, reads):
    import threading

    from dataloader_api import get_worker_info

    seen = {}

    def transform(index, item):
        info = get_worker_info()
        seen[index] = (info.id, info.num_workers, threading.current_thread().name)
        return item

    loader = DataLoader(dataset(server), batch_size=4, num_workers=2, backend=reads,
                        transform=transform, collate_fn=list)  # fmt: skip
    assert len(items_of(loader)) == COUNT
    assert sorted(seen) == list(range(COUNT))
    assert {worker for worker, _, _ in seen.values()} <= {0, 1}
    assert {count for _, count, _ in seen.values()} == {2}


def test_counters_have_the_same_fields_and_meaning_on_every_backend(io_mode):
    """Issue 48: each counter counts the same thing on every backend and read path,
    checked against what the server saw (connections were 0 on rust's native reads)."""
    objects = {f"/items/{i}.bin": body(i) for i in range(COUNT)}
    with LoopbackServer(objects) as server:
        server.fail("/items/3.bin", Status(503))  # one retry
        server.fail("/items/5.bin", Redirect("/items/6.bin", 302))  # one redirect
        data = dataset(server)
        loader = DataLoader(data, batch_size=8, num_workers=workers_for(io_mode),
                            backend=io_mode, collate_fn=list)  # fmt: skip
        items = items_of(loader)
        assert items[5] == body(6)
        counters = data.counters
        assert sorted(vars(counters)) == ["bytes", "connections", "redirects", "requests",
                                          "retries"]  # fmt: skip
        # every request sent: each item's, the retry's and the redirect's hop
        assert counters.requests == sum(server.requests.values()) == COUNT + 2
        assert (counters.retries, counters.redirects) == (1, 1)
        assert counters.bytes == sum(len(item) for item in items)
        assert 1 <= counters.connections == server.connections <= COUNT + 2


def test_a_refused_connect_is_not_a_request_on_any_backend(io_mode):
    """Issue 46: ``requests`` counts requests sent, as the server counts them; a
    connect the host refused sent none (rust counted them, the reference not)."""
    with socket.socket() as bound:  # bound, never listening: connects are refused
        bound.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{bound.getsockname()[1]}/item"
        data = HttpDataset([url], retry=RetryPolicy(max_retries=2, backoff=0.01))
        loader = DataLoader(data, batch_size=None, num_workers=workers_for(io_mode),
                            backend=io_mode)  # fmt: skip
        with pytest.raises(FetchError, match="after 3 attempts"):
            list(loader)
    counters = data.counters
    assert (counters.requests, counters.connections, counters.retries) == (0, 0, 2)


# An HTTP/2 server's answer to a request that is not its preface: its SETTINGS,
# then GOAWAY with PROTOCOL_ERROR (as hyper's h2 and nghttpd send).
HTTP2_REPLY = b"\0\0\0\x04\0\0\0\0\0" + b"\0\0\x08\x07\0\0\0\0\0" + bytes(7) + b"\x01"


def test_an_http2_only_server_is_a_clear_error_not_retried(io_mode):
    with RawServer(lambda head: [HTTP2_REPLY]) as server:
        data = HttpDataset([server.url + "/item"], retry=FAST)
        loader = DataLoader(data, batch_size=None, num_workers=workers_for(io_mode),
                            backend=io_mode)  # fmt: skip
        with pytest.raises(FetchError) as caught:
            list(loader)
    text = str(caught.value)
    assert "speaks HTTP/2 only" in text and "not retried" in text and "item 0" in text, text
    assert caught.value.attempts == 1 and data.counters.retries == 0
    assert data.counters.requests == 1


def test_break_and_close_leave_no_idle_connection_open(server, reads):
    """Issue 46: rust kept 1-3 idle keep-alive connections open after a ``break``
    until the dataset went; the reference closes them when the epoch ends."""
    data = dataset(server)
    loader = DataLoader(data, batch_size=8, num_workers=2, backend=reads, collate_fn=list)
    batches = iter(loader)
    assert len(next(batches)) == 8
    assert server.open_connections > 0
    batches.close()  # type: ignore[attr-defined]
    assert wait_until(lambda: server.open_connections == 0)
    assert data.counters.connections >= 1  # the dataset is still alive: not its finalizer
