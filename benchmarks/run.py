"""Side-by-side loader benchmarks: every installed backend of ours, torch's
DataLoader and dataloader-rs where they are importable, in one run on one machine.

    python benchmarks/run.py [--runs N] [--quick] [--backends a,b] [--only 1,3]

Every loader of a table is warmed up once, then the loaders take turns, run
by run, in a fixed order; a figure is the median of --runs with min and max,
and a ratio is the median of the run-by-run ratios. Nothing here asserts
anything about speed.

This file is the command line; workloads.py says what is measured, peers.py
how each loader is driven, measure.py how a figure is taken and render.py how
a table is shown (benchmarks/README.md has the map).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import sys
import sysconfig

import peers
import render
from measure import cpu_model
from workloads import WORKLOADS, Settings

import dataloader_api


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed epochs per figure (default 5)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes: proves the runner works")
    parser.add_argument(
        "--backends",
        default=None,
        help="comma-separated backends (default: every installed one, in preference order)",
    )
    parser.add_argument(
        "--only",
        default=",".join(str(n) for n in range(1, 16)),
        help="workloads to run (default all)",
    )
    parser.add_argument("--json", default=None, help="also write the results to this file")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    names = args.backends.split(",") if args.backends else dataloader_api.backends()
    for name in names:
        dataloader_api.resolve_backend(name)  # a clear error for a name that is not installed
    settings = Settings(names, 1 if args.quick else args.runs, args.quick)
    only = set(args.only.split(","))

    build = "t" if sysconfig.get_config_var("Py_GIL_DISABLED") else ""
    machine = f"{os.cpu_count()} cores, {cpu_model()}, CPython {platform.python_version()}{build}"
    print(
        f"machine: {machine}; ours: {', '.join(names)}; "
        f"peers: {', '.join(peers.versions()) or 'none'}"
    )
    tables: list[dict[str, object]] = []
    lines: list[str] = []
    ran: list[dict[str, object]] = []
    for workload in WORKLOADS:
        if workload.number not in only:
            continue
        new = [(table, render.lines(table)) for table in workload.run(settings)]
        shown = [line for _, table_lines in new for line in table_lines]
        print("\n".join(shown))  # as each workload ends: a long run shows progress
        lines += shown
        tables += [{**dataclasses.asdict(t), "markdown": t_lines} for t, t_lines in new]
        ran.append({"number": workload.number, "id": workload.id, "tables": [t.id for t, _ in new]})
    if args.json:
        record = {
            "interpreter": f"{platform.python_version()}{build}",
            "machine": machine,
            # the code measured: the report names it, and the docs say when it is old
            "commit": source_commit(),
            "peers": peers.versions(),
            # every workload that ran, with its tables' ids (none: nothing to measure here)
            "workloads": ran,
            "tables": tables,
            "markdown": lines,
            "missing": peers.missing(),
        }
        with open(args.json, "w") as out:
            json.dump(record, out, indent=1)
    for name in peers.missing():
        print(f"\n{name} is not installed here: its rows are missing.")


def source_commit() -> str | None:
    """The checkout's commit, with ``+changes`` when tracked files differ from it
    (None outside a git checkout)."""
    import subprocess

    here = os.path.dirname(os.path.abspath(__file__))

    def git(*words: str) -> str:
        done = subprocess.run(["git", *words], cwd=here, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "HEAD")
    if not commit:
        return None
    return commit + ("+changes" if git("status", "--porcelain", "--untracked-files=no") else "")


if __name__ == "__main__":
    main()
