"""The examples of the user guide and the quickstart (code blocks that start with
`# example:`) run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dataloader_api import backends

GUIDE = Path(__file__).parents[1] / "docs" / "user-guide.md"
QUICKSTART = GUIDE.parent / "quickstart.md"
EXAMPLE = r"```python\n(# example: (\S+)\n.*?)```"
BLOCKS = [
    (code, name, page.name)
    for page in (GUIDE, QUICKSTART)
    for code, name in re.findall(EXAMPLE, page.read_text(), re.S)
]


def test_the_guide_has_examples():
    assert {name for _, name, page in BLOCKS if page == GUIDE.name} >= {"async", "stats"}


def test_the_quickstart_has_examples():
    """Every Python block of the quickstart is an example that runs."""
    text = QUICKSTART.read_text()
    examples = re.findall(EXAMPLE, text, re.S)
    assert examples and len(examples) == text.count("```python\n")


SHIPPED = [name for name in ("rust", "cffi", "threads") if name in backends()]


@pytest.mark.parametrize("backend", SHIPPED)
@pytest.mark.parametrize(
    ("code", "name", "page"), BLOCKS, ids=[f"{page}:{name}" for _, name, page in BLOCKS]
)
def test_example_runs(code, name, page, backend, capsys, monkeypatch):
    """Each example runs as written on every shipped backend (the default one is the
    one $DATALOADER_BACKEND names)."""
    monkeypatch.setenv("DATALOADER_BACKEND", backend)
    exec(compile(code, f"{page}:{name}", "exec"), {"__name__": f"example_{name}"})


DOCS = [GUIDE.parents[1] / "README.md", *sorted(GUIDE.parent.glob("*.md"))]
PYTHON_BLOCKS = [
    pytest.param(code, id=f"{path.name}:{text[: match.start()].count(chr(10)) + 1}")
    for path in DOCS
    for text in [path.read_text()]
    for match in re.finditer(r"```python\n(.*?)```", text, re.S)
    for code in [match.group(1)]
]


@pytest.mark.parametrize("code", PYTHON_BLOCKS)
def test_every_python_block_is_python(code):
    """A block marked Python parses as Python (the id is the file and line)."""
    compile(code, "<doc>", "exec")


def test_the_signature_in_the_guide_is_the_loaders():
    import inspect

    from dataloader_api import DataLoader

    namespace: dict = {}
    block = re.search(r"```python\n(class DataLoader:.*?)```", GUIDE.read_text(), re.S)
    assert block is not None
    exec(block.group(1), namespace)
    assert inspect.signature(namespace["DataLoader"].__init__) == inspect.signature(
        DataLoader.__init__
    ).replace(
        return_annotation=inspect.Signature.empty,
        parameters=[
            p.replace(annotation=p.empty)
            for p in inspect.signature(DataLoader.__init__).parameters.values()
        ],
    )


def test_the_backend_guide_names_every_contract_field_and_capability():
    """docs/backends.md walks a backend author through the contract: it must name
    every field of the values that cross, every method, and each optional capability."""
    import dataclasses

    from dataloader_api import contract

    guide = (GUIDE.parent / "backends.md").read_text()
    missing = []
    for name in contract.__all__:
        value = getattr(contract, name)
        if dataclasses.is_dataclass(value):
            names = [field.name for field in dataclasses.fields(value)]
        elif isinstance(value, type):
            names = [m for m in vars(value) if not m.startswith("_")]
        else:
            names = []
        missing += [f"{name}.{n}" for n in [name, *names] if n not in guide]
    missing += [c for c in ("open_reader", "pool_settings") if f"`{c}(" not in guide]
    assert not missing, f"docs/backends.md does not name: {missing}"


PUBLIC_MODULES = [
    "dataloader_api", "dataloader_api.io", "dataloader_api.io.loopback", "dataloader_api.shards",
    "dataloader_api.transforms", "dataloader_api.contract", "dataloader_api.kit",
    "dataloader_api.integrations", "dataloader_api.testing",
]  # fmt: skip


@pytest.mark.parametrize("module", PUBLIC_MODULES)
def test_the_api_reference_has_every_public_name(module):
    """Each name a public module exports is in docs/api.md, on its own or with its
    module (a module entry documents its ``__all__``)."""
    import importlib

    text = (GUIDE.parent / "api.md").read_text()
    entries = set(re.findall(r"^::: (\S+)$", text, re.M))
    names = importlib.import_module(module).__all__
    missing = [n for n in names if module not in entries and f"{module}.{n}" not in entries]
    assert not missing, f"docs/api.md lacks {module}: {missing}"
