"""docs/benchmarks.md and its plots from the JSON files of `benchmarks/run.py --json`.

    python benchmarks/report.py benchmarks/results/*.json [--out docs/benchmarks.md]

`nox -s bench` runs the benchmark on every interpreter, then this. Tables are
found by the stable ids run.py records with each (workloads.py names them), not
by their titles.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).parents[1]
OUT = ROOT / "docs" / "benchmarks.md"


def loader_colours(names: set[str]) -> dict[str, str]:
    """A fixed colour per loader name, the same in every panel and plot."""
    palette = [f"C{i}" for i in range(10)]
    return {name: palette[i % len(palette)] for i, name in enumerate(sorted(names))}


def speedup_plot(results: list[dict], path: Path) -> bool:
    """Workload 4: items/s against workers, one line per loader, one panel per build."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = []
    for result in results:
        table = _table(result, "cpu_bound")
        if table is not None:
            panels.append((result["interpreter"], table))
    if not panels:
        return False

    def loader(row: dict) -> str:
        if row["workers"] == 0:
            return "calling thread"
        return re.sub(r", \d+ (workers|threads)$", "", row["label"])

    # One colour per loader in every panel.
    colours = loader_colours({loader(row) for _, table in panels for row in table["rows"]})
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4), squeeze=False)
    for axis, (interpreter, table) in zip(axes[0], panels, strict=True):
        lines: dict[str, list[tuple[int, float]]] = {}
        for row in table["rows"]:
            lines.setdefault(loader(row), []).append((row["workers"], row["median"]))
        for name, points in sorted(lines.items()):
            points.sort()
            axis.plot(
                [p[0] for p in points],
                [p[1] for p in points],
                marker="o",
                label=name,
                color=colours[name],
            )
        axis.set_xticks(sorted({row["workers"] for row in table["rows"]}))
        axis.set_title(f"CPython {interpreter}: ~1 ms of pure Python per item")
        axis.set_xlabel("workers")
        axis.set_ylabel("items/s")
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def throughput_plot(results: list[dict], path: Path) -> bool:
    """Workloads 1 and 3 at 2 workers: items/s per loader, one panel per table."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    candidates = [r for r in results if any(t["workload"] == "numpy" for t in r["tables"])]
    if not candidates:
        return False

    def peers_run(result: dict) -> int:
        return len({row.get("peer") for t in result["tables"] for row in t["rows"]} - {"", None})

    # The interpreter where the most peers ran (dataloader-rs has no 3.11 wheel).
    chosen = max(candidates, key=peers_run)
    tables = [t for t in chosen["tables"] if t["workload"] in ("overhead", "numpy")]

    def loader(row: dict) -> str:
        return str(row["label"]).replace(", 2 workers", "").replace(", 2 threads", "")

    bars = [[r for r in t["rows"] if r["workers"] == 2] for t in tables]
    colours = loader_colours({loader(r) for rows in bars for r in rows})
    fig, axes = plt.subplots(1, len(tables), figsize=(5 * len(tables), 4), squeeze=False)
    for axis, table, rows in zip(axes[0], tables, bars, strict=True):
        axis.barh(
            [loader(r) for r in rows],
            [r["median"] for r in rows],
            color=[colours[loader(r)] for r in rows],
        )
        title = table["title"].split(":")[0].split(", default collate")[0] + ", 2 workers"
        axis.set_title(textwrap.fill(title, 40), fontsize=9)
        axis.set_xlabel("items/s (median)")
        axis.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x / 1e3:,.0f}k"))
        axis.invert_yaxis()
    fig.suptitle(f"CPython {chosen['interpreter']}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def _table(result: dict, id: str) -> dict | None:
    """The table of this id (see workloads.py), if the run measured it."""
    return next((t for t in result["tables"] if t["id"] == id), None)


def _ours_best(table: dict, workers: int | None = None) -> dict | None:
    """Our fastest row (the lowest for a table in ms) at ``workers``, if given."""
    rows = [
        r for r in table["rows"] if not r["peer"] and (workers is None or r["workers"] == workers)
    ]
    if not rows:
        return None
    pick = min if table["unit"] == "ms" else max
    return pick(rows, key=lambda r: r["median"])


def _peer(table: dict, peer: str, workers: int) -> dict | None:
    return next((r for r in table["rows"] if r["peer"] == peer and r["workers"] == workers), None)


def _ratio(mine: dict, theirs: dict) -> float:
    """Median of the run-by-run ratios, as in the tables; results written before
    run.py recorded each run give the ratio of the medians."""
    if "runs" in mine and "runs" in theirs:
        return statistics.median(a / b for a, b in zip(mine["runs"], theirs["runs"], strict=True))
    return mine["median"] / theirs["median"]


def _labelled(table: dict | None, prefix: str, within: str = "") -> dict | None:
    """The row whose label starts with ``prefix`` and holds ``within``."""
    rows = table["rows"] if table else []
    return next((r for r in rows if r["label"].startswith(prefix) and within in r["label"]), None)


def _io_targets(result: dict, versus: Callable[..., None]) -> None:
    """Issue 46's: native reads against curl on each nginx site (10g), and the
    small-backlog server read no slower than a user's 8 urllib threads (10f)."""
    nginx = _table(result, "http_nginx")
    for site, goal in (("keep-alive", 1.0), ("closing", 1.0), ("keep-alive, 1.6 % 1 s tail", 0.9)):
        name = f"nginx {site}: "
        versus(f"10g. {name}native ÷ curl", _labelled(nginx, name, "native reads"),
               _labelled(nginx, name, "curl"), goal)  # fmt: skip
    backlog = _table(result, "http_servers_f")
    versus("10f. small backlog ÷ 8 urllib threads", _labelled(backlog, "native reads"),
           _labelled(backlog, "urllib, 8 threads"), 1.0)  # fmt: skip


def targets(result: dict) -> list[str]:
    """The targets of the Rust backend's issue, met or missed on this run (medians)."""
    lines = []

    def verdict(name: str, reached: float | None, goal: float, text: str, low: bool = False):
        if reached is None:
            lines.append(f"| {name} | not measured in this run | {text} | |")
            return
        met = reached <= goal if low else reached >= goal
        shown = f"{reached:.3f} ms" if low else f"{reached:.2f}x"
        gap = f" ({reached / goal:.1f}x the goal)" if low else f" (by {1 - reached / goal:.0%})"
        lines.append(f"| {name} | {shown} | {text} | {'met' if met else '**missed**' + gap} |")

    def versus(name: str, mine: dict | None, against: dict | None, goal: float) -> None:
        """A ratio target: ``mine`` (our row, named in the line) over ``against``."""
        label = f"{name.split(' ÷ ')[0]} ({mine['label'] if mine else 'ours'})"
        verdict(
            f"{label} ÷ {name.split(' ÷ ')[1]}",
            _ratio(mine, against) if mine and against else None,
            goal,
            f"≥ {goal}x",
        )

    overhead = _table(result, "overhead")
    if overhead:
        mine = next((r for r in overhead["rows"] if r["workers"] == 0 and not r["peer"]), None)
        bare = overhead.get("reference")
        verdict(
            "1. calling thread ÷ bare loop",
            _ratio(mine, bare) if mine and bare else None,
            0.9,
            "≥ 0.9x",
        )
        rs = _peer(overhead, "dataloader-rs", 2)
        versus("1. 2 workers ÷ dataloader-rs", _ours_best(overhead, 2), rs, 1.5)
    io = _table(result, "io_8_workers")
    if io:
        versus("2. 2 ms I/O, 8 workers ÷ ideal", _ours_best(io), io.get("reference"), 0.97)
    numpy = _table(result, "numpy_float32")
    if numpy:
        rs = _peer(numpy, "dataloader-rs", 2)
        versus("3. float32 stack ÷ dataloader-rs", _ours_best(numpy, 2), rs, 1.3)
    first = _table(result, "first_batch")
    best = _ours_best(first) if first else None
    verdict(
        f"5a. first batch ({best['label'] if best else 'ours'})",
        best["median"] if best else None,
        0.1,
        "≤ 0.1 ms",
        low=True,
    )
    images = _table(result, "images")
    if images:
        rows = images["rows"]

        def row(prefix: str, workers: int) -> dict | None:
            found = [r for r in rows if r["label"].startswith(prefix) and r["workers"] == workers]
            return max(found, key=lambda r: r["median"]) if found else None

        native = "transforms pipeline: rust"
        pillow_ours = [r for r in rows if r["label"].startswith("Pillow in __getitem__: ")]
        pillow_1 = max(
            (r for r in pillow_ours if r["workers"] == 1 and not r["peer"]),
            key=lambda r: r["median"],
            default=None,
        )
        versus("9. native, 1 worker ÷ Pillow, 1 worker", row(native, 1), pillow_1, 1.5)
        versus("9. native, 2 workers ÷ native, 1 worker", row(native, 2), row(native, 1), 1.9)
        torch = next((r for r in pillow_ours if r["peer"] == "torch" and r["workers"] == 2), None)
        versus("9. native, 2 workers ÷ torch + Pillow, 2 workers", row(native, 2), torch, 2.5)
    for id, what in (("handoff_trivial", "trivial"), ("handoff_numpy", "NumPy")):
        table = _table(result, id)
        calling = _labelled(table, "dataloader_api, calling thread")
        best = _ours_best(table, 2) if table else None
        versus(f"15. {what}, 2 workers ÷ calling thread", best, calling, 0.9)
    _io_targets(result, versus)
    return [
        "| target | reached | goal | |",
        "|---|---:|---|---|",
        *lines,
        "",
        "What limits the missed ones: [benchmarks/README.md](../benchmarks/README.md#results).",
    ]


def peer_wins(result: dict) -> list[str]:
    """Every table where a peer's median beats our best backend at the same workers."""
    found = []
    # Memory is one reading per loader, not a median of runs; attach has no peers.
    for table in (t for t in result["tables"] if t["kind"] in ("rates", "startup")):
        low = table["unit"] == "ms"
        for peer in ("torch", "dataloader-rs", "spdl", "grain"):
            for theirs in (r for r in table["rows"] if r["peer"] == peer):
                mine = _ours_best(table, theirs["workers"])
                if mine is None:
                    continue
                better = (
                    theirs["median"] < mine["median"] if low else theirs["median"] > mine["median"]
                )
                if better:
                    unit, fmt = table["unit"], "{:.3f}" if low else "{:,.0f}"
                    ours = _ratio(theirs, mine) if low else _ratio(mine, theirs)
                    found.append(
                        f"- {table['title'].split(':')[0]}: {theirs['label']}, "
                        f"{fmt.format(theirs['median'])} {unit}, against our best, "
                        f"{mine['label']}, {fmt.format(mine['median'])} {unit} "
                        f"(ours {ours:.2f}x)."
                    )
    return found or ["No peer beats our best backend in any table of this run."]


def measured_at(results: list[dict]) -> list[str]:
    """The commit the figures were measured at, for readers and for the docs build,
    which says when the code changed since (scripts/mkdocs_hooks.py)."""
    commits = {result.get("commit") for result in results}
    if len(commits) != 1 or None in commits:
        return ["Measured at: not one known commit (" + ", ".join(map(str, commits)) + ").", ""]
    (commit,) = commits
    return [f"<!-- report-commit: {commit} -->", f"Measured at commit `{commit[:12]}`.", ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path, help="run.py --json results")
    parser.add_argument(
        "--out",
        type=Path,
        default=OUT,
        help="the Markdown to write (default docs/benchmarks.md); plots go to the folder "
        "`benchmarks` beside it",
    )
    args = parser.parse_args()
    results = [json.loads(f.read_text()) for f in args.files]
    for path, result in zip(args.files, results, strict=True):
        if any("id" not in t for t in result["tables"]):
            sys.exit(f"{path}: written by an older run.py, without table ids: run it again")
    plots_dir = args.out.parent / "benchmarks"
    plots_dir.mkdir(parents=True, exist_ok=True)
    out = [
        "# Benchmarks",
        "",
        "Generated by `nox -s bench` (`benchmarks/run.py` on each interpreter, then",
        "`benchmarks/report.py`); how the figures are taken is in",
        "[benchmarks/README.md](../benchmarks/README.md). Every ratio is the median",
        "of run-by-run ratios within one run on one machine; nothing here is a test.",
        "",
        *measured_at(results),
    ]
    plots = []
    if speedup_plot(results, plots_dir / "cpu_bound_speedup.png"):
        plots.append(("CPU-bound items: throughput against workers", "cpu_bound_speedup.png"))
    if throughput_plot(results, plots_dir / "throughput.png"):
        plots.append(("Trivial and NumPy items at 2 workers", "throughput.png"))
    for title, name in plots:
        out += [f"![{title}](benchmarks/{name})", ""]
    for result in results:
        out += [
            f"## CPython {result['interpreter']}",
            "",
            f"Machine: {result['machine']}. Peers: {', '.join(result['peers']) or 'none'}.",
            "",
        ]
        if result.get("missing"):
            out += [
                f"Not installed for this run: {', '.join(result['missing'])}. `nox -s bench`"
                " installs each peer where it has wheels (see benchmarks/README.md).",
                "",
            ]
        out += ["### Targets", "", *targets(result), ""]
        out += ["### Where a peer wins", "", *peer_wins(result), ""]
        out += [line.replace("\n### ", "### ") for line in result["markdown"]]
        out.append("")
    args.out.write_text("\n".join(out) + "\n")
    print(f"wrote {args.out} and {len(plots)} plot(s) in {plots_dir}")


if __name__ == "__main__":
    main()
