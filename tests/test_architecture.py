"""The house rules that keep the code readable, checked on the source tree: only
the faces directly in ``dataloader_api/``, its packages on floors that import only
downwards, no import circle inside the common API, no backend importing another,
small rooms (``tests/``'s own layout: ``test_tests_layout.py``)."""

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
# A function longer than this does several things: name them, one function each.
MAX_FUNCTION_LINES = 80
# The only files directly in dataloader_api/: the faces (what users import: the
# package, integrations, testing, demo), the facade, and the modules whose names
# users import (collate functions, datasets, errors). Every other module lives
# in a package named for its concern.
TOP_FILES = {
    "__init__.py",
    "integrations.py",
    "testing.py",
    "demo.py",
    "_loader.py",
    "_collate.py",
    "_datasets.py",
    "_errors.py",
}
# The package order, lowest floor first: a package (or top file) imports only
# packages on floors below its own, never one on its floor or above (the
# packages of a floor are peers). See dataloader_api/README.md for the map.
FLOORS: list[set[str]] = [
    {"contract"},
    {"_common", "kit"},
    {"_errors", "_datasets", "_collate"},
    {"_sampling", "io", "transforms"},
    {"_torch", "_features", "shards"},
    {"integrations", "_options"},
    {"_workers"},
    {"_epoch"},
    {"_loader"},
    {"", "testing", "demo"},  # "": the package's own __init__
]


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


def _all_imports(path: Path) -> set[str]:
    """Every module ``path`` imports: at the top, in functions and under
    ``if TYPE_CHECKING:``; ``from pkg import name`` names ``pkg.name`` when that is
    a module, else ``pkg``."""
    modules = {_module_name(p) for p in PACKAGE.rglob("*.py")}
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:
                found.add(
                    f"{module}.{alias.name}" if f"{module}.{alias.name}" in modules else module
                )
    return found


def _unit(module: str) -> str | None:
    """The package (or top file) of a module of the common API: ``_epoch`` for
    ``dataloader_api._epoch.start``, ``_loader`` for ``dataloader_api._loader``,
    ``""`` for the package itself; None outside the common API."""
    parts = module.split(".")
    if parts[0] != "dataloader_api":
        return None
    return parts[1] if len(parts) > 1 else ""


def _unit_graph() -> dict[str, set[str]]:
    """Which packages each package imports, all imports counted."""
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        unit = _unit(_module_name(path))
        assert unit is not None
        targets = {_unit(m) for m in _all_imports(path)}
        graph.setdefault(unit, set()).update(t for t in targets if t is not None and t != unit)
    return graph


def _floor(unit: str) -> int:
    return next(level for level, floor in enumerate(FLOORS) if unit in floor)


def test_only_the_faces_sit_directly_in_the_package():
    top = {p.name for p in PACKAGE.glob("*.py")}
    assert top == TOP_FILES, (
        f"put these in a package by concern: {sorted(top - TOP_FILES)}; "
        f"gone from the top: {sorted(TOP_FILES - top)}"
    )


def test_every_package_has_a_floor_and_a_map():
    units = set(_unit_graph())
    placed = [unit for floor in FLOORS for unit in floor]
    assert len(placed) == len(set(placed)), "a package is on two floors"
    assert units == set(placed), (
        f"without a floor: {sorted(units - set(placed))}; gone: {sorted(set(placed) - units)}"
    )
    for folder in (p.parent for p in PACKAGE.glob("*/__init__.py")):
        readme = folder / "README.md"
        assert readme.is_file(), f"{folder.name}/ has no README.md"
        text = readme.read_text()
        missing = [
            p.name for p in folder.glob("*.py") if p.name != "__init__.py" and p.name not in text
        ]
        assert not missing, f"{folder.name}/README.md does not list {missing}"


def test_packages_import_only_the_floors_below():
    """Counting imports under ``TYPE_CHECKING`` and inside functions."""
    upward = {
        f"{unit or '__init__'} -> {target or '__init__'}"
        for unit, targets in _unit_graph().items()
        for target in targets
        if _floor(target) >= _floor(unit)
    }
    assert not upward, f"imports on or above their own floor: {sorted(upward)}"


def test_the_packages_have_no_import_circle():
    """Counting imports under ``TYPE_CHECKING`` and inside functions."""
    _assert_no_circle(_unit_graph())


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
    """Neither between the glue's module folders (``pool``, ``images``...) nor
    between the files within them: every ``crate::`` path names a folder, then
    maybe a file in it."""
    source = ROOT / "backends" / "rust" / "src"
    files = {
        ".".join(p.relative_to(source).with_suffix("").parts): p
        for p in source.rglob("*.rs")
        if p.name not in ("lib.rs", "mod.rs")
    }
    assert len(files) > 15, sorted(files)
    graph: dict[str, set[str]] = {}
    folders: dict[str, set[str]] = {name.split(".")[0]: set() for name in files}
    for name, path in files.items():
        top = name.split(".")[0]
        used = set()
        for first, second in re.findall(r"\bcrate::(\w+)(?:::(\w+))?", path.read_text()):
            target = f"{first}.{second}" if f"{first}.{second}" in files else first
            assert target in files or any(f.startswith(first + ".") for f in files), (
                f"{name} uses crate::{first}, no module of the glue"
            )
            used.add(target)
            if first != top:
                folders[top].add(first)
        graph[name] = used - {name}
    _assert_no_circle(graph)
    _assert_no_circle(folders)


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
        *(ROOT / "backends" / "rust" / "src").rglob("*.rs"),
        *(ROOT / "benchmarks").glob("*.py"),
        *(ROOT / "backends" / "cffi" / "csrc").glob("*.[ch]"),
        *(ROOT / "scripts").glob("*.py"),
        *(ROOT / "tests").rglob("*.py"),
        ROOT / "noxfile.py",
    ]
    assert sources
    large = {
        str(p.relative_to(ROOT)): n
        for p in sources
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert not large, f"split these by concern: {large}"


def test_functions_stay_short():
    """No function of the common API over ``MAX_FUNCTION_LINES`` lines (decorators,
    docstring and nested functions counted)."""
    long = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                assert node.end_lineno is not None
                if (lines := node.end_lineno - first + 1) > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"] = lines
    assert not long, f"split these by what they do: {long}"


def test_the_iterator_takes_its_epoch_whole():
    """An epoch is decided once (``_epoch.prepare.PreparedEpoch``, frozen) and the
    iterator is built from it and its ``EpochRun``: no module sets an attribute on
    an iterator after building it."""
    from dataclasses import fields

    from dataloader_api._epoch.iterator import EpochRun
    from dataloader_api._epoch.prepare import PreparedEpoch

    for value in (PreparedEpoch, EpochRun):
        assert value.__dataclass_params__.frozen, value
        assert fields(value)
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "iterator.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            targets = getattr(node, "targets", None) or [getattr(node, "target", None)]
            for target in targets:
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "iterator"
                ):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} iterator.{target.attr}")
    assert not found, f"set in the iterator's construction instead: {found}"


# The pieces an epoch is composed of, and the one module that composes them
# (``_epoch.work``; ``_features.feature_list`` lists the features' steps).
EPOCH_PIECES = {
    "dataloader_api._epoch.async_loop",
    "dataloader_api._epoch.native_reads",
    "dataloader_api._epoch.fetch",
    "dataloader_api._epoch.plan.open_iterable",
    "dataloader_api._features.feature_list.apply_steps",
}
COMPOSERS = {"dataloader_api._epoch.work"}


def test_one_module_composes_an_epoch():
    """The calling thread and the workers consume one composition: no other module
    picks an epoch's source or wraps its dataset calls."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        name = _module_name(path)
        pieces = _runtime_imports(path) & EPOCH_PIECES
        if pieces and name not in COMPOSERS:
            found[name] = sorted(pieces)
    assert not found, f"only _epoch.work composes an epoch, but: {found}"


def test_features_declare_their_needs_in_one_list():
    """Whether a pool may be shared or the dataset copied is each feature's own
    declaration (``_features.feature_list.FEATURES``), not a list kept in those rooms."""
    options = re.compile(
        r"options\.(agetitem|transform|worker_init_fn|items_in_parallel|share_dataset|persistent_workers)"
    )
    for room in ("_features/idle_pools.py", "_workers/dataset_copies.py", "_workers/pool.py"):
        text = (PACKAGE / room).read_text()
        if room == "_workers/pool.py":  # it passes worker_init_fn to the threads it starts
            text = text.replace("options.worker_init_fn", "").replace(
                "options.items_in_parallel", ""
            )
        assert not options.findall(text), f"{room} decides by feature: {options.findall(text)}"


def test_the_contract_imports_nothing_of_the_loader():
    for path in (PACKAGE / "contract").glob("*.py"):
        ours = {m for m in _runtime_imports(path) if m.startswith("dataloader_api")}
        outside = {m for m in ours if not m.startswith("dataloader_api.contract")}
        assert not outside, f"{path.name} imports {outside}"
