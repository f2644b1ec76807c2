"""Proxies from the environment are honoured alike on every path (issue 49):
``HTTP_PROXY`` (absolute-form requests to it), ``HTTPS_PROXY`` (a CONNECT
tunnel), ``ALL_PROXY``, ``NO_PROXY``, and a proxy's own credentials sent to it.
The origin is an address nothing answers on (TEST-NET-1), so an item read at
all was read through the counting proxy."""

from __future__ import annotations

import select
import socket
import ssl
import warnings

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
    the client keeps it, and refuses CONNECT (403) unless it ``tunnels``: then it
    relays the connection to the host asked for. Records each request's head
    (``heads``, as text). With a ``context`` it is an https proxy (TLS to it).
    RawServer's listener and accept loop, its own serving."""

    def __init__(self, context: ssl.SSLContext | None = None, tunnels: bool = False) -> None:
        super().__init__(lambda head: (), context=context)
        self.heads: list[str] = []  # text, where RawServer keeps bytes
        self.tunnels = tunnels

    def lines(self) -> list[str]:
        with self._lock:
            return [head.split("\r\n")[0] for head in self.heads]

    def _serve(self, connection: socket.socket) -> None:
        connection.settimeout(10)
        buffer = b""
        try:
            if self.context is not None:
                connection = self.context.wrap_socket(connection, server_side=True)
            while True:
                while b"\r\n\r\n" not in buffer:
                    data = connection.recv(65536)
                    if not data:
                        return
                    buffer += data
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                with self._lock:
                    self.heads.append(head.decode("latin-1"))
                if head.startswith(b"CONNECT ") and self.tunnels:
                    host, _, port = head.split(b" ")[1].decode().rpartition(":")
                    with socket.create_connection((host.strip("[]"), int(port))) as upstream:
                        connection.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                        _relay(connection, upstream)
                    return
                if head.startswith(b"CONNECT "):
                    connection.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
                    return
                reply = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(BODY)
                connection.sendall(reply + BODY)
        except OSError:
            pass
        finally:
            connection.close()


def _relay(client: socket.socket, upstream: socket.socket) -> None:
    """Bytes both ways until either side closes (one thread: an SSL socket is not
    read and written from two)."""
    while True:
        pending = isinstance(client, ssl.SSLSocket) and client.pending()
        ready = [client] if pending else select.select([client, upstream], [], [], 10)[0]
        if not ready:
            return
        for side in ready:
            data = side.recv(65536)
            if not data:
                return
            (upstream if side is client else client).sendall(data)


@pytest.fixture
def clean(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy variable of the machine's."""
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


@pytest.fixture
def proxy(clean):
    with CountingProxy() as running:
        yield running


@pytest.fixture
def trusted_ca(private_ca, monkeypatch: pytest.MonkeyPatch) -> ssl.SSLContext:
    """A server context whose CA is in SSL_CERT_FILE: every path verifies it."""
    context, ca = private_ca
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    return context  # type: ignore[no-any-return]


def load(data, backend):
    workers = 0 if backend is None else 2
    return list(DataLoader(data, num_workers=workers, backend=backend, batch_size=None))


def nowhere(scheme: str = "http") -> HttpDataset:
    """One item at NOWHERE: read at all, it was read through the proxy."""
    return HttpDataset([f"{scheme}://{NOWHERE}/a"], retry=FAST, timeout=5)


def store_nowhere() -> ObjectStoreDataset:
    return ObjectStoreDataset(
        "s3://bucket/p/", ["a"], endpoint_url=f"http://{NOWHERE}", anonymous=True, retry=FAST,
        timeout=5,
    )  # fmt: skip


def fields(head: str) -> dict[str, str]:
    lines = head.split("\r\n")[1:]
    return {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines)}


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
    assert load(nowhere(), io_mode) == [BODY]
    (head,) = proxy.heads
    assert fields(head).get("proxy-authorization") == "Basic cHU6cHA=", head  # base64("pu:pp")


def test_an_https_url_asks_the_proxy_for_a_tunnel(io_mode, proxy, monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy.port}")
    with pytest.raises(FetchError) as caught:
        load(nowhere("https"), io_mode)
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
    assert load(store_nowhere(), io_mode) == [BODY]
    (line,) = proxy.lines()
    assert line.startswith(f"GET http://{NOWHERE}/bucket/p/a"), line


def closed_port() -> int:
    """A port nothing listens on (a connect there is refused at once)."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        return int(listener.getsockname()[1])


def direct(host: str = "127.0.0.1") -> RawServer:
    """An origin that answers ``direct``: a read that went around the proxy."""
    reply = b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\ndirect"
    return RawServer(lambda head: [reply], host=host)


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "ALL_PROXY"])
def test_an_https_proxy_is_reached_over_tls(io_mode, clean, trusted_ca, monkeypatch, variable):
    # TLS to the proxy, verified with the roots of SSL_CERT_FILE as every origin is;
    # an http URL then goes in absolute form inside it, the proxy's credentials too.
    with CountingProxy(trusted_ca) as proxy:
        monkeypatch.setenv(variable, f"https://pu:pp@127.0.0.1:{proxy.port}")
        assert load(nowhere(), io_mode) == [BODY]
    assert proxy.lines() == [f"GET http://{NOWHERE}/a HTTP/1.1"]
    assert fields(proxy.heads[0]).get("proxy-authorization") == "Basic cHU6cHA="


def test_an_https_proxy_that_does_not_verify_is_not_used(io_mode, clean, private_ca, monkeypatch):
    context, _ = private_ca  # its CA is not in the default roots
    with CountingProxy(context) as proxy:
        monkeypatch.setenv("HTTP_PROXY", f"https://127.0.0.1:{proxy.port}")
        with pytest.raises(FetchError, match=r"(?i)certificate"):
            load(nowhere(), io_mode)
    assert proxy.lines() == []


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_an_https_url_tunnels_through_either_proxy(io_mode, clean, trusted_ca, monkeypatch, scheme):
    context = trusted_ca
    payload = bytes(range(256)) * 64
    head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(payload)
    with (
        RawServer(lambda _: [head + payload], context=context) as origin,
        CountingProxy(context if scheme == "https" else None, tunnels=True) as proxy,
    ):
        monkeypatch.setenv("HTTPS_PROXY", f"{scheme}://127.0.0.1:{proxy.port}")
        data = HttpDataset([origin.url + "/item"], retry=FAST, timeout=5)
        assert load(data, io_mode) == [payload]
    assert proxy.lines() == [f"CONNECT {origin.url.removeprefix('https://')} HTTP/1.1"]
    assert origin.heads[0].startswith(b"GET /item HTTP/1.1\r\n")


def test_an_object_store_goes_through_an_https_proxy(io_mode, clean, trusted_ca, monkeypatch):
    with CountingProxy(trusted_ca) as proxy:
        monkeypatch.setenv("HTTP_PROXY", f"https://127.0.0.1:{proxy.port}")
        assert load(store_nowhere(), io_mode) == [BODY]
    (line,) = proxy.lines()
    assert line.startswith(f"GET http://{NOWHERE}/bucket/p/a"), line


# NO_PROXY, host of the URL, whether the read goes direct, what a warning says.
NO_PROXY_CASES = [
    ("127.0.0.0/8", "127.0.0.1", True, None),
    ("10.0.0.0/8, 127.0.0.1/32", "127.0.0.1", True, None),
    ("127.0.0.1", "127.0.0.1", True, None),
    ("10.0.0.0/8", "127.0.0.1", False, None),
    ("::/0", "127.0.0.1", False, None),  # an IPv6 network holds no IPv4 address
    ("localhost", "127.0.0.1", False, None),  # nothing is resolved
    ("LOCALHOST", "localhost", True, None),  # names: ASCII case-insensitive
    (".localhost", "localhost", True, None),  # a leading dot: the name and below
    ("host", "localhost", False, None),  # a suffix, not a subdomain
    ("*", "localhost", True, "'*' bypasses the proxy for host names but not"),
    ("*", "127.0.0.1", False, "add '0.0.0.0/0,::/0'"),
    ("127.0.0.1:{port}", "127.0.0.1", False, "ports are not compared: write '127.0.0.1'"),
    ("*.localhost", "a.localhost", False, "write '.localhost'"),
    ("127.0.0.0/8", "127.1", True, None),  # read as a URL parser reads it: 127.0.0.1
    ("::1", "::1", True, None),
    ("::/0", "::1", True, None),
    ("fd00::/8", "::1", False, None),
    ("[::1]", "::1", False, "without brackets"),
]


@pytest.mark.parametrize(("no_proxy", "host", "goes_direct", "warned"), NO_PROXY_CASES)
def test_no_proxy_matches_as_reqwest_does(
    io_mode, proxy, monkeypatch, no_proxy, host, goes_direct, warned
):
    with direct("::1" if ":" in host else "127.0.0.1") as origin:
        url = f"http://{f'[{host}]' if ':' in host else host}:{origin.port}/a"
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
        monkeypatch.setenv("NO_PROXY", no_proxy.format(port=origin.port))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            items = load(HttpDataset([url], retry=FAST, timeout=5), io_mode)
    said = [str(w.message) for w in caught if "NO_PROXY" in str(w.message)]
    assert items == [b"direct" if goes_direct else BODY]
    assert proxy.lines() == ([] if goes_direct else [f"GET {url} HTTP/1.1"])
    assert all(warned in text for text in said) and bool(said) == bool(warned), said


def test_the_upper_case_variable_is_read_first(io_mode, proxy, monkeypatch):
    # As reqwest reads them (curl and requests read the lower-case one): said aloud.
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
    monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{closed_port()}")
    with pytest.warns(RuntimeWarning, match="HTTP_PROXY and http_proxy differ: HTTP_PROXY is used"):
        assert load(nowhere(), io_mode) == [BODY]
    assert proxy.lines() == [f"GET http://{NOWHERE}/a HTTP/1.1"]


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("socks5://127.0.0.1:1080", "HTTP_PROXY='socks5://127.0.0.1:1080' is not a proxy"),
        ("ftp://u:secret@127.0.0.1:21", "HTTP_PROXY='ftp://127.0.0.1:21' is not a proxy"),
        (" http://127.0.0.1:3128", "HTTP_PROXY has spaces around its value"),
    ],
)
def test_a_proxy_neither_path_can_use_is_a_value_error(io_mode, proxy, monkeypatch, value, said):
    # reqwest would speak HTTP to a socks proxy, or go direct past the others.
    monkeypatch.setenv("HTTP_PROXY", value)
    data = HttpDataset([f"http://127.0.0.1:{closed_port()}/a"], retry=FAST, timeout=5)
    with pytest.raises(ValueError, match=r"http://host:port or https://host:port|remove them") as e:
        load(data, io_mode)
    assert said in str(e.value) and "secret" not in str(e.value)
    assert proxy.lines() == []
