"""Workload 8: what ``import`` costs, ours beside the peers, each in a fresh
interpreter (``python -X importtime``), in turns, run by run.

A figure is the import time of what the statement imports beyond the
interpreter's own start-up: the sum of the cumulative times of the top-level
modules that ``python -X importtime -c pass`` does not import.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys

from measure import Table, timed_row

# label, peer, the statement, the modules it needs (a missing one: no row)
STATEMENTS = [
    ("import dataloader_api", "", "import dataloader_api", ["dataloader_api"]),
    (
        "import dataloader_api, dataloader_rust",
        "",
        "import dataloader_api, dataloader_rust",
        ["dataloader_api", "dataloader_rust"],
    ),
    ("import dataloader_rs", "dataloader-rs", "import dataloader_rs", ["dataloader_rs"]),
    ("import torch.utils.data", "torch", "import torch.utils.data", ["torch"]),
    ("import numpy (the default collate's)", "", "import numpy", ["numpy"]),
]


def _top_level_ms(statement: str) -> dict[str, float]:
    """Cumulative import time (ms) of each top-level module that ``statement`` imports."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", statement],
        capture_output=True,
        text=True,
        check=True,
    )
    times = {}
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = line.split("|")
        if cumulative.strip().isdigit() and not name.startswith("  "):
            times[name.strip()] = int(cumulative) / 1000
    return times


def import_times(runs: int) -> list[Table]:
    start_up = set(_top_level_ms("pass"))
    chosen = [
        (label, peer, statement)
        for label, peer, statement, needs in STATEMENTS
        if all(importlib.util.find_spec(module) for module in needs)
    ]
    times: dict[str, list[float]] = {label: [] for label, _, _ in chosen}
    for round_ in range(runs + 1):  # the first round warms the file cache
        for label, _, statement in chosen:
            modules = _top_level_ms(statement)
            total = sum(ms for name, ms in modules.items() if name not in start_up)
            if round_:
                times[label].append(total)
    rows = [timed_row(label, 0, peer, times[label]) for label, peer, _ in chosen]
    title = "8. Import time: a fresh interpreter, beyond its own start-up"
    return [Table("import_time", "import", "startup", title, "ms", rows)]
