"""Tables as the console (and the JSON's "markdown") shows them: Markdown, one
layout per table kind. It computes nothing but the ratios it prints; it imports
only measure (for Table and the run-by-run ratio).
"""

from __future__ import annotations

import statistics
from typing import Any

from measure import Table, run_ratio

RATES_HEADER = (
    "| loader | median {unit} | min | max | vs {reference} | vs torch | vs dataloader-rs |"
)
RATES_RULE = "|---|---:|---:|---:|---:|---:|---:|"


# Under each table with ratios: how they are taken, and why one may look off.
RATIO_NOTE = (
    "Ratios are the median of run-by-run ratios (run i of one loader against run i "
    "of the other, taken in turn), which cancels the machine's drift; where the ratio "
    "of the two medians differs by more than 5 %, it follows in parentheses."
)


def ratio(rates: list[float], against: list[float] | None) -> str:
    """The run-by-run ratio, and the ratio of the medians too where they disagree."""
    if not against:
        return ""
    by_run = run_ratio(rates, against)
    of_medians = statistics.median(rates) / statistics.median(against)
    if abs(of_medians / by_run - 1) > 0.05:
        return f"{by_run:.2f}x ({of_medians:.2f}x)"
    return f"{by_run:.2f}x"


def lines(table: Table) -> list[str]:
    """The table's Markdown lines, its title first (as "\\n### title\\n")."""
    layout = {
        "rates": _rates,
        "startup": _startup,
        "memory": _memory,
        "attach": _attach,
        "scaling": _scaling,
        "instructions": _instructions,
        "load": _load,
    }
    note = [] if table.kind in ("memory", "scaling", "instructions") else ["", RATIO_NOTE]
    return [f"\n### {table.title}\n", *layout[table.kind](table), *note]


def _figures(runs: list[float]) -> str:
    return f"{statistics.median(runs):,.0f} | {min(runs):,.0f} | {max(runs):,.0f}"


def _same_workers(table: Table, peer: str, row: dict[str, Any]) -> list[float] | None:
    """The runs of ``peer``'s row at ``row``'s worker count, if the table has one."""
    return next(
        (r["runs"] for r in table.rows if r["peer"] == peer and r["workers"] == row["workers"]),
        None,
    )


def _rates(table: Table) -> list[str]:
    """Items/s; each row against the reference and against torch and dataloader-rs at
    the same worker count."""
    reference = table.reference
    out = [
        RATES_HEADER.format(unit=table.unit, reference=reference["label"] if reference else "—"),
        RATES_RULE,
    ]
    ref_runs = reference["runs"] if reference else None
    if reference and reference["external"]:
        out.append(f"| {reference['label']} | {_figures(ref_runs)} | 1.00x | | |")
    for row in table.rows:
        mine = row["runs"]
        vs_torch = ratio(mine, _same_workers(table, "torch", row)) if row["peer"] != "torch" else ""
        vs_rs = (
            ratio(mine, _same_workers(table, "dataloader-rs", row))
            if row["peer"] != "dataloader-rs"
            else ""
        )
        vs_ref = ratio(mine, ref_runs) if ref_runs else ""
        out.append(f"| {row['label']} | {_figures(mine)} | {vs_ref} | {vs_torch} | {vs_rs} |")
    return out


def _load(table: Table) -> list[str]:
    """Workload 13: each backend's rate quiet and beside the CPU load, in pairs of rows."""
    out = [
        f"| backend | quiet, median {table.unit} | loaded, median {table.unit} | loaded ÷ quiet |",
        "|---|---:|---:|---:|",
    ]
    for quiet, loaded in zip(table.rows[::2], table.rows[1::2], strict=True):
        name = quiet["label"].split(",")[0]
        out.append(
            f"| {name} | {quiet['median']:,.0f} | {loaded['median']:,.0f} "
            f"| {ratio(loaded['runs'], quiet['runs'])} |"
        )
    return out


def _startup(table: Table) -> list[str]:
    """Milliseconds; ratios are peer time / our time, so above 1 means ours is faster."""
    out = [
        "| loader | median ms | min | max | torch ÷ this | dataloader-rs ÷ this |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in table.rows:
        mine = row["runs"]
        cells = []
        for other in ("torch", "dataloader-rs"):
            theirs = next((r["runs"] for r in table.rows if r["peer"] == other), None)
            cells.append("" if theirs is None or row["peer"] == other else ratio(theirs, mine))
        out.append(
            f"| {row['label']} | {statistics.median(mine):.3f} | {min(mine):.3f} | "
            f"{max(mine):.3f} | {cells[0]} | {cells[1]} |"
        )
    return out


def _memory(table: Table) -> list[str]:
    out = [
        "| loader | PSS before, MiB | after an epoch | added by the loader |",
        "|---|---:|---:|---:|",
    ]
    for row in table.rows:
        out.append(
            f"| {row['label']} | {row['before']:,.0f} | {row['after']:,.0f} | "
            f"{row['added']:+,.0f} |"
        )
    return out


def _attach(table: Table) -> list[str]:
    """Pairs of rows, attach once then per task, each against the once row, then what
    per-task attach costs per batch."""
    out = [RATES_HEADER.format(unit=table.unit, reference="—"), RATES_RULE]
    costs = table.derived["per_task_attach_us_per_batch"]
    for once, per_task in zip(table.rows[::2], table.rows[1::2], strict=True):
        for row in (once, per_task):
            vs_once = ratio(row["runs"], once["runs"])
            out.append(f"| {row['label']} | {_figures(row['runs'])} | {vs_once} | | |")
        name = once["backend"]
        out.append(
            f"| {name}: per-task attach costs {costs[name]:.1f} µs more per batch | | | | | | |"
        )
    return out


def _scaling(table: Table) -> list[str]:
    """One row per size, batch and worker count: medians, with min and max."""
    out = [
        "| items | shuffle | batch | workers | first batch, ms (min-max) "
        "| per later batch, µs (min-max) | MiB added |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for row in table.rows:
        first, per_batch = row["first_ms"], row["per_batch_us"]
        out.append(
            f"| {row['items']:,} | {row['shuffle']} | {row['batch']} | {row['workers']} "
            f"| {statistics.median(first):.2f} ({min(first):.2f}-{max(first):.2f}) "
            f"| {statistics.median(per_batch):.1f} ({min(per_batch):.1f}-{max(per_batch):.1f}) "
            f"| {row['added_mib']:+.0f} |"
        )
    return out


def _instructions(table: Table) -> list[str]:
    """Instructions per batch and per item; against dataloader-rs at the same workers."""
    out = [
        "| loader | instructions per batch | per item | dataloader-rs ÷ this |",
        "|---|---:|---:|---:|",
    ]
    for row in table.rows:
        theirs = next(
            (
                r["per_batch"]
                for r in table.rows
                if r["peer"] == "dataloader-rs" and r["workers"] == row["workers"]
            ),
            None,
        )
        versus = "" if theirs is None or row["peer"] else f"{theirs / row['per_batch']:.2f}x"
        out.append(
            f"| {row['label']} | {row['per_batch']:,.0f} | {row['per_batch'] / 32:,.0f} "
            f"| {versus} |"
        )
    return out
