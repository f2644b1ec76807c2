"""Shards read whole and kept in memory: local shards read once per epoch with
``local_reads="shard"``, the bounds in shards and in bytes, and what the
dataset says it holds."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from shard_files import make_shards
from test_shards import BACKENDS, private_cache  # noqa: F401 (a fixture)

from dataloader_api import DataLoader
from dataloader_api.io.loopback import LoopbackServer
from dataloader_api.shards import ShardError, ShardSampler, TarShards

OPENED: list[str] = []


def _audit(event: str, arguments: tuple) -> None:
    if event == "open" and isinstance(arguments[0], str) and arguments[0].endswith(".tar"):
        OPENED.append(arguments[0])


sys.addaudithook(_audit)  # cannot be removed: harmless, it only records .tar opens


def eventually(condition, seconds: float = 30.0) -> bool:
    """A buffer still being filled lives until its read ends: wait for that, not a time."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def opened_during(run) -> dict[str, int]:
    OPENED.clear()
    run()
    counts: dict[str, int] = {}
    for path in OPENED:
        counts[os.path.basename(path)] = counts.get(os.path.basename(path), 0) + 1
    return counts


@pytest.mark.parametrize("backend", BACKENDS)
def test_local_shards_read_whole_are_opened_once_per_epoch(tmp_path, backend):
    pattern = make_shards(tmp_path, 6, 5)
    by_sample = TarShards(pattern, decoders={"cls": "int"})
    dataset = TarShards(pattern, decoders={"cls": "int"}, local_reads="shard")
    assert [dataset[i] for i in range(30)] == [by_sample[i] for i in range(30)]
    sampler = ShardSampler(dataset, seed=2, window=2)
    loader = DataLoader(dataset, batch_size=4, sampler=sampler, num_workers=2, backend=backend)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        dataset._streams._kept.clear()  # nothing left from before: every shard is read
        labels: list[int] = []

        def epoch(into: list[int] = labels) -> None:
            into.extend(k for b in loader for k in b["cls"].tolist())

        opened = opened_during(epoch)
        assert sorted(labels) == list(range(30))
        assert opened == {f"train-{s:03d}.tar": 1 for s in range(6)}
    # one pread per sample without it
    assert opened_during(lambda: [by_sample[i] for i in range(30)]) == {
        f"train-{s:03d}.tar": 5 for s in range(6)
    }


def test_a_local_shard_changed_or_gone_after_indexing_is_named(tmp_path):
    pattern = make_shards(tmp_path, 2, 3)
    dataset = TarShards(pattern, local_reads="shard", index_cache=False)
    with open(tmp_path / "train-000.tar", "ab") as file:
        file.write(b"\0" * 512)
    with pytest.raises(ShardError, match="changed since it was indexed") as caught:
        dataset[0]
    assert caught.value.shard == str(tmp_path / "train-000.tar")
    os.unlink(tmp_path / "train-001.tar")
    with pytest.raises(FileNotFoundError, match="tar shard not found") as gone:
        dataset[3]
    assert gone.value.filename == str(tmp_path / "train-001.tar")


def test_the_bound_in_bytes_is_kept(tmp_path):
    pattern = make_shards(tmp_path, 6, 20)
    size = (tmp_path / "train-000.tar").stat().st_size
    dataset = TarShards(pattern, local_reads="shard", max_bytes_in_memory=int(2.5 * size))
    assert dataset.shards_in_memory == 2
    for i in range(len(dataset)):
        dataset[i]
        kept = dataset._streams.kept()
        assert len(kept) <= 2
        assert sum(dataset._indexes[s].size for s in kept) <= 2.5 * size
    assert eventually(lambda: dataset.memory()[0] <= 2 * size)
    # kept, and at most one pushed out but still read
    assert size <= dataset.memory()[1] <= 3 * size
    with pytest.warns(RuntimeWarning, match="keeps 2 in memory"):
        ShardSampler(dataset, window=2)


def test_a_shard_larger_than_the_bound_is_still_read_alone(tmp_path):
    pattern = make_shards(tmp_path, 3, 4)
    dataset = TarShards(pattern, local_reads="shard", max_bytes_in_memory=100)
    assert dataset.shards_in_memory == 1
    assert [dataset[i]["__key__"] for i in (0, 5, 11)] == ["s/00000", "s/00005", "s/00011"]
    assert dataset._streams.kept() == [2]


def test_remote_shards_keep_the_bound_in_bytes(tmp_path):
    make_shards(tmp_path, 4, 10)
    objects = {f"/d/{p.name}": p.read_bytes() for p in sorted(Path(tmp_path).glob("*.tar"))}
    size = len(objects["/d/train-000.tar"])
    with LoopbackServer(objects) as server:
        dataset = TarShards(server.url + "/d/train-{000..003}.tar", index_cache=False,
                            max_bytes_in_memory=size)  # fmt: skip
        assert dataset._streams.kept() == [3]  # indexing read them all: one is kept
        assert [dataset[i]["__key__"] for i in (0, 15, 39)] == ["s/00000", "s/00015", "s/00039"]
        assert dataset._streams.kept() == [3]
        assert eventually(lambda: dataset.memory()[0] == size)


def test_samples_read_one_by_one_hold_no_memory(tmp_path):
    dataset = TarShards(make_shards(tmp_path, 2, 2))
    assert (dataset.shards_in_memory, dataset.memory()) == (None, (0, 0))


@pytest.mark.parametrize(
    ("arguments", "error", "match"),
    [
        ({"max_bytes_in_memory": 0}, ValueError,
         "max_bytes_in_memory should be a positive int or None, but got max_bytes_in_memory=0"),
        ({"max_bytes_in_memory": "1G"}, TypeError, "max_bytes_in_memory=.1G."),
        ({"local_reads": "whole"}, ValueError, "local_reads=.whole."),
    ],
)  # fmt: skip
def test_bad_memory_arguments_are_named(tmp_path, arguments, error, match):
    with pytest.raises(error, match=match):
        TarShards(make_shards(tmp_path, 1, 1), **arguments)


def test_sample_reads_are_refused_for_remote_shards(tmp_path):
    make_shards(tmp_path, 1, 2)
    objects = {"/d/a.tar": (tmp_path / "train-000.tar").read_bytes()}
    with (
        LoopbackServer(objects) as server,
        pytest.raises(ValueError, match='local_reads="sample" is for local shards'),
    ):
        TarShards(server.url + "/d/a.tar", local_reads="sample", index_cache=False)
