"""How a figure is taken: epochs timed in turns after a warm-up, medians with min
and max, run-by-run ratios, start-up times, PSS; and the tables they fill, as data.

Standard library only: nothing here knows a loader or a workload.
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Entry:
    """One loader in one table; ``peer`` is "" (ours), "torch", "dataloader-rs",
    "spdl" or "grain"."""

    label: str
    epoch: Callable[[], int]
    workers: int
    peer: str = ""


@dataclass
class Table:
    """One table of a run, as recorded in the JSON and rendered by render.py.

    ``id`` names the table and ``workload`` its workload; both are stable, so
    report.py selects by them and not by titles, which say more as they change.
    ``kind`` says how render.py lays it out: "rates" (items/s, higher is better),
    "startup" (ms, lower is better), "memory" (MiB, one reading per loader) or
    "attach" (items/s, pairs of one backend's attach modes) or "load" (items/s, pairs
    of one backend's rates quiet and beside a CPU load).
    """

    id: str
    workload: str
    kind: str
    title: str
    unit: str
    rows: list[dict[str, Any]]
    #: a figure every row is compared with: an ideal or a bare loop (``external``,
    #: shown as a row of its own) or one of the table's rows
    reference: dict[str, Any] | None = None
    #: figures derived from the rows, by name (workload 7: µs per batch)
    derived: dict[str, Any] = field(default_factory=dict)


def count(loader: Any) -> Callable[[], int]:
    """An epoch over ``loader`` that returns how many items it yielded."""

    def epoch() -> int:
        total = 0
        for batch in loader:
            total += len(batch)
        return total

    return epoch


def count_pairs(loader: Any) -> Callable[[], int]:
    """An epoch over a loader of (images, labels) batches: the labels it yielded."""

    def epoch() -> int:
        return sum(len(labels) for _, labels in loader)

    return epoch


def measure(entries: list[Entry], runs: int) -> dict[str, list[float]]:
    """Items per second of each entry, ``runs`` epochs each, interleaved after a warm-up."""
    for entry in entries:
        entry.epoch()
    rates: dict[str, list[float]] = {entry.label: [] for entry in entries}
    for _ in range(runs):
        for entry in entries:
            start = time.perf_counter()
            items = entry.epoch()
            rates[entry.label].append(items / (time.perf_counter() - start))
    return rates


def startup_times(
    makers: list[tuple[str, str, Callable[[], Any]]], runs: int, items: int | None
) -> dict[str, list[float]]:
    """Milliseconds from a new loader to its first batch (``items=None``) or to the end
    of its epoch, ``runs`` times per (label, peer, make), after a warm-up round. The
    epoch then runs to its end untimed, as a training loop's would, so that the
    next new loader finds what a finished epoch leaves (ours: its idle threads).

    Torch's rounds run after everyone else's: each of its loaders forks, and after a
    fork the parent's next writes fault on copy-on-write pages, which slowed whichever
    loader ran next (ours from 0.38 to 0.84 ms here, dataloader-rs from 0.10 to 0.18)."""
    times: dict[str, list[float]] = {label: [] for label, _, _ in makers}
    forking = [m for m in makers if m[1] == "torch"]
    for group in ([m for m in makers if m[1] != "torch"], forking):
        for round_ in range(runs + 1):
            for label, _, make in group:
                start = time.perf_counter()
                loader = make()
                iterator = iter(loader)
                if items is None:
                    next(iterator)
                else:
                    for _ in iterator:
                        pass
                elapsed = time.perf_counter() - start
                for _ in iterator:  # the rest of the epoch, untimed
                    pass
                del iterator, loader
                if round_:  # the first round is the warm-up
                    times[label].append(elapsed * 1e3)
    return times


def timed_row(label: str, workers: int, peer: str, runs: list[float]) -> dict[str, Any]:
    """A row of a rates or start-up table: every run, and their median, min and max."""
    return {
        "label": label,
        "workers": workers,
        "peer": peer,
        "median": statistics.median(runs),
        "min": min(runs),
        "max": max(runs),
        "runs": runs,
    }


def rates_table(
    id: str,
    workload: str,
    title: str,
    entries: list[Entry | None],
    runs: int,
    reference: tuple[str, list[float]] | None = None,
) -> Table:
    """Items/s of the entries that exist (a missing peer is None), taken in turns.
    ``reference`` is (label, runs): a figure every row is compared with, or, with no
    runs, the label of one of the table's own rows."""
    present = [e for e in entries if e is not None]
    rates = measure(present, runs)
    rows = [timed_row(e.label, e.workers, e.peer, rates[e.label]) for e in present]
    ref = None
    if reference:
        label, values = reference
        external = bool(values) and not any(e.label == label for e in present)
        values = values or rates.get(label, [])
        if label and values:
            ref = {
                "label": label,
                "median": statistics.median(values),
                "runs": values,
                "external": external,
            }
    return Table(id, workload, "rates", title, "items/s", rows, ref)


def run_ratio(rates: list[float], against: list[float]) -> float:
    """The median of the run-by-run ratios: runs taken in turns share the machine's
    mood, so each pair is compared, not the two medians."""
    return statistics.median(a / b for a, b in zip(rates, against, strict=True))


def pss_kib(pid: int) -> int:
    """Proportional set size: shared pages split between the processes sharing them."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_pss_mib() -> float:
    """PSS of this process and its children (torch's worker processes)."""
    me = os.getpid()
    pids = [me]
    try:
        with open(f"/proc/{me}/task/{me}/children") as children:
            pids += [int(p) for p in children.read().split()]
    except OSError:
        pass
    return sum(pss_kib(p) for p in pids) / 1024


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
