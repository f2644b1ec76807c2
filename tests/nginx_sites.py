"""nginx for the tests (Debian's nginx 1.22 and its echo module, provisioned by
scripts/provision-nginx.sh; benchmarks/nginx_server.py writes its configuration):
a keep-alive site, one closing every connection and one with a latency tail,
each reply held 2 ms (``/tail/{i}`` 0.3 s), and ``/static/`` on each."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SERVER = Path(__file__).resolve().parents[1] / "benchmarks" / "nginx_server.py"
#: the objects' size and count (``generated_object``)
SIZE = 20_000
OBJECTS = 200


def _server_module() -> Any:
    spec = importlib.util.spec_from_file_location("nginx_server", SERVER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def nginx_sites() -> Iterator[Any]:
    """For a module-scoped fixture: the running server (``urls`` by site name,
    ``static`` the folder served at ``/static/``), stopped afterwards."""
    if shutil.which("apt-get") is None:
        pytest.skip("nginx comes from Debian's packages (apt-get download): not a Debian machine")
    module = _server_module()
    sites = {
        "keep-alive": module.Site(latency=0.002),
        "closing": module.Site(latency=0.002, keepalive=False),
        "tail": module.Site(latency=0.002, tail=0.3),
    }
    server = module.Nginx(OBJECTS, SIZE, sites)
    try:
        yield server
    finally:
        server.stop()
