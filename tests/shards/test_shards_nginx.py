"""Tar shards from nginx, a server nobody here wrote (``tests/nginx_sites.py``):
read with nginx's own range replies they equal the local ones, and a shard
replaced there by one of the same length is indexed again or refused, through
nginx's own ETag."""

from __future__ import annotations

import os
import shutil

import pytest
from nginx_sites import nginx_sites
from shard_files import make_shards
from test_shards import BACKENDS, private_cache  # noqa: F401 (a fixture)
from test_shards_cache import _items_carry_their_keys, _keyed_shard

from dataloader_api import DataLoader
from dataloader_api.shards import ShardError, TarShards


@pytest.fixture(scope="module")
def nginx():
    yield from nginx_sites()


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
