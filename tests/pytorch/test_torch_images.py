"""Image batches reach torch without a copy: ``torch.from_dlpack`` on a batch of
``ImageCollate``, and on an image the rust backend made natively, shares its
memory (skipped where torch is not installed; `nox -s torch_parity`)."""

from __future__ import annotations

import gc
import io

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed; run `nox -s torch_parity`")
Image = pytest.importorskip("PIL.Image", reason="Pillow: pip install 'dataloader-api[images]'")

import dataloader_api  # noqa: E402
from dataloader_api import DataLoader  # noqa: E402
from dataloader_api import transforms as T  # noqa: E402

BACKENDS = [b for b in ("rust", "threads") if b in dataloader_api.backends()]


def jpegs(count: int) -> list[tuple[bytes, int]]:
    rng = np.random.default_rng(0)
    items = []
    for label in range(count):
        buffer = io.BytesIO()
        Image.fromarray(rng.integers(0, 256, (48, 64, 3), np.uint8)).save(buffer, "JPEG")
        items.append((buffer.getvalue(), label))
    return items


PIPELINE = T.Compose([T.Decode(), T.RandomResizedCrop(32), T.ToFloat(), T.ToCHW()], on=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_from_dlpack_shares_an_image_batch(backend):
    loader = DataLoader(jpegs(8), batch_size=4, num_workers=2, backend=backend, seed=0,
                        transform=PIPELINE, collate_fn=T.ImageCollate(on=0))  # fmt: skip
    images, labels = next(iter(loader))
    tensor = torch.from_dlpack(images)
    assert tensor.shape == (4, 3, 32, 32) and tensor.dtype == torch.float32
    assert tensor.data_ptr() == images.ctypes.data  # the same memory, not a copy
    tensor[0, 0, 0, 0] = 7.0
    assert images[0, 0, 0, 0] == 7.0
    assert torch.as_tensor(images).data_ptr() == images.ctypes.data
    assert labels.tolist() == [0, 1, 2, 3]


@pytest.mark.skipif("rust" not in BACKENDS, reason="the rust backend is not installed")
def test_from_dlpack_shares_a_native_image_after_the_loader_is_gone():
    loader = DataLoader(jpegs(2), batch_size=2, num_workers=1, backend="rust",
                        transform=PIPELINE, collate_fn=list)  # fmt: skip
    image = next(iter(loader))[0][0]
    del loader
    gc.collect()
    tensor = torch.from_dlpack(image)
    assert type(image.base.obj).__name__ == "PixelBuffer"  # made natively
    assert tensor.data_ptr() == image.ctypes.data
    tensor.mul_(2)
    np.testing.assert_array_equal(image, tensor.numpy())
