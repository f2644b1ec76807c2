"""Shared helpers: the tests run against the backend chosen by DATALOADER_BACKEND
(default: the best installed one), so `DATALOADER_BACKEND=rust nox -s tests`
checks that backend."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from dataloader_api.testing import os_thread_count, wait_until


@pytest.fixture
def no_leaked_threads() -> Iterator[None]:
    """Fails the test if worker threads outlive it."""
    before_py = threading.active_count()
    before_os = os_thread_count()
    yield
    assert wait_until(lambda: threading.active_count() <= before_py), threading.enumerate()
    assert wait_until(lambda: os_thread_count() <= before_os), os_thread_count()
