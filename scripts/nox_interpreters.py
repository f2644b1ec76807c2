"""Which CPythons the nox matrix finds on this machine (pyenv's versions folder and
PATH), for noxfile.py: reading them runs no subprocess, so `nox -l` builds nothing.

pyenv's interpreters are visible to nox only when PYENV_VERSION lists them, so
``expose_pyenv`` sets it.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

__all__ = ["expose_pyenv", "matrix_executables", "on_path", "provisionable", "pyenv_root"]


def pyenv_root() -> Path | None:
    """pyenv's root when pyenv is on PATH (without it its shims are not either)."""
    if shutil.which("pyenv") is None:
        return None
    return Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")


def _pyenv_versions() -> list[str]:
    """What `pyenv versions --bare` lists, read from the versions folder (no subprocess)."""
    root = pyenv_root()
    try:
        return sorted(p.name for p in (root / "versions").iterdir()) if root else []
    except OSError:
        return []


def _newest_pyenv_version(candidate: str, installed: list[str]) -> str | None:
    """The newest pyenv version for '3.13' (a GIL build) or '3.13t' (free-threaded)."""
    free_threaded = candidate.endswith("t")
    minor = candidate.rstrip("t")
    pattern = re.compile(rf"^{re.escape(minor)}\.(\d+){'t' if free_threaded else ''}$")
    matches = [(int(m.group(1)), v) for v in installed if (m := pattern.match(v))]
    return max(matches)[1] if matches else None


def expose_pyenv(matrix: list[str]) -> dict[str, str]:
    """Each candidate of ``matrix`` that pyenv has, and its pyenv version, now listed first
    in PYENV_VERSION so that the shims (and so nox) find it."""
    installed = _pyenv_versions()
    chosen = {c: v for c in matrix if (v := _newest_pyenv_version(c, installed))}
    if chosen:
        # GIL builds first, so `python3.13` resolves to the GIL build.
        order = sorted(chosen.values(), key=lambda v: (v.endswith("t"), v))
        current = [v for v in os.environ.get("PYENV_VERSION", "").split(":") if v]
        os.environ["PYENV_VERSION"] = ":".join(dict.fromkeys(order + current))
    return chosen


def on_path(candidate: str) -> bool:
    """``python3.X`` on PATH; a pyenv shim counts only if a version in PYENV_VERSION has
    that executable (else the shim exists but fails)."""
    exe = shutil.which(f"python{candidate}")
    root = pyenv_root()
    if exe is None or root is None or Path(exe).parent != root / "shims":
        return exe is not None
    listed = [v for v in os.environ.get("PYENV_VERSION", "").split(":") if v]
    return any((root / "versions" / v / "bin" / f"python{candidate}").is_file() for v in listed)


def provisionable(script: Path) -> bool:
    return script.exists() and os.environ.get("DATALOADER_NO_PROVISION") != "1"


def matrix_executables(matrix: list[str]) -> list[str]:
    """The executable of each interpreter of the matrix installed now (pyenv's own
    binary, not its shim, which needs PYENV_VERSION)."""
    root, chosen = pyenv_root(), expose_pyenv(matrix)
    found = []
    for candidate in matrix:
        if candidate in chosen and root is not None:
            found.append(str(root / "versions" / chosen[candidate] / "bin" / f"python{candidate}"))
        elif (exe := shutil.which(f"python{candidate}")) is not None:
            found.append(exe)
    return found
