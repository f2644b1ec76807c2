"""Reads from nginx, a server nobody here wrote (``tests/nginx_sites.py``): every
byte exact on every backend from a keep-alive site, a site closing every
connection and one with a latency tail. Tar shards from nginx:
``tests/shards/test_shards_nginx.py``."""

from __future__ import annotations

import pytest
from nginx_sites import OBJECTS, SIZE, nginx_sites

import dataloader_api
from dataloader_api import DataLoader
from dataloader_api.io import HttpDataset
from dataloader_api.io.loopback import generated_object

BACKENDS = [n for n in dataloader_api.backends() if not n.startswith("broken-")]


@pytest.fixture(scope="module")
def nginx():
    yield from nginx_sites()


@pytest.mark.parametrize("site", ["keep-alive", "closing", "tail"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_every_byte_from_nginx_is_exact(nginx, backend, site):
    base = nginx.urls[site]
    # on the tail site every 16th reply is held 0.3 s
    urls = [
        f"{base}/tail/{i}" if site == "tail" and i % 16 == 8 else f"{base}/{i}"
        for i in range(OBJECTS)
    ]
    loader = DataLoader(HttpDataset(urls), batch_size=8, num_workers=2, backend=backend,
                        collate_fn=lambda batch: batch, max_concurrency=32)  # fmt: skip
    got = [body for batch in loader for body in batch]
    assert len(got) == OBJECTS
    wrong = [i for i, body in enumerate(got) if body != generated_object(i, SIZE)]
    assert wrong == []
