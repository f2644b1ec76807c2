"""Backend discovery and selection."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys

import pytest

import dataloader_api
from dataloader_api import DataLoader, backends, resolve_backend
from dataloader_api._common import backend_registry as registry


def test_installed_backends_are_listed_fastest_first():
    names = backends()
    assert "threads" in names
    ranked = [n for n in registry.PREFERENCE if n in names]
    assert names[: len(ranked)] == ranked


def test_default_is_the_first_installed(monkeypatch):
    monkeypatch.delenv("DATALOADER_BACKEND", raising=False)
    assert resolve_backend().name == backends()[0]


def test_environment_variable_selects(monkeypatch):
    monkeypatch.setenv("DATALOADER_BACKEND", "threads")
    assert resolve_backend().name == "threads"
    monkeypatch.setenv("DATALOADER_BACKEND", "nope")
    with pytest.raises(
        ValueError, match=r"DATALOADER_BACKEND='nope' is not an installed .*'threads'"
    ):
        resolve_backend()


def test_argument_wins_over_environment(monkeypatch):
    monkeypatch.setenv("DATALOADER_BACKEND", "nope")
    assert DataLoader([1], num_workers=1, backend="threads").backend_name == "threads"


def test_cffi_asked_for_on_a_free_threaded_build_says_why_it_is_absent(monkeypatch):
    """On 3.13t, where cffi cannot be installed, the error says so (issue 48)."""
    monkeypatch.setattr(registry, "_entry_points", lambda rescan=False: {})
    monkeypatch.setattr(registry, "_loaded", {})  # as if cffi had never been loaded
    monkeypatch.setattr(registry, "free_threaded_build", lambda: True)
    monkeypatch.setenv("DATALOADER_BACKEND", "cffi")
    with pytest.raises(ValueError, match=r"'cffi' is not .*free-threaded build: cffi does not"):
        resolve_backend()
    monkeypatch.setattr(registry, "free_threaded_build", lambda: False)
    with pytest.raises(ValueError, match=r"installed backends: none$"):
        resolve_backend()


def test_unknown_backend_lists_installed(monkeypatch):
    with pytest.raises(
        ValueError, match=r"backend='cuda' is not an installed .*installed backends:"
    ):
        DataLoader([1], num_workers=1, backend="cuda")


def test_no_backend_installed_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("DATALOADER_BACKEND", raising=False)
    monkeypatch.setattr(registry, "_entry_points", lambda rescan=False: {})
    monkeypatch.setattr(registry, "_loaded", {})  # as if cffi had never been loaded
    with pytest.raises(RuntimeError, match="no dataloader_api backend is installed"):
        resolve_backend()
    # loading on the calling thread needs no backend
    assert [b.tolist() for b in DataLoader([1, 2], batch_size=2)] == [[1, 2]]


def test_an_entry_point_that_is_not_a_backend_is_rejected(monkeypatch):
    fake = importlib.metadata.EntryPoint("fake", "builtins:dict", registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr(registry, "_entry_points", lambda rescan=False: {"fake": fake})
    with pytest.raises(TypeError, match=r"does not implement dataloader_api\.contract\.Backend"):
        resolve_backend("fake")


def test_details_say_what_each_build_is(monkeypatch):
    details = backends(details=True)
    assert list(details) == backends()
    assert details["threads"] == {}  # no contract.Describes: nothing to say
    if "rust" in details:
        from dataloader_rust import _native

        jpeg = details["rust"]["jpeg_decoding"]
        assert ("with its SIMD kernels" in jpeg) == _native.JPEG_SIMD, jpeg
        # a build that asked for SIMD and missed it names NASM; one that chose plain C not
        assert _native.JPEG_SIMD or ("NASM" in jpeg) == _native.JPEG_SIMD_FEATURE, jpeg
        # The nox sessions say what their build found (scripts/nox_install.py): a
        # wheel cached or a libjpeg-turbo built without NASM is caught here.
        expected = os.environ.get("DATALOADER_EXPECT_JPEG_SIMD")
        if expected is not None:
            built_with_simd = _native.JPEG_SIMD
            assert built_with_simd == (expected == "1"), f"{jpeg}; expected SIMD={expected}"
    broken = importlib.metadata.EntryPoint("fake", "builtins:dict", registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr(registry, "_entry_points", lambda rescan=False: {"fake": broken})
    assert backends(details=True)["fake"]["error"].startswith("TypeError: backend 'fake'")
    with pytest.raises(
        TypeError, match=r"backends: details should be a bool, but got details='yes'"
    ):
        backends(details="yes")  # type: ignore[call-overload]


@pytest.mark.skipif("rust" not in backends(), reason="the rust backend is not installed")
def test_rust_built_without_nasm_warns_once_when_it_first_decodes():
    """A source build without NASM decodes JPEG about 2x slower: pip hides the
    build's warning, so the first decode warns (and a SIMD build never does, nor one
    with the ``simd`` feature off: plain C was chosen, as by ``nox -s jpeg_plain_c``)."""
    script = """
import io, warnings
import numpy as np
from PIL import Image
from dataloader_api import DataLoader, transforms as T
from dataloader_rust import _native
buffer = io.BytesIO()
Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(buffer, "JPEG")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for _ in range(2):
        list(DataLoader([buffer.getvalue()] * 4, batch_size=2, num_workers=2, backend="rust",
                        transform=T.Compose([T.Decode()]), collate_fn=list))
nasm = [w for w in caught if "built without NASM" in str(w.message)]
missed = _native.JPEG_SIMD_FEATURE and not _native.JPEG_SIMD
assert len(nasm) == (1 if missed else 0), [str(w.message) for w in caught]
assert all(w.category is RuntimeWarning for w in nasm)
"""
    pytest.importorskip("PIL.Image")
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)


def test_public_api_is_exported():
    for name in dataloader_api.__all__:
        assert hasattr(dataloader_api, name), name


def test_backends_are_scanned_once_and_loaded_once(monkeypatch):
    scans = []
    real = importlib.metadata.entry_points
    monkeypatch.setattr(
        importlib.metadata, "entry_points", lambda **kw: scans.append(1) or real(**kw)
    )
    monkeypatch.setattr(registry, "_scanned", None)
    monkeypatch.setattr(registry, "_loaded", {})
    first = resolve_backend("threads")
    assert resolve_backend("threads") is first
    assert len(scans) == 1
    with pytest.raises(ValueError, match="installed backends:"):
        resolve_backend("not-installed")  # rescans before giving up
    assert len(scans) >= 2


def test_a_bad_exit_timeout_is_named_when_a_backend_loads():
    code = "import dataloader_api.kit"
    env = {**os.environ, "DATALOADER_EXIT_TIMEOUT": "soon"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert result.returncode == 1
    assert "DATALOADER_EXIT_TIMEOUT='soon' should be a number of seconds >= 0" in result.stderr
