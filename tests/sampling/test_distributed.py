"""Sharding across ranks: torchrun's environment, and a real torch.distributed
(gloo) job of two processes on loopback."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import textwrap

import pytest

from dataloader_api import DataLoader, IterableDataset

HAVE_TORCH = importlib.util.find_spec("torch") is not None

# Each rank prints one JSON line: its map-style batches for epochs 0 and 1
# (set_epoch) and its iterable items.
RANK_PROGRAM = textwrap.dedent("""
    import json, os, sys
    from dataloader_api import DataLoader, IterableDataset, get_worker_info

    class Shards(IterableDataset):
        def __iter__(self):
            info = get_worker_info()
            return iter(range(info.id, 40, info.num_workers))

    # Built before the process group exists: ranks are looked up when an epoch starts.
    loader = DataLoader(list(range(50)), batch_size=4, shuffle=True, seed=3, num_workers=2,
                        distributed=True)
    stream_loader = DataLoader(Shards(), batch_size=3, num_workers=2, distributed=True)
    if os.environ.get("USE_GLOO") == "1":
        import datetime, torch.distributed as dist
        rank, world = int(sys.argv[1]), int(sys.argv[2])
        os.environ.pop("RANK", None); os.environ.pop("WORLD_SIZE", None)
        dist.init_process_group("gloo", init_method=sys.argv[3], rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=60))
    epochs = []
    for epoch in range(2):
        loader.set_epoch(epoch)
        epochs.append([i for batch in loader for i in batch.tolist()])
    stream = [i for b in stream_loader for i in b.tolist()]
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):  # unsharded in a job of 2 ranks: one warning per process
            list(DataLoader(list(range(8)), batch_size=4))
        list(DataLoader(list(range(8)), batch_size=4, distributed=False))  # replicated on purpose
    unsharded_warnings = [str(w.message) for w in caught if "not sharded" in str(w.message)]
    result = {"rank": loader.rank, "world": loader.world_size, "epochs": epochs,
              "stream": stream, "unsharded_warnings": unsharded_warnings}
    if os.environ.get("USE_GLOO") == "1":
        gathered = [None, None]
        dist.all_gather_object(gathered, result)
        result["gathered_ranks"] = sorted(r["rank"] for r in gathered)
        dist.destroy_process_group()
    print(json.dumps(result))
""")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_ranks(world: int, gloo: bool) -> list[dict]:
    init = f"tcp://127.0.0.1:{free_port()}"
    processes = []
    for rank in range(world):
        env = {
            **os.environ,
            "RANK": str(rank),
            "WORLD_SIZE": str(world),
            "USE_GLOO": "1" if gloo else "0",
        }
        processes.append(
            subprocess.Popen(
                [sys.executable, "-c", RANK_PROGRAM, str(rank), str(world), init],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
        )
    results = []
    for process in processes:
        try:
            out, err = process.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            for p in processes:
                p.kill()
            raise
        assert process.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def check_shards(results: list[dict], world: int) -> None:
    assert sorted(r["rank"] for r in results) == list(range(world))
    for epoch in (0, 1):
        seen = [i for r in results for i in r["epochs"][epoch]]
        assert sorted(seen) == list(range(50)), epoch  # every index once (50 splits evenly)
    for r in results:
        assert r["epochs"][0] != r["epochs"][1]  # set_epoch reshuffles
    first = results[0]["epochs"][0]
    assert all(set(first).isdisjoint(r["epochs"][0]) for r in results[1:])
    items = [i for r in results for i in r["stream"]]
    assert sorted(items) == list(range(40))  # iterable: ranks x workers, each item once


def test_ranks_from_torchrun_environment_shard_exactly_once():
    check_shards(run_ranks(2, gloo=False), 2)


@pytest.mark.skipif(not HAVE_TORCH, reason="torch is not installed; `nox -s torch_parity` runs it")
def test_real_torch_distributed_gloo_job():
    results = run_ranks(2, gloo=True)
    check_shards(results, 2)
    assert all(r["gathered_ranks"] == [0, 1] for r in results)
    for r in results:  # once per process, naming both fixes
        [message] = r["unsharded_warnings"]
        assert "torch.distributed has 2 ranks" in message
        assert "distributed=True" in message and "distributed=False" in message


def test_distributed_without_a_job_says_what_it_needs_when_an_epoch_starts(monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    loader = DataLoader(list(range(4)), distributed=True)  # the job may start later
    for start in (iter, len):
        with pytest.raises(RuntimeError, match="RANK and WORLD_SIZE"):
            start(loader)
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert [b.tolist() for b in loader] == [[1], [3]]
    assert (loader.rank, loader.world_size) == (1, 2)


@pytest.mark.parametrize(
    ("rank", "world", "message"),
    [("x", "2", "should be integers"), ("2", "2", r"should be in \[0")],
)
def test_bad_torchrun_environment(monkeypatch, rank, world, message):
    monkeypatch.setenv("RANK", rank)
    monkeypatch.setenv("WORLD_SIZE", world)
    loader = DataLoader(list(range(4)), distributed=True)
    with pytest.raises(ValueError, match=message):
        iter(loader)


def test_distributed_conflicts_are_named(monkeypatch):
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(ValueError, match="mutually exclusive with sampler and batch_sampler"):
        DataLoader(list(range(4)), sampler=[0, 1], distributed=True)
    import random

    with pytest.raises(ValueError, match="pass seed"):
        DataLoader(list(range(4)), generator=random.Random(1), distributed=True)
    with pytest.raises(TypeError, match="set_epoch needs a sampler"):
        DataLoader(list(range(4))).set_epoch(1)


def test_calling_thread_gets_its_ranks_shard(monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")

    class Shards(IterableDataset):
        def __iter__(self):
            from dataloader_api import get_worker_info

            info = get_worker_info()
            assert (info.rank, info.world_size, info.local_id) == (1, 2, 0)
            return iter(range(info.id, 10, info.num_workers))

    assert [int(b) for b in DataLoader(Shards(), batch_size=None, distributed=True)] == [
        1,
        3,
        5,
        7,
        9,
    ]


def test_each_epoch_reshuffles_without_set_epoch_alike_on_every_rank(monkeypatch):
    """A framework may never call set_epoch: each iter() moves to the next epoch's
    shuffle, the same on every rank, so the ranks' shares still partition the data."""
    epochs_by_rank = []
    for rank in range(2):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "2")
        loader = DataLoader(list(range(20)), batch_size=5, shuffle=True, distributed=True)
        epochs_by_rank.append([[i for b in loader for i in b.tolist()] for _ in range(3)])
    for epoch in range(3):
        assert sorted(epochs_by_rank[0][epoch] + epochs_by_rank[1][epoch]) == list(range(20))
    assert epochs_by_rank[0][0] != epochs_by_rank[0][1] != epochs_by_rank[0][2]
    loader.set_epoch(0)  # still sets the next epoch explicitly
    assert [i for b in loader for i in b.tolist()] == epochs_by_rank[1][0]


def test_a_frameworks_sharded_copy_keeps_a_subclasss_own_errors():
    """``_sharded_copy`` (what Lightning and accelerate get): None only for a subclass
    whose ``__init__`` takes other arguments; an error of the subclass itself shows."""

    class Renamed(DataLoader):
        def __init__(self, data, size=2):
            super().__init__(data, batch_size=size)

    assert Renamed(list(range(8)))._sharded_copy() is None

    class Strict(DataLoader):
        def __init__(self, *args, **kwargs):
            if kwargs.get("distributed"):
                raise TypeError("Strict: this loader cannot be sharded")
            super().__init__(*args, **kwargs)

    with pytest.raises(TypeError, match="cannot be sharded"):
        Strict(list(range(8)), batch_size=2)._sharded_copy()
    copy = DataLoader(list(range(8)), batch_size=2)._sharded_copy(seed=3)
    assert (
        copy is not None and copy._options.sampling.distributed and copy._options.sampling.seed == 3
    )
