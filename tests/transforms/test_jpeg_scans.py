"""A progressive JPEG with more scans than ``MAX_JPEG_SCANS`` (a decode-time
bomb: 20,000 scans took 12-13 s per decode) is an ``ImageDecodeError`` naming
the item and the count, with the reference and on every backend (the rust
backend's native decode counts them alike and leaves such a file to the
reference) (issue 49)."""

from __future__ import annotations

import io

import numpy as np
import pytest

import dataloader_api
from dataloader_api import DataLoader
from dataloader_api import transforms as T
from dataloader_api.transforms._decode import MAX_JPEG_SCANS

Image = pytest.importorskip("PIL.Image")
BACKENDS = [None, *(n for n in dataloader_api.backends() if not n.startswith("broken-"))]


def progressive(extra_scans: int) -> bytes:
    """A small progressive JPEG whose last scan is repeated ``extra_scans`` times."""
    rng = np.random.default_rng(0)
    buffer = io.BytesIO()
    pixels = rng.integers(0, 256, (24, 32, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(buffer, "JPEG", progressive=True, quality=90)
    data = buffer.getvalue()
    last = data.rindex(b"\xff\xda")
    return data[:-2] + data[last:-2] * extra_scans + b"\xff\xd9"


def test_a_few_scans_decode():
    data = progressive(0)
    assert 1 < data.count(b"\xff\xda") <= MAX_JPEG_SCANS
    assert T.Compose([T.Decode()])(data).shape == (24, 32, 3)


@pytest.mark.parametrize("backend", BACKENDS)
def test_more_scans_than_the_limit_is_a_named_error(backend):
    data = progressive(MAX_JPEG_SCANS + 100)
    loader = DataLoader(
        [data, data],
        batch_size=None,
        num_workers=0 if backend is None else 2,
        backend=backend,
        transform=T.Compose([T.Decode()]),
    )
    with pytest.raises(T.ImageDecodeError) as raised:
        list(loader)
    assert raised.value.index == 0, raised.value
    assert f"more than the {MAX_JPEG_SCANS} allowed" in str(raised.value), raised.value
