"""``RandomApply``, ``RandomGrayscale``, ``RandomSolarize`` and the other
lookup-table ops (``RandomPosterize``, ``RandomAutocontrast``,
``RandomEqualize``): torchvision's arguments and defaults, one draw per item
below ``p``, PIL's arithmetic, and the native pipeline equal to the reference
over many seeds and sizes (``RandomChoice`` and ``RandomOrder`` among its
pipelines; their own rules in ``test_transforms_choice.py``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dataloader_api
from dataloader_api import DataLoader
from dataloader_api import transforms as T

Image = pytest.importorskip("PIL.Image", reason="Pillow: pip install 'dataloader-api[images]'")
from PIL import ImageEnhance, ImageOps  # noqa: E402

BACKENDS = [n for n in dataloader_api.backends() if not n.startswith("broken-")]


def noise(height: int, width: int, channels: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (height, width, channels), np.uint8)


def pil(image: np.ndarray) -> Image.Image:
    return Image.fromarray(image[:, :, 0] if image.shape[2] == 1 else image)


def array(image: Image.Image) -> np.ndarray:
    out = np.asarray(image)
    return out[:, :, None] if out.ndim == 2 else out


def test_torchvisions_defaults_and_bad_arguments_named_with_their_value():
    assert T.RandomApply([T.HFlip()]).p == 0.5
    assert T.RandomGrayscale().p == 0.1
    assert T.RandomSolarize(128).p == 0.5 and T.RandomSolarize(100.5).threshold == 100.5
    nested = T.RandomApply([T.ColorJitter(0.4, 0.4), T.RandomSolarize(7, p=1)], p=0.8)
    assert T.op_from_dict(nested.to_dict()) == nested
    assert T.Compose.from_dict(T.Compose([nested]).to_dict()) == T.Compose([nested])
    probability = "p should be a number from 0 to 1, but got p="
    finite = "should be a finite number, but got "
    flip = [T.HFlip()]
    for build, error, words in [
        (lambda: T.RandomApply(flip, p=1.5), ValueError, "RandomApply: " + probability + "1.5"),
        (lambda: T.RandomApply(flip, p="x"), ValueError, "RandomApply: p " + finite + "p='x'"),
        (lambda: T.RandomApply([]), ValueError, "at least one op, but got []"),
        (lambda: T.RandomApply(T.HFlip()), TypeError, "but got transforms=HFlip()"),
        (lambda: T.RandomApply([abs]), TypeError, "but got transforms=[<built-in function abs>]"),
        (lambda: T.RandomGrayscale(-0.1), ValueError, "RandomGrayscale: " + probability + "-0.1"),
        (lambda: T.RandomGrayscale(True), ValueError, "but got p=True"),
        (lambda: T.RandomSolarize(math.inf), ValueError, "threshold " + finite + "threshold=inf"),
        (lambda: T.RandomSolarize(9, p=2), ValueError, "RandomSolarize: " + probability + "2"),
        (lambda: T.RandomPosterize(0), ValueError, "bits should be an int from 1 to 8, but got bits=0"),  # noqa: E501
        (lambda: T.RandomPosterize(4.0), ValueError, "but got bits=4.0"),
        (lambda: T.RandomPosterize(4, p=9), ValueError, "RandomPosterize: " + probability + "9"),
        (lambda: T.RandomAutocontrast(2), ValueError, "RandomAutocontrast: " + probability + "2"),
        (lambda: T.RandomEqualize(None), ValueError, "RandomEqualize: p " + finite + "p=None"),
        (lambda: T.RandomAdjustSharpness(-1), ValueError, "sharpness_factor should be a number >= 0, but got sharpness_factor=-1"),  # noqa: E501
    ]:  # fmt: skip
        with pytest.raises(error) as raised:
            build()
        assert words in str(raised.value)


def test_random_apply_must_give_back_the_kind_it_takes():
    with pytest.raises(
        TypeError, match=r"ops\[1\]: RandomApply.*uint8 HWC, but its transforms give float32 HWC"
    ):
        T.Compose([T.ToRGB(), T.RandomApply([T.ToFloat()])])
    with pytest.raises(TypeError, match=r"RandomApply: transforms\[0\]: .*put it before ToFloat"):
        T.Compose([T.ToFloat(), T.RandomApply([T.RandomSolarize(3)])])
    with pytest.raises(TypeError, match="put Decode"):
        T.Compose([T.RandomApply([T.HFlip()]), T.Decode()], start="encoded")
    assert T.Compose([T.ToFloat(), T.RandomApply([T.Normalize(0.5, 0.2)])]).output == (
        "float32",
        "HWC",
    )


def test_random_apply_applies_its_ops_to_about_p_of_the_items_with_their_own_draws():
    image = noise(12, 9, 3)
    pipeline = T.Compose([T.RandomApply([T.RandomHFlip(p=0.5), T.RandomSolarize(0, p=1.0)], p=0.3)])
    solarized = flipped = 0
    for index in range(400):
        random = T.ItemRandom(5, index)
        applied = random.uniform() < 0.3
        flip = applied and random.uniform() < 0.5
        expected = image[:, ::-1] if flip else image
        expected = 255 - expected if applied else expected
        np.testing.assert_array_equal(pipeline(image, index=index, epoch_seed=5), expected)
        solarized, flipped = solarized + applied, flipped + flip
    assert 90 <= solarized <= 150 and 30 <= flipped <= 90


@pytest.mark.parametrize("channels", [1, 3])
def test_grayscale_and_solarize_are_pils_on_the_items_they_draw(channels):
    rng = np.random.default_rng(channels)
    drawn = 0
    for index in range(60):
        image = rng.integers(
            0, 256, (int(rng.integers(1, 20)), int(rng.integers(1, 20)), channels), np.uint8
        )
        threshold = float(rng.choice([-3, 0, 1, 77.5, 128, 255, 256]))
        gray, solarize = T.RandomGrayscale(p=0.5), T.RandomSolarize(threshold, p=0.5)
        applies = T.ItemRandom(1, index).uniform() < 0.5
        drawn += applies
        luma = array(pil(image).convert("L"))
        expected = np.repeat(luma, channels, axis=2) if applies else image
        np.testing.assert_array_equal(T.Compose([gray])(image, index=index, epoch_seed=1), expected)
        expected = array(ImageOps.solarize(pil(image), threshold)) if applies else image
        np.testing.assert_array_equal(
            T.Compose([solarize])(image, index=index, epoch_seed=1), expected
        )
    assert 15 <= drawn <= 45


@pytest.mark.parametrize("channels", [1, 3])
def test_the_table_ops_are_imageops_on_the_items_they_draw(channels):
    rng = np.random.default_rng(10 + channels)
    for index in range(80):
        shape = (int(rng.integers(1, 30)), int(rng.integers(1, 30)), channels)
        low, high = sorted(int(v) for v in rng.integers(0, 256, 2))
        image = rng.integers(low, high + 1, shape).astype(np.uint8)  # narrow ranges, flat ones
        bits = int(rng.integers(1, 9))
        for op, expected in [
            (T.RandomPosterize(bits, 0.5), ImageOps.posterize(pil(image), bits)),
            (T.RandomAutocontrast(0.5), ImageOps.autocontrast(pil(image))),
            (T.RandomEqualize(0.5), ImageOps.equalize(pil(image))),
            (
                T.RandomAdjustSharpness(bits / 2, 0.5),
                ImageEnhance.Sharpness(pil(image)).enhance(bits / 2),
            ),
        ]:
            applies = T.ItemRandom(2, index).uniform() < 0.5
            got = T.Compose([op])(image, index=index, epoch_seed=2)
            np.testing.assert_array_equal(got, array(expected) if applies else image, repr(op))


@pytest.mark.parametrize(
    "op",
    [T.RandomGrayscale(1.0), T.RandomSolarize(10, 0.0), T.RandomPosterize(3), T.RandomEqualize()],
)
def test_an_image_of_other_than_one_or_three_channels_is_refused_by_name(op):
    with pytest.raises(
        T.TransformError, match=r"item 3: .*takes an image of 1 or 3 channels.*not 4"
    ):
        T.Compose([op])(noise(5, 5, 4), index=3)


def pipelines() -> list[T.Compose]:
    jitter = T.ColorJitter(0.4, 0.4, 0.2, 0.1)
    return [
        T.Compose([T.RandomGrayscale(0.5), T.RandomSolarize(128)], on=0),
        T.Compose([T.RandomApply([jitter], p=0.8), T.RandomGrayscale(0.2),
                   T.RandomApply([T.GaussianBlur(3)], p=0.5), T.RandomSolarize(170.5, 0.2)], on=0),
        T.Compose([T.RandomAdjustSharpness(0.3), T.RandomAdjustSharpness(2.5, 0.7)], on=0),
        T.Compose([T.RandomPosterize(3), T.RandomAutocontrast(), T.RandomEqualize(),
                   T.RandomApply([T.RandomPosterize(1, 1), T.RandomEqualize(1)], 0.3)], on=0),
        T.Compose([T.RandomApply([T.RandomHFlip(), T.RandomApply([T.RandomSolarize(0, 1)], 0.5)]),
                   T.ToFloat(), T.RandomApply([T.Normalize(0.5, 0.25), T.ToCHW(), T.ToHWC()])],
                  on=0),
        T.Compose([T.RandomChoice([T.RandomSolarize(128, 1), T.RandomPosterize(2, 1), jitter,
                                   T.RandomApply([T.HFlip()])], p=[1, 2, 0, 3])], on=0),
        T.Compose([T.RandomOrder([T.RandomSolarize(100, 1), T.RandomPosterize(3, 1),
                                  T.RandomEqualize(1), T.RandomChoice([T.HFlip(), T.VFlip()])]),
                   T.ToFloat(), T.RandomOrder([T.Normalize(0.5, 0.25)])], on=0),
    ]  # fmt: skip


PIPELINES = len(pipelines())


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("which", range(PIPELINES))
def test_every_backend_gives_the_references_pixels(backend, which):
    pipeline = pipelines()[which]
    items = [(noise(9 + i, 20 - i, [1, 3][i % 2], seed=i), i) for i in range(10)]
    loader = DataLoader(items, batch_size=3, num_workers=2, backend=backend, seed=7,
                        transform=pipeline, collate_fn=list)  # fmt: skip
    reference = DataLoader(items, batch_size=3, seed=7, transform=pipeline, collate_fn=list)
    for got, expected in zip(loader, reference, strict=True):
        for (image, label), (wanted, _) in zip(got, expected, strict=True):
            np.testing.assert_array_equal(image, wanted, err_msg=f"item {label}")


@pytest.mark.skipif("rust" not in BACKENDS, reason="the rust backend is not installed")
@pytest.mark.parametrize("which", range(PIPELINES))
def test_the_native_pipeline_is_the_references_over_many_seeds_and_sizes(which):
    from dataloader_rust import _native

    pipeline = T.Compose(pipelines()[which].ops)  # the image alone, not in an item
    rng = np.random.default_rng(which)
    for index in range(150):
        shape = (int(rng.integers(3, 60)), int(rng.integers(3, 60)), int(rng.choice([1, 3])))
        image = rng.integers(0, 256, shape, np.uint8)
        seed = int(rng.integers(0, 2**63))
        native = _native.run_pipeline(pipeline.to_dict(), seed, index, image)
        assert native is not None, "the native pipeline handed the item to the reference"
        np.testing.assert_array_equal(native, pipeline(image, index=index, epoch_seed=seed))
    rgba = noise(6, 6, 4)  # refused by the reference: the native side hands it over
    assert _native.run_pipeline(T.Compose([T.RandomSolarize(3)]).to_dict(), 0, 0, rgba) is None
