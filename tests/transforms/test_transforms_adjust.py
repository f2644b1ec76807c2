"""``AdjustBrightness``, ``AdjustContrast``, ``AdjustSaturation``, ``AdjustHue``:
ColorJitter's adjustments with a fixed factor (what the augmentation policies
call), PIL's arithmetic, and the native pipeline equal to the reference."""

from __future__ import annotations

import numpy as np
import pytest

import dataloader_api
from dataloader_api import DataLoader
from dataloader_api import transforms as T

Image = pytest.importorskip("PIL.Image", reason="Pillow: pip install 'dataloader-api[images]'")
from PIL import ImageEnhance  # noqa: E402

BACKENDS = [n for n in dataloader_api.backends() if not n.startswith("broken-")]
OPS = (T.AdjustBrightness, T.AdjustContrast, T.AdjustSaturation, T.AdjustHue)


def ops(rng: np.random.Generator) -> list[T.Op]:
    return [op(float(rng.uniform(-0.5, 0.5) if op is T.AdjustHue else rng.uniform(0, 3)))
            for op in OPS]  # fmt: skip


def test_factors_are_checked_and_named_with_their_value():
    assert T.op_from_dict(T.AdjustHue(-0.25).to_dict()) == T.AdjustHue(-0.25)
    for build, words in [
        (lambda: T.AdjustBrightness(-0.1), "AdjustBrightness: factor should be a number >= 0, "
                                           "but got factor=-0.1"),
        (lambda: T.AdjustSaturation(float("inf")), "factor should be a finite number, but got "
                                                   "factor=inf"),
        (lambda: T.AdjustHue(0.51), "AdjustHue: factor should be a number from -0.5 to 0.5, but "
                                    "got factor=0.51"),
        (lambda: T.AdjustContrast(True), "but got factor=True"),
    ]:  # fmt: skip
        with pytest.raises(ValueError) as raised:
            build()
        assert words in str(raised.value)
    with pytest.raises(T.TransformError, match=r"item 2: AdjustContrast.*1 or 3 channels, not 4"):
        T.Compose([T.AdjustContrast(0.5)])(np.zeros((3, 3, 4), np.uint8), index=2)


def test_brightness_contrast_and_saturation_are_image_enhances():
    rng = np.random.default_rng(3)
    for _ in range(30):
        image = rng.integers(0, 256, (int(rng.integers(1, 30)), 11, 3), np.uint8)
        factor = float(rng.uniform(0, 3))
        for op, enhancer in [(T.AdjustBrightness, ImageEnhance.Brightness),
                             (T.AdjustContrast, ImageEnhance.Contrast),
                             (T.AdjustSaturation, ImageEnhance.Color)]:  # fmt: skip
            expected = np.asarray(enhancer(Image.fromarray(image)).enhance(factor))
            np.testing.assert_array_equal(T.Compose([op(factor)])(image), expected)


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_backend_gives_the_references_pixels(backend):
    rng = np.random.default_rng(4)
    items = [(rng.integers(0, 256, (7 + i, 13, [1, 3][i % 2]), np.uint8), i) for i in range(8)]
    pipeline = T.Compose(ops(rng), on=0)
    loader = DataLoader(items, batch_size=3, num_workers=2, backend=backend, transform=pipeline,
                        collate_fn=list)  # fmt: skip
    reference = DataLoader(items, batch_size=3, transform=pipeline, collate_fn=list)
    for got, expected in zip(loader, reference, strict=True):
        for (image, label), (wanted, _) in zip(got, expected, strict=True):
            np.testing.assert_array_equal(image, wanted, err_msg=f"item {label}")


@pytest.mark.skipif("rust" not in BACKENDS, reason="the rust backend is not installed")
def test_the_native_adjustments_are_the_references_over_many_factors_and_sizes():
    from dataloader_rust import _native

    rng = np.random.default_rng(5)
    for index in range(120):
        shape = (int(rng.integers(1, 50)), int(rng.integers(1, 50)), int(rng.choice([1, 3])))
        image = rng.integers(0, 256, shape, np.uint8)
        for op in ops(rng):
            pipeline = T.Compose([op])
            native = _native.run_pipeline(pipeline.to_dict(), 0, index, image)
            assert native is not None, f"{op} handed the item to the reference"
            np.testing.assert_array_equal(native, pipeline(image), err_msg=repr(op))
