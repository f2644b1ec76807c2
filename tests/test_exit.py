"""Interpreter exit in the middle of an epoch: no hang, no abort, exit code kept."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

PRELUDE = textwrap.dedent("""
    import sys, threading, time
    from dataloader_api import DataLoader

    class Slow:
        def __len__(self): return 10_000
        def __getitem__(self, i):
            time.sleep(0.01)
            return i
""")

SCENARIOS = {
    "live iterator": "it = iter(DataLoader(Slow(), batch_size=4, num_workers=2)); next(it)",
    "persistent loader": (
        "loader = DataLoader(Slow(), batch_size=4, num_workers=2, persistent_workers=True)\n"
        "it = iter(loader); next(it)"
    ),
    "reference cycle": (
        "class Holder: pass\n"
        "h = Holder(); h.self = h\n"
        "h.it = iter(DataLoader(Slow(), batch_size=4, num_workers=2)); next(h.it)\n"
        "del h"
    ),
    "epoch started on a non-main thread": (
        "alive = []\n"
        "def run():\n"
        "    it = iter(DataLoader(Slow(), batch_size=4, num_workers=2)); next(it)\n"
        "    alive.append(it)\n"
        "t = threading.Thread(target=run); t.start(); t.join()"
    ),
    "blocked item": (
        "class Blocked(Slow):\n"
        "    def __getitem__(self, i):\n"
        "        if i == 5: threading.Event().wait()\n"
        "        return i\n"
        "it = iter(DataLoader(Blocked(), batch_size=1, num_workers=2))\n"
        "[next(it) for _ in range(5)]"
    ),
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.parametrize("exit_code", [0, 7])
def test_exit_mid_epoch(scenario, exit_code):
    code = PRELUDE + SCENARIOS[scenario] + f"\nsys.exit({exit_code})\n"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == exit_code, result.stderr
    assert "Traceback" not in result.stderr and "Fatal" not in result.stderr, result.stderr
