"""Shared helpers: the tests run against the backend chosen by DATALOADER_BACKEND
(default: the best installed one), so `DATALOADER_BACKEND=rust nox -s tests`
checks that backend."""

from __future__ import annotations

import threading
from collections.abc import Iterator

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
