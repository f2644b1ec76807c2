"""Interpreter exit while workers run torch ops (the reproducer of the abort at
exit): the process keeps its own exit code. Skipped where torch is not
installed (`nox -s torch_parity` installs it); the torch-free reproducer is the
conformance suite's native exit scenarios (conformance/test_exit.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch", reason="torch is not installed; run `nox -s torch_parity`")

import dataloader_api

SCRIPT = textwrap.dedent("""
    import sys, torch
    from dataloader_api import DataLoader

    class TorchOps:
        def __len__(self): return 100_000
        def __getitem__(self, i): return torch.randn(28, 28)

    loader = DataLoader(TorchOps(), batch_size=16, num_workers=2, backend=sys.argv[1],
                        persistent_workers=sys.argv[2] == "persistent")
    if sys.argv[2] == "persistent":
        for batch in loader: break
    else:
        it = iter(loader); next(it)
    sys.exit(3)
""")
RUNS = 10


@pytest.mark.parametrize("how", ["persistent", "iterator still referenced"])
@pytest.mark.parametrize("backend", ["threads", "rust", "cffi"])
def test_exit_with_torch_ops_in_flight_keeps_the_exit_code(backend, how):
    if backend not in dataloader_api.backends():
        pytest.skip(f"backend {backend!r} is not installed here")
    codes = [
        subprocess.run(
            [sys.executable, "-c", SCRIPT, backend, how], capture_output=True, timeout=120
        ).returncode
        for _ in range(RUNS)
    ]
    assert codes == [3] * RUNS, f"exit codes of {RUNS} runs: {codes} (-6: aborted)"
