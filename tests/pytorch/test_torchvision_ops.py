"""The reference's ops against torchvision v2 on PIL images, for the same
parameters: the same pixels (skipped without torchvision; ``nox -s torch_parity``).
Native backends equal the reference (conformance property 10)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

F = pytest.importorskip(
    "torchvision.transforms.v2.functional", reason="torchvision: run `nox -s torch_parity`"
)
Image = pytest.importorskip("PIL.Image", reason="Pillow: pip install 'dataloader-api[images]'")

from torchvision.transforms import InterpolationMode, v2  # noqa: E402

from dataloader_api import transforms as T  # noqa: E402
from dataloader_api.transforms._blur import blur_sigma  # noqa: E402
from dataloader_api.transforms._color import jitter_params  # noqa: E402
from dataloader_api.transforms._reference import erasing_params, random_crop_box  # noqa: E402

PILLOW_13 = tuple(int(part) for part in Image.__version__.split(".")[:2]) >= (13, 0)


def pil(image: np.ndarray) -> Image.Image:
    return Image.fromarray(image[:, :, 0] if image.shape[2] == 1 else image)


def array(image: Image.Image) -> np.ndarray:
    out = np.asarray(image)
    return out[:, :, None] if out.ndim == 2 else out


@pytest.mark.parametrize("mode", T.PADDING_MODES)
@pytest.mark.parametrize("channels", [1, 3])
def test_random_crop_equals_torchvisions_pad_then_crop(mode, channels):
    rng = np.random.default_rng(1)
    for index in range(30):
        height, width = (int(v) for v in rng.integers(1, 12, 2))
        padding = [int(v) for v in rng.integers(0, 9, 4)]
        size = (int(rng.integers(1, 16)), int(rng.integers(1, 16)))
        fill = int(rng.integers(0, 256))
        op = T.RandomCrop(size, padding, pad_if_needed=True, fill=fill, padding_mode=mode)
        image = rng.integers(0, 256, (height, width, channels), np.uint8)
        box = random_crop_box(op, T.ItemRandom(5, index), height, width)
        assert box is not None
        (left, top, right, bottom), crop_top, crop_left = box
        padded = F.pad(pil(image), [left, top, right, bottom], fill=fill, padding_mode=mode)
        expected = array(F.crop(padded, crop_top, crop_left, *size))
        got = T.Compose([op])(image, index=index, epoch_seed=5)
        np.testing.assert_array_equal(got, expected, err_msg=f"{op} on {image.shape}")


@pytest.mark.parametrize("padding", [3, (1, 2), (1, 2, 3, 4)], ids=["int", "pair", "four"])
def test_random_crop_reads_paddings_as_torchvision(padding):
    """With the crop as large as the padded image there is nothing to draw:
    torchvision's ``RandomCrop`` and ours give the whole padded image."""
    image = np.random.default_rng(2).integers(0, 256, (5, 7, 3), np.uint8)
    left, top, right, bottom = T.RandomCrop(1, padding).padding  # type: ignore[misc]
    size = (5 + top + bottom, 7 + left + right)
    theirs = array(v2.RandomCrop(size, padding=padding, fill=9)(pil(image)))
    ours = T.Compose([T.RandomCrop(size, padding=padding, fill=9)])(image)
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.skipif(not PILLOW_13, reason="Pillow 13 set the pass order the reference follows")
@pytest.mark.parametrize("interpolation", T.INTERPOLATIONS)
def test_resize_equals_torchvisions_resize_on_pil(interpolation):
    rng = np.random.default_rng(3)
    mode = getattr(InterpolationMode, interpolation.upper())
    for _ in range(20):
        height, width, out_h, out_w = (int(v) for v in rng.integers(2, 60, 4))
        image = rng.integers(0, 256, (height, width, 3), np.uint8)
        expected = array(F.resize(pil(image), [out_h, out_w], interpolation=mode))
        got = T.Compose([T.Resize((out_h, out_w), interpolation)])(image)
        np.testing.assert_array_equal(got, expected, err_msg=f"{image.shape} -> {out_h}x{out_w}")


@pytest.mark.parametrize("value", [0, (0.5, -1.0, 2.0), "random"])
def test_random_erasing_equals_torchvisions_erase(value):
    """Our draws, torchvision's erase: the same image for the same box and values."""
    torch = pytest.importorskip("torch")
    op = T.RandomErasing(p=1, value=value)
    pipeline = T.Compose([T.ToFloat(), T.ToCHW(), T.Normalize(0.5, 0.25), op])
    image = np.random.default_rng(4).integers(0, 256, (24, 32, 3), np.uint8)
    before = T.Compose([T.ToFloat(), T.ToCHW(), T.Normalize(0.5, 0.25)])(image)
    for index in range(20):
        params = erasing_params(op, T.ItemRandom(2, index), 3, 24, 32)
        assert params is not None
        top, left, h, w, values = params
        expected = F.erase(
            torch.from_numpy(before.copy()), top, left, h, w, torch.as_tensor(values)
        )
        got = pipeline(image, index=index, epoch_seed=2)
        np.testing.assert_array_equal(got, expected.numpy())


@pytest.mark.parametrize("channels", [1, 3])
def test_color_jitter_equals_torchvisions_adjustments_on_pil(channels):
    """Our order and factors, torchvision's ``adjust_*`` on PIL in that order."""
    op = T.ColorJitter(brightness=(0.2, 2.5), contrast=(0.2, 2.5), saturation=(0, 2.5), hue=0.5)
    adjust = [F.adjust_brightness, F.adjust_contrast, F.adjust_saturation, F.adjust_hue]
    rng = np.random.default_rng(6)
    for index in range(40):
        image = rng.integers(0, 256, (int(rng.integers(1, 30)), 17, channels), np.uint8)
        order, factors = jitter_params(op, T.ItemRandom(3, index))
        expected = pil(image)
        for step in order:
            expected = adjust[step](expected, factors[step])
        got = T.Compose([op])(image, index=index, epoch_seed=3)
        np.testing.assert_array_equal(got, array(expected), err_msg=f"{order} {factors}")


@pytest.mark.parametrize("channels", [1, 3])
def test_gaussian_blur_is_torchvisions_within_one(channels):
    """torchvision convolves with the 2-D kernel, ours in two passes: the same
    blur, summed in another order, so a pixel may round the other way."""
    rng = np.random.default_rng(8)
    differing = total = 0
    for index in range(60):
        height, width = (int(v) for v in rng.integers(6, 40, 2))
        size = (int(rng.choice([1, 3, 5, 7])), int(rng.choice([1, 3, 5])))
        op = T.GaussianBlur(size, (0.1, 5.0))
        image = rng.integers(0, 256, (height, width, channels), np.uint8)
        sigma = blur_sigma(op, T.ItemRandom(4, index))
        expected = array(F.gaussian_blur(pil(image), list(size), [sigma, sigma]))
        got = T.Compose([op])(image, index=index, epoch_seed=4)
        assert np.abs(got.astype(int) - expected).max() <= 1, f"{op} sigma={sigma}"
        differing += int((got != expected).sum())
        total += got.size
    assert differing <= total // 1000


def test_the_apply_ops_take_torchvisions_defaults_and_refuse_its_bad_p():
    assert T.RandomGrayscale().p == v2.RandomGrayscale().p
    assert T.RandomSolarize(128).p == v2.RandomSolarize(128).p
    assert T.RandomApply([T.HFlip()]).p == v2.RandomApply([v2.RandomHorizontalFlip(1)]).p
    for p in (-0.5, 1.5):
        with pytest.raises(ValueError):
            v2.RandomGrayscale(p)
        with pytest.raises(ValueError, match=f"p should be a number from 0 to 1, but got p={p}"):
            T.RandomGrayscale(p)


@pytest.mark.parametrize("channels", [1, 3])
def test_grayscale_solarize_and_random_apply_equal_torchvision_on_pil(channels):
    """Whether an item draws its op is ours (ItemRandom, below p); what the op
    then does is torchvision's: p=1 there and here, over many seeds and sizes."""
    rng = np.random.default_rng(9)
    for index in range(60):
        shape = (int(rng.integers(1, 40)), int(rng.integers(1, 40)), channels)
        image = rng.integers(0, 256, shape, np.uint8)
        threshold = float(rng.choice([-1, 0, 1, 64, 127.5, 128, 200, 255, 300]))
        for ours, theirs in [
            (T.RandomGrayscale(1.0), v2.RandomGrayscale(1.0)),
            (T.RandomSolarize(threshold, p=1.0), v2.RandomSolarize(threshold, p=1.0)),
            (T.RandomApply([T.RandomSolarize(threshold, 1.0), T.HFlip()], p=1.0),
             v2.RandomApply([v2.RandomSolarize(threshold, 1.0), v2.RandomHorizontalFlip(1)], 1.0)),
        ]:  # fmt: skip
            got = T.Compose([ours])(image, index=index, epoch_seed=int(rng.integers(0, 2**32)))
            np.testing.assert_array_equal(got, array(theirs(pil(image))), err_msg=repr(ours))
        for ours in (T.RandomGrayscale(0.0), T.RandomApply([T.HFlip()], p=0.0)):
            np.testing.assert_array_equal(T.Compose([ours])(image, index=index), image)


def test_simclrs_blur_under_random_apply_is_torchvisions_within_one():
    """``RandomApply([GaussianBlur(k)], p)``: applied or not as the item draws,
    the blur within 1 of torchvision's (the 2-D kernel's summing order)."""
    rng = np.random.default_rng(10)
    op = T.RandomApply([T.GaussianBlur(5, (0.1, 2.0))], p=0.5)
    applied = 0
    for index in range(40):
        image = rng.integers(0, 256, (int(rng.integers(6, 40)), 23, 3), np.uint8)
        random = T.ItemRandom(12, index)
        if random.uniform() < 0.5:
            sigma = blur_sigma(op.transforms[0], random)
            expected = array(F.gaussian_blur(pil(image), [5, 5], [sigma, sigma]))
            applied += 1
        else:
            expected = image
        got = T.Compose([op])(image, index=index, epoch_seed=12)
        assert np.abs(got.astype(int) - expected).max() <= 1
    assert 10 <= applied <= 30


@pytest.mark.parametrize("channels", [1, 3])
def test_posterize_autocontrast_equalize_and_sharpness_equal_torchvision_on_pil(channels):
    rng = np.random.default_rng(11)
    for index in range(60):
        shape = (int(rng.integers(1, 40)), int(rng.integers(1, 40)), channels)
        low, high = sorted(int(v) for v in rng.integers(0, 256, 2))
        image = rng.integers(low, high + 1, shape).astype(np.uint8)
        bits = int(rng.integers(1, 9))
        for ours, theirs in [
            (T.RandomPosterize(bits, p=1.0), v2.RandomPosterize(bits, p=1.0)),
            (T.RandomAutocontrast(p=1.0), v2.RandomAutocontrast(p=1.0)),
            (T.RandomEqualize(p=1.0), v2.RandomEqualize(p=1.0)),
            (T.RandomAdjustSharpness(bits / 3, 1.0), v2.RandomAdjustSharpness(bits / 3, 1.0)),
        ]:
            got = T.Compose([ours])(image, index=index)
            np.testing.assert_array_equal(got, array(theirs(pil(image))), err_msg=repr(ours))
    assert T.RandomPosterize(2).p == v2.RandomPosterize(2).p
    assert T.RandomAutocontrast().p == v2.RandomAutocontrast().p == T.RandomEqualize().p


@pytest.mark.parametrize("channels", [1, 3])
def test_the_adjustments_equal_torchvisions_adjust_functions_on_pil(channels):
    functions = [F.adjust_brightness, F.adjust_contrast, F.adjust_saturation, F.adjust_hue]
    ops = [T.AdjustBrightness, T.AdjustContrast, T.AdjustSaturation, T.AdjustHue]
    rng = np.random.default_rng(12)
    for _ in range(40):
        image = rng.integers(0, 256, (int(rng.integers(1, 30)), 19, channels), np.uint8)
        for op, function in zip(ops, functions, strict=True):
            factor = float(rng.uniform(-0.5, 0.5) if op is T.AdjustHue else rng.uniform(0, 3))
            got = T.Compose([op(factor)])(image)
            np.testing.assert_array_equal(got, array(function(pil(image), factor)), f"{op}")


def test_choice_and_order_take_torchvisions_arguments_and_give_one_of_its_outcomes():
    """Which op (or order) an item draws is ours (ItemRandom); each outcome is one
    torchvision gives: v2's RandomChoice with that op's weight alone, v2's
    RandomOrder's ops run in that order."""
    ops = [T.RandomSolarize(100, 1.0), T.RandomPosterize(2, 1.0), T.HFlip()]
    tv = [v2.RandomSolarize(100, 1.0), v2.RandomPosterize(2, 1.0), v2.RandomHorizontalFlip(1)]
    assert list(T.RandomChoice(ops, p=[1, 2, 1]).p) == v2.RandomChoice(tv, p=[1, 2, 1]).p
    rng = np.random.default_rng(3)
    seen_choices, seen_orders = set(), set()
    for index in range(80):
        shape = (int(rng.integers(1, 30)), int(rng.integers(1, 30)), int(rng.choice([1, 3])))
        image = rng.integers(0, 256, shape, np.uint8)
        choices = [array(v2.RandomChoice(tv, p=[0] * i + [1] + [0] * (2 - i))(pil(image)))
                   for i in range(3)]  # fmt: skip
        got = T.Compose([T.RandomChoice(ops)])(image, index=index, epoch_seed=5)
        matches = [i for i, theirs in enumerate(choices) if np.array_equal(got, theirs)]
        assert matches, f"item {index}: no op of torchvision's RandomChoice gives it"
        seen_choices.add(matches[0])
        got = T.Compose([T.RandomOrder(ops)])(image, index=index, epoch_seed=5)
        orders = []
        for order in itertools.permutations(range(3)):
            theirs = pil(image)
            for position in order:
                theirs = tv[position](theirs)
            if np.array_equal(got, array(theirs)):
                orders.append(order)
        assert orders, f"item {index}: no order of torchvision's ops gives it"
        seen_orders.add(orders[0])
    assert seen_choices == {0, 1, 2} and len(seen_orders) >= 2
