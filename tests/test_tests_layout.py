"""``tests/`` mirrors the packages (tests/README.md has the map): one folder per
package, on top only the files that check the repository as a whole, no folder
named like a module the code imports, and every ``tests/...`` path the
repository names exists."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "dataloader_api"

TESTS = ROOT / "tests"
TOP_TESTS = {"test_architecture.py", "test_tests_layout.py", "test_packaging.py",
             "test_docs_examples.py", "test_benchmark_servers.py"}  # fmt: skip


def test_tests_sit_in_the_folder_of_their_package():
    """No test file directly in ``tests/`` but the cross-cutting ones, and none
    deeper than one folder; no ``__init__.py``, so a base name is used once
    (pytest's default import mode imports each file by its base name)."""
    on_top = {p.name for p in TESTS.glob("test_*.py")}
    assert on_top == TOP_TESTS, f"move into the folder of their package: {on_top - TOP_TESTS}"
    files = sorted(TESTS.rglob("test_*.py"))
    deep = [str(p.relative_to(TESTS)) for p in files if len(p.relative_to(TESTS).parts) > 2]
    assert not deep, f"one folder per package, no deeper: {deep}"
    assert not list(TESTS.rglob("__init__.py"))
    names = [p.name for p in files]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    # A test file imports test files of its own folder only: pytest puts a
    # folder on sys.path when it imports a file of it, so another folder's file
    # would import or not by the order of collection. Shared helpers sit on top.
    strays = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            module = getattr(node, "module", None) or ""
            if module.startswith("test_") and not (path.parent / f"{module}.py").exists():
                strays.append(f"{path.relative_to(TESTS)} imports {module}")
    assert not strays, strays


IMPORTERS = {"importorskip", "find_spec", "import_module", "__import__"}


def test_no_tests_folder_is_named_like_a_module_imported_here():
    """With ``tests/`` on ``sys.path``, a folder named ``torch`` would be imported
    as a namespace package wherever torch is not installed."""
    imported = set()
    for path in [*TESTS.rglob("*.py"), *PACKAGE.rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                imported.add(node.module.split(".")[0])
            elif (  # importorskip("lmdb"), find_spec("torch"), import_module(...)
                isinstance(node, ast.Call)
                and ast.unparse(node.func).split(".")[-1] in IMPORTERS
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                imported.add(node.args[0].value.split(".")[0])
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))}
    clashes = folders & (imported - set(sys.stdlib_module_names))
    assert not clashes, f"rename these folders of tests/: {clashes}"


def test_every_test_path_named_in_the_repository_exists():
    """The test files that sessions, scripts, docs and code name: a path
    ``tests/...`` is read from the repository's root or from a folder above the
    file naming it (``backends/rust/README.md`` names files of its own tests folder)."""
    # the whole path: a file of the rust backend's tests folder is not one of tests/
    named = re.compile(r"(?<![\w./-])(?:[\w.-]+/)*tests/[\w/*]*[\w*](?:\.\w+)?")
    patterns = ["noxfile.py", "pyproject.toml", ".ci/*", "scripts/*", "*.md", "docs/*.md",
                "benchmarks/*.md", "conformance/*.md", "backends/*/README.md",
                "dataloader_api/**/*", "tests/**/*"]  # fmt: skip
    missing = []
    for source in (p for pattern in patterns for p in ROOT.glob(pattern)):
        if source.suffix not in {"", ".py", ".md", ".toml", ".sh"} or not source.is_file():
            continue
        if source.name in ("CHANGELOG.md", "changelog.md"):
            continue  # it names the paths of its day
        for found in named.findall(source.read_text()):
            roots = [ROOT, *(p for p in source.parents if ROOT in p.parents)]
            if not any(list(root.glob(found)) for root in roots):  # a pattern too
                missing.append(f"{source.relative_to(ROOT)}: {found}")
    assert not missing, missing
