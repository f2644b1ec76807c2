"""The user guide's examples (code blocks that start with `# example:`) run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

GUIDE = Path(__file__).parents[1] / "docs" / "user-guide.md"
BLOCKS = re.findall(r"```python\n(# example: (\S+)\n.*?)```", GUIDE.read_text(), re.S)


def test_the_guide_has_examples():
    assert {name for _, name in BLOCKS} >= {"async", "stats"}


@pytest.mark.parametrize(("code", "name"), BLOCKS, ids=[name for _, name in BLOCKS])
def test_example_runs(code, name, capsys):
    exec(compile(code, f"{GUIDE.name}:{name}", "exec"), {"__name__": f"example_{name}"})
