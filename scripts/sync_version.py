"""The project's one version, copied where each build tool looks for it.

The source is ``version`` in the root ``pyproject.toml``. This script writes it
into ``dataloader_api.__version__``, the backends' own versions (their
pyproject.toml, the Rust crates and Cargo.lock) and the version ranges that tie
the distributions together: each backend accepts ``dataloader-api`` of its own
minor version (0.x) or major version (1 and later), and the core's extras ask
for backends of the same range.

    python scripts/sync_version.py           # write
    python scripts/sync_version.py --check   # exit 1, listing the files that differ
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def project_version() -> str:
    text = (ROOT / "pyproject.toml").read_text()
    found = re.search(r'(?m)^version = "([^"]+)"', text)
    if found is None:
        raise SystemExit("pyproject.toml has no version")
    return found.group(1)


def compatible_range(version: str) -> str:
    """``>=V,<next``: the next minor while 0.x, else the next major."""
    major, minor = (int(part) for part in version.split(".")[:2])
    upper = f"0.{minor + 1}" if major == 0 else f"{major + 1}"
    return f">={version},<{upper}"


def _edits(version: str) -> dict[Path, list[Callable[[str], str]]]:
    spec = compatible_range(version)

    def sub(pattern: str, replacement: str) -> Callable[[str], str]:
        return lambda text: re.sub(pattern, replacement, text)

    def toml_version() -> Callable[[str], str]:
        return sub(r'(?m)^version = "[^"]+"', f'version = "{version}"')

    def requirement(name: str) -> Callable[[str], str]:
        return sub(rf'"{name}[^"]*"', f'"{name}{spec}"')

    def lock_entry(name: str) -> Callable[[str], str]:
        return sub(rf'(name = "{name}"\nversion = )"[^"]+"', rf'\g<1>"{version}"')

    return {
        ROOT / "pyproject.toml": [requirement("dataloader-rust"), requirement("dataloader-cffi")],
        ROOT / "dataloader_api" / "__init__.py": [
            sub(r'(?m)^__version__ = "[^"]+"', f'__version__ = "{version}"')
        ],
        ROOT / "backends" / "rust" / "pyproject.toml": [
            toml_version(),
            requirement("dataloader-api"),
        ],
        ROOT / "backends" / "cffi" / "pyproject.toml": [
            toml_version(),
            requirement("dataloader-api"),
        ],
        ROOT / "backends" / "rust" / "Cargo.toml": [toml_version()],
        ROOT / "backends" / "rust" / "core" / "Cargo.toml": [toml_version()],
        ROOT / "backends" / "rust" / "imaging" / "Cargo.toml": [toml_version()],
        ROOT / "backends" / "rust" / "netio" / "Cargo.toml": [toml_version()],
        ROOT / "backends" / "rust" / "Cargo.lock": [
            lock_entry("dataloader-rust"),
            lock_entry("dataloader-core"),
            lock_entry("dataloader-imaging"),
            lock_entry("dataloader-netio"),
        ],
    }


def out_of_date(version: str | None = None) -> dict[Path, str]:
    """Each file whose text differs from what it should be, with that text."""
    version = version or project_version()
    stale = {}
    for path, edits in _edits(version).items():
        text = path.read_text()
        wanted = text
        for edit in edits:
            wanted = edit(wanted)
        if wanted != text:
            stale[path] = wanted
    return stale


def main(argv: list[str]) -> int:
    stale = out_of_date()
    if "--check" in argv:
        for path in stale:
            print(f"{path.relative_to(ROOT)}: not at version {project_version()}")
        return 1 if stale else 0
    for path, text in stale.items():
        path.write_text(text)
        print(f"updated {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
