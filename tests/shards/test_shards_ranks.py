"""``TarShards`` in a job of two real processes (torchrun's environment): each
rank builds the dataset over the same shards and index cache at once, and
``ShardSampler`` and ``distributed=True`` split every epoch between them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from shard_files import make_shards
from test_shards import private_cache  # noqa: F401 (a fixture)

from dataloader_api.shards import TarShards

RANK_PROGRAM = textwrap.dedent("""
    import json, os, sys
    from dataloader_api import DataLoader
    from dataloader_api.shards import ShardSampler, TarShards

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dataset = TarShards(sys.argv[1], decoders={"cls": "int"})
    sampler = ShardSampler(dataset, seed=4, window=2, num_replicas=world, rank=rank)
    loader = DataLoader(dataset, batch_size=3, sampler=sampler, num_workers=2)
    epochs = []
    for epoch in range(2):
        sampler.set_epoch(epoch)
        epochs.append([i for b in loader for i in b["cls"].tolist()])
    spread = DataLoader(dataset, batch_size=3, num_workers=2, distributed=True, seed=4)
    split = [i for b in spread for i in b["cls"].tolist()]
    print(json.dumps({"rank": rank, "epochs": epochs, "split": split}))
""")


def test_two_ranks_take_whole_shards_and_share_one_index_cache(
    tmp_path,
    private_cache,  # noqa: F811
    monkeypatch,
):
    pattern = make_shards(tmp_path, 6, 4)  # shard s holds labels 4s .. 4s+3
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", RANK_PROGRAM, pattern],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "RANK": str(rank), "WORLD_SIZE": "2"},
        )
        for rank in range(2)
    ]
    results = []
    for process in processes:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    for epoch in (0, 1):
        mine, theirs = ({label // 4 for label in r["epochs"][epoch]} for r in results)
        assert mine.isdisjoint(theirs) and len(mine) == len(theirs) == 3  # whole shards
        assert sorted(label for r in results for label in r["epochs"][epoch]) == list(range(24))
    assert results[0]["epochs"][0] != results[0]["epochs"][1]
    assert sorted(label for r in results for label in r["split"]) == list(range(24))
    # Both ranks wrote the index cache at once: every entry is whole and valid.
    assert len(list(private_cache.glob("*.json"))) == 6
    assert not list(private_cache.glob("*.tmp"))
    from dataloader_api.shards import _dataset

    monkeypatch.setattr(_dataset, "scan_shard", lambda shard: pytest.fail(f"scanned {shard}"))
    kept = TarShards(pattern, decoders={"cls": "int"})
    assert [kept[i]["cls"] for i in range(24)] == list(range(24))
