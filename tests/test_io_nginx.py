"""Reads from nginx, a server nobody here wrote (Debian's nginx 1.22 and its echo
module, provisioned by scripts/provision-nginx.sh; benchmarks/nginx_server.py
writes its configuration): every byte exact on every backend from a keep-alive
site, a site closing every connection and one with a latency tail; tar shards
read with nginx's own range replies equal the local ones; a shard replaced on
nginx by one of the same length is an error, through nginx's own ETag."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

import pytest
from test_shards import BACKENDS, make_shards, private_cache  # noqa: F401 (a fixture)
from test_shards_cache import _items_carry_their_keys, _keyed_shard

from dataloader_api import DataLoader
from dataloader_api.io import HttpDataset
from dataloader_api.io.loopback import generated_object
from dataloader_api.shards import ShardError, TarShards

SERVER = Path(__file__).resolve().parents[1] / "benchmarks" / "nginx_server.py"
SIZE = 20_000
OBJECTS = 200


def _nginx_module():
    spec = importlib.util.spec_from_file_location("nginx_server", SERVER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def nginx():
    if shutil.which("apt-get") is None:
        pytest.skip("nginx comes from Debian's packages (apt-get download): not a Debian machine")
    server_module = _nginx_module()
    sites = {
        "keep-alive": server_module.Site(latency=0.002),
        "closing": server_module.Site(latency=0.002, keepalive=False),
        "tail": server_module.Site(latency=0.002, tail=0.3),
    }
    server = server_module.Nginx(OBJECTS, SIZE, sites)
    try:
        yield server
    finally:
        server.stop()


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


@pytest.mark.parametrize("backend", BACKENDS)
def test_tar_shards_from_nginx_equal_the_local_ones(nginx, tmp_path, backend):
    make_shards(tmp_path, 3, 7)
    for shard in tmp_path.glob("train-*.tar"):
        shutil.copy(shard, nginx.static / shard.name)
    local = TarShards(str(tmp_path / "train-{000..002}.tar"), decoders={"cls": "int"})
    remote = TarShards(f"{nginx.urls['keep-alive']}/static/train-{{000..002}}.tar",
                       decoders={"cls": "int"}, index_cache=False)  # fmt: skip

    def samples(dataset: TarShards) -> list[dict]:
        loader = DataLoader(dataset, batch_size=4, num_workers=2, backend=backend,
                            collate_fn=lambda batch: batch)  # fmt: skip
        # every field but where the shard came from
        return [{k: v for k, v in s.items() if k != "__url__"} for b in loader for s in b]

    assert len(remote) == len(local) == 21
    assert samples(remote) == samples(local)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_shard_replaced_on_nginx_is_read_again_or_refused(
    nginx,
    tmp_path,
    private_cache,  # noqa: F811
    backend,
):
    """nginx's ETag is the file's mtime in seconds and its length: a replacement of
    the same length with another mtime is another ETag, for a new dataset (indexed
    again, never the kept index) and for one made before (an error)."""
    name = f"replaced-{backend}.tar"
    before = _keyed_shard(tmp_path / "a.tar", range(0, 4))
    after = _keyed_shard(tmp_path / "b.tar", range(10, 14))
    served = nginx.static / name
    served.write_bytes(before)
    os.utime(served, (1_700_000_000, 1_700_000_000))
    url = f"{nginx.urls['keep-alive']}/static/{name}"
    first = TarShards(url, decoders={"txt": "text"})
    assert _items_carry_their_keys(first, backend) == [f"k{k:05d}" for k in range(4)]
    used_before = TarShards(url, decoders={"txt": "text"}, max_shards_in_memory=1)
    served.write_bytes(after)  # same length, other samples, another mtime
    os.utime(served, (1_700_000_100, 1_700_000_100))
    again = TarShards(url, decoders={"txt": "text"})
    assert _items_carry_their_keys(again, backend) == [f"k{k:05d}" for k in range(10, 14)]
    loader = DataLoader(used_before, batch_size=2, backend=backend, collate_fn=lambda b: b)
    with pytest.raises(ShardError, match=r"replaced since it was indexed"):
        list(loader)
