"""The index cache of remote shards: no credential ever written to it, and a kept
index used only for the bytes it was made from (the object's ETag or
Last-Modified, with its length)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from test_shards import BACKENDS, make_shards, private_cache  # noqa: F401 (a fixture)

from dataloader_api import DataLoader
from dataloader_api.io import HttpDataset
from dataloader_api.io.loopback import LoopbackServer
from dataloader_api.shards import TarShards

SECRETS = ("s3cr3tPassw0rd", "SIGNATUREs3cr3t", "ACCESSTOKENs3cr3t", "HEADERs3cr3t")


def _cache_bytes(folder: Path) -> list[tuple[str, bytes]]:
    """Every file under ``folder``: its name and its bytes."""
    return [(str(p), p.read_bytes()) for p in folder.rglob("*") if p.is_file()]


def _no_secret_in(folder: Path) -> None:
    userinfo = base64.b64encode(b"alice:" + SECRETS[0].encode())
    files = _cache_bytes(folder)
    assert files, "nothing was cached: the check would be vacuous"
    for name, data in files:
        for secret in (*(s.encode() for s in SECRETS), userinfo, b"alice"):
            assert secret not in data, f"{secret!r} written in {name}"
            assert secret.decode() not in name, f"{secret!r} in the file name {name}"


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_secret_of_a_url_or_header_reaches_the_cache(tmp_path, private_cache, backend):  # noqa: F811
    make_shards(tmp_path, 2, 3)
    data = [(tmp_path / f"train-{s:03d}.tar").read_bytes() for s in range(2)]
    signed = "?X-Amz-Signature={}&access_token={}&X-Amz-Expires=60"
    objects = {}
    for run, (sig, token) in enumerate([(SECRETS[1], SECRETS[2]), ("other1", "other2")]):
        for s in range(2):
            objects[f"/d/train-{s:03d}.tar" + signed.format(sig + str(run), token)] = data[s]
    for s in range(2):
        objects[f"/h/train-{s:03d}.tar"] = data[s]
    with LoopbackServer(objects) as server:
        host = server.url.replace("http://", f"http://alice:{SECRETS[0]}@")
        for run, (sig, token) in enumerate([(SECRETS[1], SECRETS[2]), ("other1", "other2")]):
            urls = [host + f"/d/train-{s:03d}.tar" + signed.format(sig + str(run), token)
                    for s in range(2)]  # fmt: skip
            dataset = TarShards(urls, decoders={"cls": "int"})
            loader = DataLoader(dataset, batch_size=2, num_workers=2, backend=backend)
            assert sorted(x for b in loader for x in b["cls"].tolist()) == list(range(6))
        # presigned URLs of one object share its entry: one per shard, not per signature
        assert len(list(private_cache.glob("*.json"))) == 2
        headers = {"Authorization": f"Bearer {SECRETS[3]}", "X-Token": SECRETS[3]}
        source = HttpDataset([server.url + f"/h/train-{s:03d}.tar" for s in range(2)],
                             headers=headers)  # fmt: skip
        dataset = TarShards(source, decoders={"cls": "int"})
        loader = DataLoader(dataset, batch_size=2, num_workers=2, backend=backend)
        assert sorted(x for b in loader for x in b["cls"].tolist()) == list(range(6))
        assert len(list(private_cache.glob("*.json"))) == 4
    _no_secret_in(private_cache.parent)
