"""``dataloader_api.integrations``: what the loader changes in torch, Lightning and
accelerate, listed in one place, each of which can be kept out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dataloader_api import integrations

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "user-guide.md"

CHILD = """
import json, sys
import torch
import dataloader_api
from dataloader_api import DataLoader
from dataloader_api.integrations import installed

def item(i):
    return torch.utils.data.get_worker_info() is not None

class Items:
    def __len__(self): return 2
    def __getitem__(self, i): return item(i)

seen = [bool(b) for b in DataLoader(Items(), batch_size=None, num_workers=1)]
print(json.dumps({"installed": installed(), "seen": seen}))
"""


def test_each_integration_says_what_it_does_and_the_guide_names_it():
    guide = GUIDE.read_text()
    for name, what in integrations.available().items():
        assert what and f"`{name}`" in guide, name
    assert integrations.ENV_VAR in guide


def test_unknown_names_and_late_switches_are_clear_errors(monkeypatch):
    with pytest.raises(ValueError, match=r"disable: 'torch' is not an integration; .*'lightning'"):
        integrations.disable("torch")
    monkeypatch.setenv(integrations.ENV_VAR, "accelerate, nope")
    with pytest.raises(ValueError, match=rf"{integrations.ENV_VAR}: 'nope' is not an integration"):
        integrations.install_present(None)
    monkeypatch.setattr(integrations, "_installed", {"lightning"})
    with pytest.raises(RuntimeError, match="'lightning' is already installed in this process"):
        integrations.disable("lightning")


@pytest.mark.parametrize("off", ["", "torch_worker_info"])
def test_an_integration_turned_off_is_not_installed(off):
    pytest.importorskip("torch")
    env = dict(os.environ, **{integrations.ENV_VAR: off})
    out = subprocess.run(
        [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True
    ).stdout
    result = json.loads(out.strip().splitlines()[-1])
    assert ("torch_worker_info" in result["installed"]) is (not off)
    assert result["seen"] == [not off, not off]  # torch's get_worker_info in our threads
    assert "torch_global_rng" in result["installed"]
