"""Build every distribution of the project into one folder (``nox -s build``).

- ``dataloader-api`` (with the threads backend inside): sdist and a pure wheel.
- ``dataloader-rust``: sdist, and a release wheel for this interpreter built by
  maturin, which checks it against the manylinux policy below and tags it so.
- ``dataloader-cffi``: sdist, and a wheel for this interpreter that
  ``auditwheel repair`` checks against the same policy and tags.

The policy is the newest glibc baseline this machine's glibc (2.36) can vouch
for without a cross toolchain: ``manylinux_2_34``. The wheels use no glibc
symbol newer than 2.34 (both tools verify it); they install on any x86_64
Linux with glibc 2.34 or later (Debian 12, Ubuntu 22.04, RHEL 10 and newer).

    python scripts/build_dists.py OUT_DIR
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
POLICY = "manylinux_2_34"


def run(*command: str | Path, cwd: Path = ROOT) -> None:
    print("+", " ".join(str(part) for part in command), flush=True)
    subprocess.run([str(part) for part in command], cwd=cwd, check=True)


def build(out: Path) -> list[Path]:
    """Build into ``out`` (emptied first); the files made, sorted."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    python = sys.executable
    run(python, "-m", "build", "--sdist", "--wheel", "--outdir", out, ROOT)
    cargo = ROOT / "backends" / "rust" / "Cargo.toml"
    run("maturin", "sdist", "--manifest-path", cargo, "--out", out)
    # With NASM on PATH, JPEG decoding gets libjpeg-turbo's SIMD kernels.
    simd = ["--features", "simd"] if shutil.which("nasm") else []
    run(
        "maturin", "build", "--release", "--manifest-path", cargo, "--out", out,
        "--interpreter", python, "--compatibility", POLICY, "--auditwheel", "check", *simd,
    )  # fmt: skip
    cffi = ROOT / "backends" / "cffi"
    run(python, "-m", "build", "--sdist", "--outdir", out, cffi)
    with tempfile.TemporaryDirectory() as raw:
        run(python, "-m", "build", "--wheel", "--outdir", raw, cffi)
        for wheel in Path(raw).glob("*.whl"):
            run("auditwheel", "repair", "--plat", f"{POLICY}_x86_64", "--wheel-dir", out, wheel)
    return sorted(out.iterdir())


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    for made in build(Path(sys.argv[1]).resolve()):
        print(made.name)
