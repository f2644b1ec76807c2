"""``GaussianBlur``: torchvision's arguments and draws, the reference's
separable blur, and every backend's pixels equal to it."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dataloader_api
from dataloader_api import DataLoader
from dataloader_api import transforms as T
from dataloader_api.transforms._blur import blur_sigma, gaussian_kernel

pytest.importorskip("PIL.Image", reason="Pillow: pip install 'dataloader-api[images]'")

BACKENDS = [n for n in dataloader_api.backends() if not n.startswith("broken-")]


def noise(height: int, width: int, channels: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (height, width, channels), np.uint8)


def test_arguments_as_torchvision_takes_them_and_clear_errors_for_the_rest():
    assert T.GaussianBlur(5).kernel_size == (5, 5)
    assert T.GaussianBlur((3, 7), sigma=1.5).sigma == (1.5, 1.5)
    assert T.GaussianBlur(3).sigma == (0.1, 2.0)  # torchvision's default
    op = T.GaussianBlur((9, 1), (0.5, 3))
    assert T.op_from_dict(op.to_dict()) == op
    odd = (
        r"kernel_size should be an odd int from 1 to 2\*\*31 - 1 or an \(x, y\) pair of them, "
        "but got "
    )
    positive = r"sigma should be a number > 0 or a \(low, high\) pair with 0 < low <= high"
    for bad, match in [
        ({"kernel_size": 4}, odd + "kernel_size=4"),
        ({"kernel_size": (3, 0)}, odd + r"kernel_size=\(3, 0\)"),
        ({"kernel_size": True}, odd + "kernel_size=True"),
        ({"kernel_size": 3, "sigma": 0}, positive + ", but got sigma=0"),
        ({"kernel_size": 3, "sigma": (2, 1)}, positive + r", but got sigma=\(2, 1\)"),
        ({"kernel_size": 3, "sigma": "x"}, "sigma should be a finite number, but got sigma='x'"),
    ]:  # fmt: skip
        with pytest.raises(ValueError, match=match):
            T.GaussianBlur(**bad)
    with pytest.raises(TypeError, match=r"needs a uint8 image, as PIL's: put it before ToFloat"):
        T.Compose([T.ToFloat(), T.GaussianBlur(3)])


def test_the_kernel_is_the_normalised_gaussian():
    kernel = gaussian_kernel(7, 1.3)
    expected = np.array([math.exp(-0.5 * ((i - 3) / 1.3) ** 2) for i in range(7)])
    np.testing.assert_allclose(kernel, expected / expected.sum(), rtol=1e-6)
    assert kernel.dtype == np.float32 and gaussian_kernel(1, 0.5).tolist() == [1.0]


def test_each_item_draws_its_sigma_and_blurs_with_it():
    op = T.GaussianBlur(5, (0.5, 4.0))
    sigmas = [blur_sigma(op, T.ItemRandom(2, index)) for index in range(40)]
    assert all(0.5 <= s <= 4.0 for s in sigmas) and len(set(sigmas)) == 40
    image = noise(24, 31, 3)
    blurred = T.Compose([op])(image, index=0, epoch_seed=2)
    assert blurred.shape == image.shape and blurred.dtype == np.uint8
    assert blurred.astype(float).std() < image.astype(float).std()
    flat = np.full((6, 5, 1), 77, np.uint8)
    np.testing.assert_array_equal(T.Compose([op])(flat, index=3), flat)
    # kernel 1 leaves the image as it is, whatever sigma
    np.testing.assert_array_equal(T.Compose([T.GaussianBlur(1, 3.0)])(image, index=1), image)


def test_an_image_smaller_than_the_kernels_reach_is_an_error_naming_the_item():
    blur = T.Compose([T.GaussianBlur((3, 9))])
    reach = r"item 4: GaussianBlur.*4 rows and 1 columns.*not 4x10"
    with pytest.raises(T.TransformError, match=reach):
        blur(noise(4, 10, 3), index=4)
    assert blur(noise(5, 2, 3), index=0).shape == (5, 2, 3)


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_backend_gives_the_references_pixels(backend):
    images = [noise(20 + i, 33 - i, [1, 3, 4][i % 3], seed=i) for i in range(9)]
    pipeline = T.Compose([T.GaussianBlur((5, 3), (0.2, 5.0)), T.RandomHFlip()], on=0)
    items = [(image, i) for i, image in enumerate(images)]
    loader = DataLoader(items, batch_size=4, num_workers=2, backend=backend, seed=11,
                        transform=pipeline, collate_fn=list)  # fmt: skip
    reference = DataLoader(items, batch_size=4, seed=11, transform=pipeline, collate_fn=list)
    for got, expected in zip(loader, reference, strict=True):
        for (image, label), (wanted, _) in zip(got, expected, strict=True):
            np.testing.assert_array_equal(image, wanted, err_msg=f"item {label}")
