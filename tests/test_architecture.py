"""The house rules that keep the code readable, checked on the source tree: no
import circle inside the common API, no backend importing another, small rooms."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "dataloader_api"
# Each backend's import name, and the folder its Python sources live in.
BACKENDS = {
    "dataloader_threads": ROOT / "backends" / "threads" / "dataloader_threads",
    "dataloader_cffi": ROOT / "backends" / "cffi" / "dataloader_cffi",
    "dataloader_rust": ROOT / "backends" / "rust" / "dataloader_rust",
    "minimal_backend": ROOT / "docs" / "example_backend" / "minimal_backend",
    "dataloader_broken": ROOT / "conformance" / "broken" / "dataloader_broken",
}
# "Under about 400 lines": a room that grows past this is split by concern.
MAX_LINES = 420


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _runtime_imports(path: Path) -> set[str]:
    """Modules imported when ``path`` runs (``if TYPE_CHECKING:`` blocks left out)."""
    tree = ast.parse(path.read_text())
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found: set[str] = set()

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(node.orelse)
                continue
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                module = ".".join([*base, *([node.module] if node.module else [])])
                found.add(module)
                found.update(f"{module}.{alias.name}" for alias in node.names)
            for field in ("body", "orelse", "finalbody", "handlers"):
                visit([n for n in getattr(node, field, []) if isinstance(n, ast.stmt)])

    visit(tree.body)
    return found


def _package_graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: _runtime_imports(path) & set(modules) - {name} for name, path in modules.items()}


def _assert_no_circle(graph: dict[str, set[str]]) -> None:
    state: dict[str, int] = {}
    path: list[str] = []

    def walk(module: str) -> None:
        state[module] = 1
        path.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                circle = [*path[path.index(target) :], target]
                pytest.fail("import circle: " + " -> ".join(circle))
            if target not in state:
                walk(target)
        path.pop()
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            walk(module)


def test_the_common_api_has_no_import_circle():
    graph = _package_graph()
    # A package's __init__ re-exports its modules; an edge into it from one of its
    # own modules is the import system reaching the module, not a dependency.
    for name, edges in graph.items():
        graph[name] = {e for e in edges if not name.startswith(e + ".")}
    _assert_no_circle(graph)


def test_the_rust_modules_have_no_use_circle():
    source = ROOT / "backends" / "rust" / "src"
    modules = {p.stem: p for p in source.glob("*.rs")}
    graph = {
        name: set(re.findall(r"\bcrate::(\w+)", path.read_text())) & set(modules) - {name}
        for name, path in modules.items()
    }
    _assert_no_circle(graph)


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_no_backend_imports_another_backend(backend):
    others = set(BACKENDS) - {backend}
    for path in BACKENDS[backend].rglob("*.py"):
        imported = {name.split(".")[0] for name in _runtime_imports(path)}
        assert not imported & others, f"{path.relative_to(ROOT)} imports {imported & others}"


def test_rooms_stay_small():
    sources = [
        *PACKAGE.rglob("*.py"),
        *(p for folder in BACKENDS.values() for p in folder.rglob("*.py")),
        *(ROOT / "backends" / "rust").glob("*/src/*.rs"),
        *(ROOT / "backends" / "rust" / "src").glob("*.rs"),
        *(ROOT / "benchmarks").glob("*.py"),
        *(ROOT / "backends" / "cffi" / "csrc").glob("*.[ch]"),
        *(ROOT / "scripts").glob("*.py"),
        ROOT / "noxfile.py",
    ]
    assert sources
    large = {
        str(p.relative_to(ROOT)): n
        for p in sources
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert not large, f"split these by concern: {large}"
