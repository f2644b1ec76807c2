"""Shared helpers: the tests run against the backend chosen by DATALOADER_BACKEND
(default: the best installed one), so `DATALOADER_BACKEND=rust nox -s tests`
checks that backend."""

from __future__ import annotations

import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import dataloader_api
from dataloader_api.testing import os_thread_count, python_thread_count, wait_until

# The io datasets' two ways of reading: the reference on every backend (calling
# thread included), and the rust backend's native reads ($DATALOADER_NATIVE_IO).
_OURS = [n for n in dataloader_api.backends() if not n.startswith("broken-")]
IO_MODES = [pytest.param((b, "0"), id=f"{b or 'calling-thread'}-reference") for b in [None, *_OURS]]
IO_MODES += [pytest.param(("rust", "1"), id="rust-native")] if "rust" in _OURS else []
IO_READS = [pytest.param(("threads", "0"), id="reference")]
IO_READS += [pytest.param(("rust", "1"), id="native")] if "rust" in _OURS else []


@pytest.fixture(params=IO_MODES)
def io_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str | None:
    """A backend (None: the calling thread) and how it reads: every backend with the
    reference, and the rust backend natively."""
    backend, native = request.param
    monkeypatch.setenv("DATALOADER_NATIVE_IO", native)
    return backend  # type: ignore[no-any-return]


@pytest.fixture(params=IO_READS)
def reads(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The reference's reads (threads backend) and native ones (rust backend)."""
    backend, native = request.param
    monkeypatch.setenv("DATALOADER_NATIVE_IO", native)
    return backend  # type: ignore[no-any-return]


@pytest.fixture
def no_leaked_threads() -> Iterator[None]:
    """Fails the test if worker threads outlive it."""
    before_py = python_thread_count()
    before_os = os_thread_count()
    yield
    assert wait_until(lambda: python_thread_count() <= before_py), threading.enumerate()
    assert wait_until(lambda: os_thread_count() <= before_os), os_thread_count()


@pytest.fixture(scope="session")
def private_ca(tmp_path_factory: pytest.TempPathFactory) -> tuple[ssl.SSLContext, Path]:
    """A server certificate signed by a CA of the test's own, and that CA's file."""
    folder: Path = tmp_path_factory.mktemp("ca")

    def openssl(*arguments: str) -> None:
        subprocess.run(["openssl", *arguments], check=True, capture_output=True, cwd=folder)

    # The extensions Python 3.13's VERIFY_X509_STRICT asks for (key usage on the CA,
    # the issuer's key identifier on the server's certificate).
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=test CA",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            "-keyout", "ca.key", "-out", "ca.pem")  # fmt: skip
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
            "-keyout", "server.key", "-out", "server.csr")  # fmt: skip
    (folder / "ext.cnf").write_text(
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n"
        "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid,issuer\n"
    )
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "1", "-extfile", "ext.cnf",
            "-out", "server.pem")  # fmt: skip
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(folder / "server.pem", folder / "server.key")
    return context, folder / "ca.pem"
