"""Build every distribution of the project into one folder (``nox -s build``).

- ``dataloader-api`` (with the threads backend inside): sdist and a pure wheel.
- ``dataloader-rust``: sdist, and a release wheel for each interpreter given
  (this one when none is), built by maturin, which checks each against the
  manylinux policy below and tags it so. A release wheel already built from
  the same source for an interpreter (``--reuse DIR``: ``nox -s tests``
  builds one per interpreter) is checked and tagged by ``auditwheel repair``
  instead of being compiled again.
- ``dataloader-cffi``: sdist, and a wheel for each of those interpreters that
  is not free-threaded (cffi 2.x refuses 3.13t), which ``auditwheel repair``
  checks against the same policy and tags.

The policy is the newest glibc baseline this machine's glibc (2.36) can vouch
for without a cross toolchain: ``manylinux_2_34``. The wheels use no glibc
symbol newer than 2.34 (both tools verify it); they install on any x86_64
Linux with glibc 2.34 or later (Debian 12, Ubuntu 22.04, RHEL 10 and newer).

    python scripts/build_dists.py OUT_DIR [--reuse DIR ...] [PYTHON ...]
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


def free_threaded(python: str | Path) -> bool:
    check = "import sysconfig; print(bool(sysconfig.get_config_var('Py_GIL_DISABLED')))"
    answer = subprocess.run([str(python), "-c", check], capture_output=True, text=True, check=True)
    return answer.stdout.strip() == "True"


def wheel_tag(python: str | Path) -> str:
    """The ``cpXY-cpXY[t]`` part of a wheel's name for ``python``."""
    check = (
        "import sys, sysconfig; v = f'cp{sys.version_info[0]}{sys.version_info[1]}'; "
        "print(f\"{v}-{v}{'t' if sysconfig.get_config_var('Py_GIL_DISABLED') else ''}\")"
    )
    answer = subprocess.run([str(python), "-c", check], capture_output=True, text=True, check=True)
    return answer.stdout.strip()


def repair(wheel: Path, out: Path) -> None:
    """Check ``wheel`` against the policy and tag it so, into ``out``."""
    run("auditwheel", "repair", "--plat", f"{POLICY}_x86_64", "--wheel-dir", out, wheel)


def build(out: Path, interpreters: list[str], reuse: list[Path] | None = None) -> list[Path]:
    """Build into ``out`` (emptied first), the native wheels for each of
    ``interpreters``, reusing the rust ones found in ``reuse``; the files made,
    sorted."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    python = sys.executable
    interpreters = interpreters or [python]
    run(python, "-m", "build", "--sdist", "--wheel", "--outdir", out, ROOT)
    cargo = ROOT / "backends" / "rust" / "Cargo.toml"
    run("maturin", "sdist", "--manifest-path", cargo, "--out", out)
    # The wheels are how users get the backend: never without libjpeg-turbo's SIMD.
    if not shutil.which("nasm"):
        sys.exit(
            "build_dists: no nasm on PATH, so the rust wheels would decode JPEG about 2x "
            "slower; nox -s build provisions it (scripts/provision-nasm.sh)"
        )
    prebuilt = [w for folder in reuse or [] for w in folder.glob("dataloader_rust-*.whl")]
    to_build = []
    for interpreter in interpreters:
        tag = wheel_tag(interpreter)
        found = [w for w in prebuilt if f"-{tag}-" in w.name]
        if found:
            print(f"rust wheel for {interpreter}: reusing {found[0]}")
            repair(found[0], out)
        else:
            to_build.append(interpreter)
    if to_build:
        run(
            "maturin", "build", "--release", "--manifest-path", cargo, "--out", out,
            "--interpreter", *to_build, "--compatibility", POLICY, "--auditwheel", "check",
        )  # fmt: skip
    cffi = ROOT / "backends" / "cffi"
    run(python, "-m", "build", "--sdist", "--outdir", out, cffi)
    with tempfile.TemporaryDirectory() as raw:
        for interpreter in interpreters:
            if free_threaded(interpreter):
                print(f"no cffi wheel for {interpreter}: cffi 2.x refuses free-threaded 3.13t")
                continue
            run(interpreter, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", raw, cffi)
        for wheel in Path(raw).glob("*.whl"):
            repair(wheel, out)
    return sorted(out.iterdir())


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    arguments, reuse = sys.argv[2:], []
    while arguments[:1] == ["--reuse"] and len(arguments) >= 2:
        reuse.append(Path(arguments[1]))
        arguments = arguments[2:]
    for made in build(Path(sys.argv[1]).resolve(), arguments, reuse):
        print(made.name)
