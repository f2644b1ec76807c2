"""Install from a folder of built distributions into a fresh virtual environment,
as a user would, and load an epoch on every backend (``nox -s build``), for
each interpreter given (this one when none is).

    python scripts/check_install.py DIST_DIR [PYTHON ...]

The pip command is the README's, taken from it verbatim (the ``pip install
--find-links dist`` line of its Install section; ``dist`` is DIST_DIR), with
``[rust,images]`` for ``[all]`` on a free-threaded build, as the README says
(cffi refuses it). ``--only-binary :all:`` in it means nothing is compiled
there: our native backends come as wheels, and NumPy as the newest release
with a wheel for the interpreter (2.5 has none for 3.13t). Then, from a
folder outside the checkout so that nothing is imported from the source
tree, an epoch of the same small dataset on each backend. The sdists are only
checked for being there (``build_dists.py`` makes them); no wheel is built
from them here.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from build_dists import free_threaded  # beside this script

EXPECTED_BACKENDS = ["rust", "cffi", "threads"]
README = Path(__file__).resolve().parents[1] / "README.md"


def readme_command() -> list[str]:
    """The README's install command from built distributions, as its words."""
    lines = [line for line in README.read_text().splitlines()
             if line.startswith("pip install --find-links dist ")]  # fmt: skip
    if len(set(lines)) != 1:
        raise SystemExit(f"README.md: expected one 'pip install --find-links dist' command, "
                         f"found {sorted(set(lines))}")  # fmt: skip
    words = shlex.split(lines[0])
    if '"dataloader-api[all]"' not in lines[0] or "--only-binary" not in words:
        raise SystemExit(f"README.md: the install command changed shape: {lines[0]!r}")
    return words


SMOKE = """
import sys
import dataloader_api
from dataloader_api import DataLoader

expected = sys.argv[1].split(",")
assert dataloader_api.backends() == expected, dataloader_api.backends()
for name in expected:
    loader = DataLoader(list(range(64)), batch_size=8, shuffle=True, seed=1, num_workers=2,
                        backend=name)
    items = sorted(i for batch in loader for i in batch.tolist())
    assert items == list(range(64)), (name, items)
    print(f"{name}: an epoch of 8 batches from", dataloader_api.__file__.rsplit("/", 2)[0])
# The wheels are how users get the backend: never the 2x slower JPEG decoding.
jpeg = dataloader_api.backends(details=True)["rust"]["jpeg_decoding"]
assert jpeg == "libjpeg-turbo with its SIMD kernels", jpeg
# A thread that finalization ends must hang, not unwind through Rust (3.11-3.13).
ended = dataloader_api.backends(details=True)["rust"]["threads_ended_at_exit"]
assert ended.startswith("hang"), ended
"""


def check(dist: Path, interpreters: list[str]) -> None:
    wheels = sorted(p.name for p in dist.glob("*.whl"))
    native = [w for w in wheels if not w.endswith("-none-any.whl")]
    assert native and all("manylinux" in w for w in native), wheels
    sdists = {p.name.rsplit("-", 1)[0].replace("-", "_") for p in dist.glob("*.tar.gz")}
    assert sdists >= {"dataloader_api", "dataloader_rust", "dataloader_cffi"}, sdists
    for interpreter in interpreters or [sys.executable]:
        check_one(dist, interpreter)


def check_one(dist: Path, interpreter: str) -> None:
    words, expected = readme_command(), EXPECTED_BACKENDS
    words[words.index("dist")] = str(dist)
    if free_threaded(interpreter):  # cffi refuses free-threaded builds (the README says so)
        words[words.index("dataloader-api[all]")] = "dataloader-api[rust,images]"
        expected = [b for b in EXPECTED_BACKENDS if b != "cffi"]
    with tempfile.TemporaryDirectory() as scratch:
        env = Path(scratch) / "env"
        subprocess.run([interpreter, "-m", "venv", env], check=True)
        python = env / "bin" / "python"
        assert words[:2] == ["pip", "install"], words
        print("check_install:", shlex.join(words), f"({interpreter})", flush=True)
        subprocess.run([python, "-m", *words[:2], "--quiet", *words[2:]], cwd=scratch,
                       check=True)  # fmt: skip
        subprocess.run([python, "-c", SMOKE, ",".join(expected)], cwd=scratch, check=True)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    check(Path(sys.argv[1]).resolve(), sys.argv[2:])
