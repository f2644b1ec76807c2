"""A reply that breaks HTTP/1.1 (a bad Content-Length, a chunk size that is not
hex, a huge header line, endless or too many header fields, a certificate that
does not verify) is a FetchError naming the item and the URL, on every backend,
with the reference's reads and the rust backend's native ones; the head of a
reply is bounded alike (issue 49)."""

from __future__ import annotations

import itertools
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from rawserver import RawServer

from dataloader_api import DataLoader
from dataloader_api.io import FetchError, HttpDataset, ObjectStoreDataset, RetryPolicy
from dataloader_api.io._http_head import MAX_HEAD_BYTES, MAX_HEADER_FIELDS

FAST = RetryPolicy(max_retries=1, backoff=0.01, max_backoff=0.02)


def load(data, backend):
    workers = 0 if backend is None else 2
    return list(DataLoader(data, num_workers=workers, backend=backend, batch_size=None))


def fails_naming_item_and_url(server: RawServer, backend, path: str = "/item") -> FetchError:
    data = HttpDataset([server.url + path], retry=FAST, timeout=20)
    with pytest.raises(FetchError) as caught:
        load(data, backend)
    text = str(caught.value)
    assert "item 0" in text and f"127.0.0.1:{server.port}{path}" in text, text
    return caught.value


def once(reply: bytes):
    return lambda head: [reply]


OK = b"HTTP/1.1 200 OK\r\n"


@pytest.mark.parametrize(
    "reply",
    [
        OK + b"Content-Length: 12abc\r\n\r\nhello",
        OK + b"Content-Length: -5\r\n\r\nhello",
        OK + b"Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
        OK + b"X-Big: " + b"a" * (2 << 20) + b"\r\nContent-Length: 5\r\n\r\nhello",
    ],
    ids=["content-length-not-a-number", "content-length-negative", "chunk-not-hex", "2mib-line"],
)
def test_a_malformed_reply_is_a_fetch_error(io_mode, reply):
    with RawServer(once(reply)) as server:
        fails_naming_item_and_url(server, io_mode)


def test_more_header_fields_than_the_cap_is_a_fetch_error(io_mode):
    fields = b"".join(b"X-F%d: 1\r\n" % i for i in range(MAX_HEADER_FIELDS + 1))
    with RawServer(once(OK + fields + b"Content-Length: 5\r\n\r\nhello")) as server:
        fails_naming_item_and_url(server, io_mode)


def test_headers_past_the_byte_cap_are_a_fetch_error(io_mode):
    # Ten fields of 50,000 bytes: each line is short enough, all together are not.
    fields = b"".join(b"X-F%d: %s\r\n" % (i, b"a" * 50_000) for i in range(10))
    assert len(fields) > MAX_HEAD_BYTES
    with RawServer(once(OK + fields + b"Content-Length: 5\r\n\r\nhello")) as server:
        fails_naming_item_and_url(server, io_mode)


def test_headers_within_the_caps_are_read(io_mode):
    fields = b"".join(b"X-F%d: %s\r\n" % (i, b"a" * 3000) for i in range(MAX_HEADER_FIELDS - 2))
    with RawServer(once(OK + fields + b"Content-Length: 5\r\n\r\nhello")) as server:
        data = HttpDataset([server.url + "/item"], retry=FAST, timeout=20)
        assert load(data, io_mode) == [b"hello"]


def endless_headers(head: bytes) -> Iterator[bytes]:
    yield OK
    for i in itertools.count():
        yield b"X-Endless-%d: %s\r\n" % (i, b"a" * 60)


def test_an_endless_header_stream_ends_at_the_cap(io_mode):
    with RawServer(endless_headers) as server:
        fails_naming_item_and_url(server, io_mode)
        # The client stopped reading after the cap (plus what the socket buffers
        # hold), not at the timeout: per connection, far below 64 MiB.
        assert server.sent < 64 * 2**20 * server.connections


@pytest.fixture(scope="module")
def self_signed(tmp_path_factory: pytest.TempPathFactory) -> ssl.SSLContext:
    folder: Path = tmp_path_factory.mktemp("tls")
    key, cert = folder / "key.pem", folder / "cert.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"),
            *("-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return context


def test_a_certificate_that_does_not_verify_is_not_retried(io_mode, self_signed):
    reply = once(OK + b"Content-Length: 5\r\n\r\nhello")
    with RawServer(reply, context=self_signed) as server:
        error = fails_naming_item_and_url(server, io_mode)
        assert "certificate" in str(error).lower(), error
        assert error.attempts == 1, error
        assert server.connections == 1


def test_an_object_stores_certificate_that_does_not_verify_is_not_retried(io_mode, self_signed):
    reply = once(OK + b"Content-Length: 5\r\n\r\nhello")
    with RawServer(reply, context=self_signed) as server:
        data = ObjectStoreDataset(
            "s3://bucket/", ["k"], endpoint_url=server.url, anonymous=True, retry=FAST
        )
        with pytest.raises(FetchError) as caught:
            load(data, io_mode)
        assert "item 0" in str(caught.value) and "s3://bucket/k" in str(caught.value)
        assert "certificate" in str(caught.value).lower(), caught.value
        assert server.connections == 1


def test_ssl_cert_file_is_the_trusted_store_on_every_backend(io_mode, private_ca, monkeypatch):
    """As OpenSSL reads it: the CAs in SSL_CERT_FILE are the ones trusted, so a
    private CA works on every backend (rust: rustls-native-certs reads it; the
    Mozilla roots bundled in reqwest are off, so no root is trusted that the
    reference would not trust)."""
    context, ca = private_ca
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    reply = once(OK + b"Content-Length: 5\r\n\r\nhello")
    with RawServer(reply, context=context) as server:
        data = HttpDataset([server.url + "/item"], retry=FAST)
        assert load(data, io_mode) == [b"hello"]
