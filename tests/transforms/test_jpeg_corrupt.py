"""Corrupt JPEGs decode to one result whatever the build (issue 47).

libjpeg-turbo's plain-C kernels and its SIMD ones give the same pixels on a
valid stream but not on corrupt entropy-coded data: Pillow's own libjpeg-turbo
shows it with its SIMD turned off (``JSIMD_FORCENONE=1``). libjpeg-turbo warns
on such data, and the native decoder then hands the item to the reference,
so a rust backend built with NASM or without gives Pillow's pixels."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import dataloader_api
from dataloader_api import DataLoader
from dataloader_api import transforms as T

Image = pytest.importorskip("PIL.Image", reason="Pillow: pip install 'dataloader-api[images]'")
from PIL import features  # noqa: E402

RUST = "rust" in dataloader_api.backends()


def photo(height: int, width: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([(x * 3 + y) % 256, (y * 5) % 256, (x * y) % 256], 2)
    return np.clip(base + rng.integers(0, 60, (height, width, 3)), 0, 255).astype(np.uint8)


def corrupt_set() -> list[bytes]:
    """40 JPEGs (baseline and progressive) with 1 to 5 bits flipped in their scans,
    then 10 cut short in their scans (half of them given an end marker again)."""
    files = []
    for seed in range(50):
        rng = np.random.default_rng(1000 + seed)
        buffer = io.BytesIO()
        Image.fromarray(photo(48 + seed, 64, seed)).save(
            buffer, "JPEG", quality=90, progressive=seed % 4 == 3
        )
        data = bytearray(buffer.getvalue())
        start, end = data.index(b"\xff\xda") + 20, len(data) - 2
        if seed >= 40:
            data = data[: int(rng.integers(start, end))] + (b"\xff\xd9" if seed % 2 else b"")
        for _ in range(1 + seed % 5 if seed < 40 else 0):
            data[int(rng.integers(start, end))] ^= 1 << int(rng.integers(0, 8))
        files.append(bytes(data))
    return files


def pillow(data: bytes) -> np.ndarray | str:
    try:
        return T.Compose([T.Decode()])(data)  # type: ignore[no-any-return]
    except T.ImageDecodeError as error:
        return str(error)


PILLOW_DIGESTS = """
import hashlib, io, json, sys
from PIL import Image
out = []
for data in json.load(sys.stdin):
    try:
        image = Image.open(io.BytesIO(bytes.fromhex(data)))
        image.load()
        out.append(hashlib.sha256(image.tobytes()).hexdigest())
    except Exception as error:
        out.append(type(error).__name__)
print(json.dumps(out))
"""


def pillow_digests(files: list[bytes], plain_c: bool) -> list[str]:
    env = dict(os.environ, JSIMD_FORCENONE="1" if plain_c else "0")
    done = subprocess.run(
        [sys.executable, "-c", PILLOW_DIGESTS], input=json.dumps([f.hex() for f in files]),
        env=env, capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.mark.skipif(not features.check_feature("libjpeg_turbo"), reason="Pillow without turbo")
def test_libjpeg_turbo_decodes_corrupt_data_differently_without_its_simd():
    """The documented cause: the same decoder, its SIMD kernels on or off."""
    files = corrupt_set()
    simd, plain = pillow_digests(files, False), pillow_digests(files, True)
    differ = [i for i, (a, b) in enumerate(zip(simd, plain, strict=True)) if a != b]
    assert differ, "Pillow's libjpeg-turbo gave the same pixels without SIMD: update the docs"
    if RUST:
        from dataloader_rust import _native

        record = T.Compose([T.Decode()]).to_dict()
        native = [
            i
            for i, data in enumerate(files)
            if _native.run_pipeline(record, 0, 0, data) is not None
        ]
        assert not set(differ) & set(native), "a file decoded natively differs by build"


@pytest.mark.skipif(not RUST, reason="the rust backend is not installed")
def test_the_rust_backend_decodes_a_corrupt_jpeg_as_pillow_on_any_build():
    from dataloader_rust import _native

    record = T.Compose([T.Decode()]).to_dict()
    files = corrupt_set()
    for i, data in enumerate(files):
        expected, native = pillow(data), _native.run_pipeline(record, 0, 0, data)
        if native is not None:
            assert not isinstance(expected, str), f"file {i}: Pillow raised {expected}"
            np.testing.assert_array_equal(native, expected, err_msg=f"file {i}")
    items = [(data, i) for i, data in enumerate(files)]
    pipeline = T.Compose([T.Decode()], on=0)
    for i, item in enumerate(items):
        loader = DataLoader([item], num_workers=1, backend="rust", transform=pipeline,
                            collate_fn=list)  # fmt: skip
        expected = pillow(item[0])
        if isinstance(expected, str):
            with pytest.raises(T.ImageDecodeError):
                list(loader)
        else:
            (batch,) = loader
            np.testing.assert_array_equal(batch[0][0], expected, err_msg=f"file {i}")
