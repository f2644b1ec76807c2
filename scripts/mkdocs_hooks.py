"""mkdocs hooks for the docs site (mkdocs.yml).

- The home page is README.md and the changelog CHANGELOG.md, read from the
  repository root, so that each is written once.
- A link that leaves docs/ (to a source file or a package README) points at
  the repository, which the site does not contain: it is checked to exist (a
  broken one fails the build) and kept as its text, the path beside it.
  Links into docs/ are made relative to the page, so mkdocs checks them too.
- The benchmark report names the commit it was measured at; when the code it
  measures changed since, a warning at its top says how many commits ago
  (`report_age`), so a reader sees a stale report for what it is. A report
  that names no commit fails the build.
"""

from __future__ import annotations

import posixpath
import re
import subprocess
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
FROM_ROOT = {"index.md": "README.md", "changelog.md": "CHANGELOG.md"}
# [text](target) and ![alt](target), not inside code spans (good enough for our docs).
LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")


def on_page_read_source(page: Any, config: Any) -> str | None:
    source = FROM_ROOT.get(page.file.src_uri)
    return None if source is None else (ROOT / source).read_text()


REPORT = "benchmarks.md"
REPORT_COMMIT = re.compile(r"<!-- report-commit: ([0-9a-f]{40})(\+changes)? -->")
#: what the report measures: a commit that changed any of these makes it older
#: (their Markdown aside: the benchmarks' README quotes the report it follows)
MEASURED = ["benchmarks", "dataloader_api", "backends"]
NOT_MEASURED = [":(exclude,glob)**/*.md"]


def report_age(markdown: str) -> str:
    """A warning for the report's top when the code changed since it was measured
    ("" when it did not, or when git cannot tell: a source tree without history)."""
    found = REPORT_COMMIT.search(markdown)
    if found is None:
        raise PluginError(f"docs/{REPORT}: names no commit (`<!-- report-commit: SHA -->`)")
    commit, changed = found.groups()
    done = subprocess.run(
        ["git", "rev-list", "--count", f"{commit}..HEAD", "--", *MEASURED, *NOT_MEASURED],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode != 0:
        return ""
    commits = int(done.stdout.strip() or 0)
    if not commits and not changed:
        return ""
    since = f"{commits} commits since changed" if commits else "uncommitted changes were in"
    return (
        '!!! warning "Older than the code"\n'
        f"    Measured at commit `{commit[:12]}`; {since} the code it measures "
        f"({', '.join(f'`{m}/`' for m in MEASURED)}), so its figures may not hold "
        "now. `nox -s bench` then `nox -s bench_report` measure this commit.\n\n"
    )


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    page_uri = page.file.src_uri
    if page_uri == REPORT:
        warning = report_age(markdown)
        title, _, rest = markdown.partition("\n\n")
        markdown = f"{title}\n\n{warning}{rest}" if warning else markdown
    # Where the page's relative links start: the root for README and CHANGELOG.
    base = ROOT if page_uri in FROM_ROOT else (DOCS / page_uri).parent

    def rewrite(match: re.Match[str]) -> str:
        bang, text, target = match.groups()
        if re.match(r"^[a-z]+:|^#", target):
            return match.group(0)  # a URL or an anchor on the page
        path, _, anchor = target.partition("#")
        resolved = (base / path).resolve()
        if not resolved.exists():
            raise PluginError(f"{page_uri}: broken link to {target!r}")
        if resolved.is_relative_to(DOCS):
            relative = posixpath.relpath(
                resolved.relative_to(DOCS).as_posix(), posixpath.dirname(page_uri) or "."
            )
            return f"{bang}[{text}]({relative}{'#' + anchor if anchor else ''})"
        shown = resolved.relative_to(ROOT).as_posix()
        return text if text.strip("`") == shown else f"{text} (`{shown}` in the repository)"

    return LINK.sub(rewrite, markdown)
