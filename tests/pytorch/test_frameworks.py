"""Lightning DDP and accelerate shard our DataLoader as they shard torch's, with
the items still loaded on our worker threads: real 2-process CPU runs (gloo on
loopback) of the scripts in tests/pytorch/frameworks/. The torch nox session installs both."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent / "frameworks"
ITEMS = 64


def need(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed; `nox -s torch_parity` installs it")


def run_job(command: list[str], out: Path) -> list[dict]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        command, cwd=out, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "not sharded" not in done.stderr  # the framework sharded: no warning
    return [json.loads((out / f"rank{rank}.json").read_text()) for rank in range(2)]


def check_each_rank_gets_its_share(reports: list[dict]) -> None:
    assert [r["rank"] for r in reports] == [0, 1]
    assert all(r["world"] == 2 for r in reports)
    for epoch in ("0", "1"):
        shares = [r["seen"][epoch] for r in reports]
        assert [len(s) for s in shares] == [ITEMS // 2] * 2, epoch
        assert sorted(shares[0] + shares[1]) == list(range(ITEMS)), epoch
    for r in reports:
        assert r["seen"]["0"] != r["seen"]["1"]  # reshuffled for the second epoch
        assert r["loaded_on"] == ["worker-thread"]  # our threads, not a rebuilt torch loader
        assert r["loader_types"] == ["dataloader_api._loader.DataLoader"]


def test_lightning_ddp_shards_our_loader(tmp_path):
    need("lightning")
    script = HERE / "lightning_ddp.py"
    check_each_rank_gets_its_share(run_job([sys.executable, str(script), str(tmp_path)], tmp_path))


def test_accelerate_prepare_shards_our_loader(tmp_path):
    need("accelerate")
    command = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--multi_gpu",  # torchrun's launcher; on a machine without GPUs it runs gloo on CPU
        "--num_processes",
        "2",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        str(HERE / "accelerate_job.py"),
        str(tmp_path),
    ]
    check_each_rank_gets_its_share(run_job(command, tmp_path))
