"""What the nox sessions install and start: the project with its backends (the
rust one with libjpeg-turbo's SIMD when NASM can be had), the test suites'
dependencies, moto's S3 server, and the conformance runs; for noxfile.py."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import nox
from nox.command import CommandFailed

__all__ = [
    "BACKENDS",
    "CFFI",
    "CFFI_REFUSES",
    "PARALLEL",
    "RUST",
    "TEST_DEPS",
    "WHEELS",
    "backend_wheel",
    "bench_peers",
    "cargo_target_dir",
    "install_project",
    "install_suite",
    "installed_backends",
    "run_conformance",
    "rust_build_env",
    "s3_server_env",
]

ROOT = Path(__file__).parents[1]
NASM = ROOT / "scripts" / "provision-nasm.sh"
MOTO = ROOT / "scripts" / "provision-moto.sh"
# The threads backend ships inside the dataloader-api distribution (ROOT).
BACKENDS = [ROOT / "backends" / "rust", ROOT / "backends" / "cffi"]
RUST = ROOT / "backends" / "rust"
CFFI = ROOT / "backends" / "cffi"
# cffi 2.x builds for free-threaded CPython only from 3.14t on.
CFFI_REFUSES = {"3.13t": "cffi 2.x does not support free-threaded CPython 3.13t (3.14t+ only)"}
# pytest-xdist: the suites run on the machine's cores (PARALLEL), two at most on CI's.
TEST_DEPS = ["pytest>=8", "pytest-xdist>=3.6"]
#: pytest's options that spread a suite over the cores (at most 4 processes: each
#: test starts threads of its own, and more processes only add load).
PARALLEL = ["-n", str(min(os.cpu_count() or 1, 4))] if (os.cpu_count() or 1) > 1 else []
# Hypothesis 6.156+ builds a pyo3 extension that cannot build for 3.13t; this
# range has pure-Python wheels for every interpreter of the matrix.
CONFORMANCE_DEPS = [
    *TEST_DEPS,
    "pytest-timeout>=2.3",
    "hypothesis>=6.100,<6.156",
    "tqdm",  # tests/features/test_stats.py: the progress bar's total
    "pillow>=10.1",  # the transforms' reference execution (the [images] extra)
    "boto3",  # tests/io/test_io_object_store.py: uploads the objects, checks our signatures
]
BROKEN_BACKENDS = ROOT / "conformance" / "broken"
# The backend guide's example, checked like any out-of-tree backend.
EXAMPLE_BACKEND = ROOT / "docs" / "example_backend"
EXAMPLE_BACKEND_NAME = "minimal"


_NASM: list[str] = []  # the folder holding nasm, once found or provisioned ("" if none)
# Wheels of the backends, built once per interpreter and source: a session after
# the first installs the same wheel instead of compiling the backend again.
WHEELS = ROOT / ".nox" / "_wheels"
# What a backend's folder holds that is not its source.
_NOT_SOURCE = {"target", "build", "__pycache__", ".pytest_cache"}


# Cargo's build folders live in the user's cache, not in the clone: a fresh clone
# (CI's) compiles only our crates, not the ~200 crates they use again (about 3 of
# CI's minutes in the first test session and in lint). Cargo locks a folder while
# it builds in it, so two checkouts can share it.
CARGO_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "dataloader-api"
#: past this size the folders are emptied once: each clone adds its own crates' objects
CARGO_CACHE_LIMIT = 6 << 30
_SIZE_CHECKED: list[bool] = []  # once per nox run


def cargo_target_dir(purpose: str) -> Path:
    """The cargo target folder for one kind of build (``nox-simd``, ``nox-plain-c``,
    ``lint``), in the user's cache (``$XDG_CACHE_HOME``, else ``~/.cache``)."""
    root = CARGO_CACHE / "cargo-target"
    if root.is_dir() and not _SIZE_CHECKED:
        _SIZE_CHECKED.append(True)
        size = sum(f.stat().st_size for f in root.rglob("*") if f.is_file() and not f.is_symlink())
        if size > CARGO_CACHE_LIMIT:
            shutil.rmtree(root, ignore_errors=True)
    return root / purpose


def rust_build_env(session: nox.Session, simd: bool | None = None) -> dict[str, str]:
    """What pip's build of the rust backend gets: NASM on PATH, for libjpeg-turbo's
    SIMD kernels (the crate's default ``simd`` feature), when NASM is found or can
    be unpacked from the machine's Debian mirror (scripts/provision-nasm.sh);
    else none, and the build warns that JPEG decoding runs in plain C.

    Each choice builds in a cargo target folder of its own: mozjpeg-sys looks for
    NASM only when its build script runs, and cargo does not rerun it when PATH
    changes, so a plain-C libjpeg-turbo left in a shared target folder would be
    linked into a build that found NASM. ``DATALOADER_EXPECT_JPEG_SIMD`` (1 or 0)
    keys the wheel cache on the choice and tells the tests what the build must be.

    ``simd=False`` builds plain C whatever is found (the crate's default features
    off), to compare the two builds' pixels (``nox -s jpeg_plain_c``)."""
    if simd is False:
        return {
            "DATALOADER_EXPECT_JPEG_SIMD": "0",
            "CARGO_TARGET_DIR": str(cargo_target_dir("nox-plain-c")),
            "MATURIN_PEP517_ARGS": "--no-default-features",
        }
    if not _NASM:
        try:
            found = session.run("bash", str(NASM), external=True, silent=True)
            _NASM.append(str(found).strip().splitlines()[-1])
        except CommandFailed:
            session.log("no NASM: the rust backend's JPEG decoding is built without SIMD")
            _NASM.append("")
    simd = bool(_NASM[0])
    env = {
        "DATALOADER_EXPECT_JPEG_SIMD": str(int(simd)),
        "CARGO_TARGET_DIR": str(cargo_target_dir("nox-simd" if simd else "nox-plain-c")),
    }
    if simd:
        env["PATH"] = f"{_NASM[0]}{os.pathsep}{os.environ.get('PATH', '')}"
    return env


def install_project(session: nox.Session, *extra: str, simd: bool | None = None) -> None:
    """The common API, every shipped backend, and ``extra`` (``simd``: see
    ``rust_build_env``)."""
    pins = []
    if session.python == "3.13t":
        # NumPy 2.5 ships no cp313t wheels; 2.4 does, so pip need not build it.
        pins.append("numpy<2.5")
    backends = [b for b in BACKENDS if not (b == CFFI and session.python in CFFI_REFUSES)]
    if session.python in CFFI_REFUSES:
        session.log(f"skipping the cffi backend: {CFFI_REFUSES[str(session.python)]}")
    wheels = [backend_wheel(session, b, simd) for b in backends]
    session.install(str(ROOT), *wheels, *pins, *extra)


def _source_digest(folder: Path, build_env: dict[str, str]) -> str:
    # The build's choices are part of the key: the same source with and without
    # NASM's SIMD kernels are two wheels.
    choices = [build_env.get(k, "") for k in ("MATURIN_PEP517_ARGS", "DATALOADER_EXPECT_JPEG_SIMD")]
    digest = hashlib.sha256("\0".join(choices).encode())
    for path in sorted(folder.rglob("*")):
        parts = path.relative_to(folder).parts
        if path.is_dir() or _NOT_SOURCE & set(parts) or parts[0].endswith(".egg-info"):
            continue
        if path.suffix in (".so", ".pyc"):
            continue
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def backend_wheel(session: nox.Session, folder: Path, simd: bool | None = None) -> str:
    """A wheel of the backend in ``folder`` for this session's interpreter, built
    once per source (the rust one with NASM's SIMD when it can be had)."""
    build_env = rust_build_env(session, simd) if folder == RUST else {}
    out = WHEELS / f"{folder.name}-{session.python}-{_source_digest(folder, build_env)}"
    wheels = sorted(out.glob("*.whl"))
    if not wheels:
        session.run(
            "python", "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(folder),
            env=build_env,
        )  # fmt: skip
        wheels = sorted(out.glob("*.whl"))
    return str(wheels[-1])


def built_rust_wheels(session: nox.Session) -> list[Path]:
    """The folders of rust wheels ``backend_wheel`` built from the current source,
    one per interpreter that had a session."""
    digest = _source_digest(RUST, rust_build_env(session))
    return sorted(WHEELS.glob(f"{RUST.name}-*-{digest}"))


def install_suite(session: nox.Session) -> None:
    """The project plus what the unit tests and the conformance suite need."""
    extra = os.environ.get("DATALOADER_EXTRA_BACKENDS", "").split()
    if session.python in ("3.11", "3.12", "3.13"):
        # The async tests run on uvloop where it has wheels (not free-threaded builds);
        # the LMDB recipe's test on lmdb likewise (its 3.13t release needs cffi).
        extra += ["uvloop", "lmdb"]
    install_project(session, *CONFORMANCE_DEPS, str(BROKEN_BACKENDS), str(EXAMPLE_BACKEND), *extra)


def s3_server_env(session: nox.Session) -> dict[str, str]:
    """$DATALOADER_S3_SERVER for the object-store tests: moto's server, in a venv of
    its own (scripts/provision-moto.sh); the tests start it on loopback."""
    found = session.run("bash", str(MOTO), external=True, silent=True)
    return {"DATALOADER_S3_SERVER": str(found).strip().splitlines()[-1]}


def installed_backends(session: nox.Session) -> list[str]:
    listed = session.run(
        "python", "-c", "import dataloader_api as d; print(*d.backends())", silent=True
    )
    return str(listed).split()


def run_conformance(
    session: nox.Session, profile: str, pytest_args: list[str], check_broken: bool
) -> None:
    """The suite for ``--backend`` in ``pytest_args``, else $DATALOADER_BACKEND, else
    every installed backend but the broken fixtures, which it then proves it catches
    (with ``check_broken``: on one interpreter, which also runs the guide's example)."""
    options = [
        "--conformance-profile",
        profile,
        "--timeout",
        "600" if profile == "thorough" else "120",
    ]
    chosen = os.environ.get("DATALOADER_BACKEND")
    if "--backend" in pytest_args or chosen:
        session.run("pytest", "-q", *PARALLEL, "conformance", *options, *pytest_args)
        return
    for name in [n for n in installed_backends(session) if not n.startswith("broken-")]:
        if name == EXAMPLE_BACKEND_NAME and not check_broken:
            continue  # the guide's example, pure Python: proven on one interpreter
        session.log(f"conformance: backend {name}")
        session.run(
            "pytest", "-q", *PARALLEL, "conformance", "--backend", name, *options, *pytest_args
        )
    if check_broken:
        # Each broken fixture fails the property it breaks: the suite catches what it claims.
        session.run("pytest", "-q", "conformance/check_broken_backends.py", "--timeout", "900")


def bench_peers(version: str) -> list[str]:
    """The peers `nox -s bench` installs on CPython ``version`` ("3.13t"): where each
    has wheels (PyPI, 2026-12). SPDL's is pure Python; torch 2.15 has cp311-cp314 and
    cp314t, dataloader-rs 0.2.0 cp313, cp314 and cp314t, Grain GIL builds only. So
    3.13t gets SPDL alone."""
    free_threaded, minor = version.endswith("t"), version.rstrip("t")
    peers = ["spdl"]
    if not free_threaded or minor >= "3.14":
        peers.append("torch")  # its PyPI wheels bring CUDA (about 5 GiB)
    if minor >= "3.13" and (not free_threaded or minor >= "3.14"):
        peers.append("dataloader-rs")
    if not free_threaded:
        peers.append("webdataset")  # workload 14's peer (its pyyaml: GIL builds' wheels)
        peers.append("grain")
        # Workload 9's source photos; on 3.13t its scipy would need a Fortran
        # build (with numpy<2.5), so photos.py generates scenes there.
        peers.append("scikit-image")
    return peers
