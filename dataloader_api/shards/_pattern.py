"""Shard lists: a brace pattern as webdataset writes it, a list, or a function.

``expand_braces("train-{000..002}.tar")`` gives ``train-000.tar``,
``train-001.tar``, ``train-002.tar``: numeric ranges (``{a..b}``, with a step
``{a..b..s}``, zero-padded to the wider bound when either has a leading zero)
and alternatives (``{x,y}``), nested or several in one pattern, as the
``braceexpand`` package that webdataset uses expands them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["expand_braces", "shard_list"]

_RANGE = re.compile(r"^(-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?$")


def _closing(pattern: str, start: int) -> int:
    """The index of the brace closing the one at ``start``, or -1."""
    depth = 0
    for position in range(start, len(pattern)):
        if pattern[position] == "{":
            depth += 1
        elif pattern[position] == "}":
            depth -= 1
            if depth == 0:
                return position
    return -1


def _split_top_level(body: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in body:
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        depth += char == "{"
        depth -= char == "}"
        current.append(char)
    parts.append("".join(current))
    return parts


def _number_range(left: str, right: str, step_text: str | None) -> list[str]:
    first, last = int(left), int(right)
    step = abs(int(step_text)) if step_text else 1
    if step == 0:
        raise ValueError(f"a brace range's step should not be 0, but got {{{left}..{right}..0}}")
    padded = any(s.lstrip("-").startswith("0") and s.lstrip("-") != "0" for s in (left, right))
    width = max(len(left), len(right)) if padded else 0
    values = range(first, last + 1, step) if first <= last else range(first, last - 1, -step)
    return [f"{value:0{width}d}" for value in values]


def expand_braces(pattern: str) -> list[str]:
    """Every string ``pattern`` stands for, in order."""
    start = pattern.find("{")
    while start != -1:
        end = _closing(pattern, start)
        if end == -1:
            raise ValueError(f"shards: unbalanced '{{' in the pattern {pattern!r}")
        body = pattern[start + 1 : end]
        numbers = _RANGE.match(body)
        if numbers:
            choices = _number_range(*numbers.groups())
        elif "," in body:
            choices = _split_top_level(body)
        else:
            start = pattern.find("{", start + 1)  # a literal brace, as braceexpand keeps it
            continue
        head, tail = pattern[:start], pattern[end + 1 :]
        return [head + expanded for choice in choices for expanded in expand_braces(choice + tail)]
    return [pattern]


def shard_list(shards: Any) -> list[str]:
    """The shards ``shards`` names: a brace pattern, a path, a sequence of
    paths, or a function of no argument returning one of those."""
    given = shards
    if callable(shards) and not isinstance(shards, str | os.PathLike):
        shards = shards()
    if isinstance(shards, str):
        found = expand_braces(shards)
    elif isinstance(shards, os.PathLike):
        found = [os.fspath(shards)]
    elif isinstance(shards, Sequence) and all(isinstance(s, str | os.PathLike) for s in shards):
        found = [os.fspath(s) for s in shards]  # as webdataset: a list's entries are not patterns
    else:
        raise TypeError(
            "shards should be a brace pattern ('train-{000000..000099}.tar'), a path, a list "
            f"of paths, or a function returning one of those, but got shards={given!r}"
        )
    if not found:
        raise ValueError(f"shards names no shard: shards={given!r}")
    return found


ShardsArg = str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | Callable[[], Any]
