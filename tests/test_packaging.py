"""The project as a library: one version everywhere, the threads backend inside
the core distribution, extras that name the backends, a LICENSE in each
distribution. The built wheels are installed and loaded by `nox -s build`."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import subprocess
import sys
from pathlib import Path

import dataloader_api

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
sync_version = importlib.import_module("sync_version")


def test_every_file_carries_the_one_version():
    stale = sync_version.out_of_date()
    assert not stale, f"run scripts/sync_version.py: {sorted(map(str, stale))}"
    assert dataloader_api.__version__ == sync_version.project_version()


def test_a_version_bump_reaches_every_file():
    """What sync_version writes for 0.3.2: versions and ranges in every file."""
    stale = sync_version.out_of_date("0.3.2")
    texts = {p.relative_to(ROOT).as_posix(): t for p, t in stale.items()}
    assert texts["dataloader_api/__init__.py"].count('__version__ = "0.3.2"') == 1
    assert '"dataloader-rust>=0.3.2,<0.4"' in texts["pyproject.toml"]
    for backend in ("rust", "cffi"):
        text = texts[f"backends/{backend}/pyproject.toml"]
        assert 'version = "0.3.2"' in text and '"dataloader-api>=0.3.2,<0.4"' in text
    for crate in ("dataloader-rust", "dataloader-core", "dataloader-imaging", "dataloader-netio"):
        assert f'name = "{crate}"\nversion = "0.3.2"' in texts["backends/rust/Cargo.lock"]
    assert sync_version.compatible_range("1.4.0") == ">=1.4.0,<2"


def test_the_core_distribution_brings_the_threads_backend():
    dist = importlib.metadata.distribution("dataloader-api")
    assert dist.version == dataloader_api.__version__
    threads = [e for e in dist.entry_points if e.group == "dataloader_api.backends"]
    assert [(e.name, e.value) for e in threads] == [
        ("threads", "dataloader_threads:ThreadsBackend")
    ]
    assert "threads" in dataloader_api.backends()


def test_extras_name_the_backends_in_the_compatible_range():
    from packaging.requirements import Requirement  # pytest's own dependency
    from packaging.specifiers import SpecifierSet

    requires = [Requirement(r) for r in importlib.metadata.requires("dataloader-api") or []]
    spec = SpecifierSet(sync_version.compatible_range(dataloader_api.__version__))
    for extra, names in (("rust", {"rust"}), ("cffi", {"cffi"}), ("all", {"rust", "cffi"})):
        chosen = [r for r in requires if r.marker and r.marker.evaluate({"extra": extra})]
        backends = [r for r in chosen if r.name.startswith("dataloader-")]
        assert {r.name for r in backends} == {f"dataloader-{n}" for n in names}, extra
        assert all(r.specifier == spec for r in backends), backends
    # The transforms' reference execution needs Pillow: [images], and [all] too.
    for extra in ("images", "all"):
        chosen = [r for r in requires if r.marker and r.marker.evaluate({"extra": extra})]
        assert "pillow" in {r.name.lower() for r in chosen}, extra


def test_each_distribution_ships_the_license():
    license_text = (ROOT / "LICENSE").read_text()
    assert license_text.startswith("MIT License")
    for backend in ("rust", "cffi"):
        assert (ROOT / "backends" / backend / "LICENSE").read_text() == license_text


def test_import_leaves_what_the_user_did_not_ask_for():
    """NumPy (the default collate's), asyncio (async datasets), entry points and the
    backend kit (the first loader with workers), multiprocessing and torch: none at
    import time."""
    code = (
        "import sys, dataloader_api; "
        "print(sorted(m for m in ('numpy', 'asyncio', 'importlib.metadata', "
        "'multiprocessing', 'torch', 'dataloader_api.kit') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    # ... and a first epoch still works, importing what it needs then.
    code = "import dataloader_api as d; print(list(d.DataLoader(range(4), batch_size=2))[1])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[2 3]"
