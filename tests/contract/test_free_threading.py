"""On a free-threaded build the GIL stays off with the backend loaded and running."""

from __future__ import annotations

import sys
import sysconfig

import pytest

from dataloader_api import DataLoader, resolve_backend

FREE_THREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))


@pytest.mark.skipif(not FREE_THREADED, reason="needs a free-threaded CPython build")
def test_gil_stays_disabled_after_import_and_an_epoch():
    resolve_backend()  # imports the selected backend
    assert not sys._is_gil_enabled()
    assert sum(len(b) for b in DataLoader(range(100), batch_size=10, num_workers=2)) == 100
    assert not sys._is_gil_enabled()
