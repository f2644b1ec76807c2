"""Proxies from the environment are honoured alike on every path (issue 49):
``HTTP_PROXY`` (absolute-form requests to it), ``HTTPS_PROXY`` (a CONNECT
tunnel), ``ALL_PROXY``, ``NO_PROXY``, and a proxy's own credentials sent to it.
The origin is an address nothing answers on (TEST-NET-1), so an item read at
all was read through the counting proxy."""

from __future__ import annotations

import socket

import pytest
from rawserver import RawServer

from dataloader_api import DataLoader
from dataloader_api.io import FetchError, HttpDataset, ObjectStoreDataset, RetryPolicy
from dataloader_api.io.loopback import LoopbackServer

FAST = RetryPolicy(max_retries=1, backoff=0.01, max_backoff=0.02)
BODY = b"through the proxy"
NOWHERE = "192.0.2.1:8099"  # TEST-NET-1: a direct connect never succeeds
VARIABLES = ["http_proxy", "https_proxy", "all_proxy", "no_proxy"]


class CountingProxy(RawServer):
    """Answers absolute-form GETs itself (``BODY``), on one connection as long as
    the client keeps it, and refuses CONNECT (403); records each request's head
    (``heads``, as text). RawServer's listener and accept loop, its own serving."""

    def __init__(self) -> None:
        super().__init__(lambda head: ())
        self.heads: list[str] = []  # text, where RawServer keeps bytes

    def lines(self) -> list[str]:
        with self._lock:
            return [head.split("\r\n")[0] for head in self.heads]

    def _serve(self, connection: socket.socket) -> None:
        connection.settimeout(10)
        buffer = b""
        try:
            while True:
                while b"\r\n\r\n" not in buffer:
                    data = connection.recv(65536)
                    if not data:
                        return
                    buffer += data
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                with self._lock:
                    self.heads.append(head.decode("latin-1"))
                if head.startswith(b"CONNECT "):
                    connection.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
                    return
                reply = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(BODY)
                connection.sendall(reply + BODY)
        except OSError:
            pass
        finally:
            connection.close()


@pytest.fixture
def proxy(monkeypatch: pytest.MonkeyPatch):
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    with CountingProxy() as running:
        yield running


def load(data, backend):
    workers = 0 if backend is None else 2
    return list(DataLoader(data, num_workers=workers, backend=backend, batch_size=None))


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "http_proxy", "ALL_PROXY"])
def test_an_http_url_goes_through_the_proxy_in_absolute_form(io_mode, proxy, monkeypatch, variable):
    monkeypatch.setenv(variable, f"http://127.0.0.1:{proxy.port}")
    data = HttpDataset([f"http://{NOWHERE}/a?x=1", f"http://{NOWHERE}/b"], retry=FAST, timeout=5)
    assert load(data, io_mode) == [BODY, BODY]
    assert sorted(proxy.lines()) == [
        f"GET http://{NOWHERE}/a?x=1 HTTP/1.1",
        f"GET http://{NOWHERE}/b HTTP/1.1",
    ]


def test_the_proxys_credentials_go_to_the_proxy(io_mode, proxy, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", f"http://pu:pp@127.0.0.1:{proxy.port}")
    data = HttpDataset([f"http://{NOWHERE}/a"], retry=FAST, timeout=5)
    assert load(data, io_mode) == [BODY]
    (head,) = proxy.heads
    fields = {
        k.strip().lower(): v.strip()
        for k, _, v in (x.partition(":") for x in head.split("\r\n")[1:])
    }
    assert fields.get("proxy-authorization") == "Basic cHU6cHA=", head  # base64("pu:pp")


def test_an_https_url_asks_the_proxy_for_a_tunnel(io_mode, proxy, monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy.port}")
    data = HttpDataset([f"https://{NOWHERE}/a"], retry=FAST, timeout=5)
    with pytest.raises(FetchError) as caught:
        load(data, io_mode)
    assert "item 0" in str(caught.value) and f"https://{NOWHERE}/a" in str(caught.value)
    lines = proxy.lines()
    assert lines and all(line == f"CONNECT {NOWHERE} HTTP/1.1" for line in lines), lines


def test_no_proxy_and_the_other_scheme_go_direct(io_mode, proxy, monkeypatch):
    with LoopbackServer({"/a": b"direct"}) as server:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
        monkeypatch.setenv("NO_PROXY", "example.com,127.0.0.1")
        assert load(HttpDataset([server.url + "/a"], retry=FAST), io_mode) == [b"direct"]
        monkeypatch.delenv("NO_PROXY")
        monkeypatch.delenv("HTTP_PROXY")
        monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy.port}")
        assert load(HttpDataset([server.url + "/a"], retry=FAST), io_mode) == [b"direct"]
    assert proxy.lines() == []


def test_an_object_store_goes_through_the_proxy(io_mode, proxy, monkeypatch):
    # object_store's client on the rust backend, the reference's elsewhere.
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
    data = ObjectStoreDataset(
        "s3://bucket/p/", ["a"], endpoint_url=f"http://{NOWHERE}", anonymous=True, retry=FAST,
        timeout=5,
    )  # fmt: skip
    assert load(data, io_mode) == [BODY]
    (line,) = proxy.lines()
    assert line.startswith(f"GET http://{NOWHERE}/bucket/p/a"), line
