"""torchvision's random ops on the reference, with the item's random numbers:
``RandomCrop``, ``RandomErasing``, ``ColorJitter``."""

from __future__ import annotations

import numpy as np
import pytest

from dataloader_api import transforms as T
from dataloader_api.transforms._color import jitter_params
from dataloader_api.transforms._reference import erasing_params, random_crop_box

pytest.importorskip("PIL.Image", reason="Pillow: pip install 'dataloader-api[images]'")


def photo(height=37, width=53, channels=3, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (height, width, channels), np.uint8)


# --- RandomCrop: torchvision's, with the item's random numbers ------------------


def test_random_crop_takes_torchvisions_padding_forms_and_refuses_the_rest():
    assert T.RandomCrop(32, padding=4).padding == (4, 4, 4, 4)
    assert T.RandomCrop(32, padding=(1, 2)).padding == (1, 2, 1, 2)  # left/right, top/bottom
    assert T.RandomCrop((3, 5), padding=[1, 2, 3, 4]).padding == (1, 2, 3, 4)
    assert T.RandomCrop(8).padding == (0, 0, 0, 0) and T.RandomCrop(8).size == (8, 8)
    assert T.op_from_dict(T.RandomCrop(8, 2, True, 7, "reflect").to_dict()) == T.RandomCrop(
        8, 2, True, 7, "reflect"
    )
    with pytest.raises(ValueError, match=r"RandomCrop: padding should be .*padding=\(1, 2, 3\)"):
        T.RandomCrop(8, padding=(1, 2, 3))
    with pytest.raises(ValueError, match=r"padding_mode should be one of .*padding_mode='wrap'"):
        T.RandomCrop(8, padding_mode="wrap")
    with pytest.raises(TypeError, match=r"pad_if_needed should be a bool, but got .*=1"):
        T.RandomCrop(8, pad_if_needed=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"fill should be a finite number, but got fill=\(1, 2\)"):
        T.RandomCrop(8, fill=(1, 2))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"fill should be an integer in \[0, 255\] .*fill=300"):
        T.Compose([T.RandomCrop(8, fill=300)])


def test_random_crop_pads_then_crops_at_a_place_of_the_items_draw():
    image = photo(32, 32)
    op = T.RandomCrop(32, padding=4, fill=7)
    tops_lefts = set()
    for index in range(40):
        (padding, top, left) = random_crop_box(op, T.ItemRandom(3, index), 32, 32)
        assert padding == (4, 4, 4, 4) and 0 <= top <= 8 and 0 <= left <= 8
        tops_lefts.add((top, left))
        out = T.Compose([op])(image, index=index, epoch_seed=3)
        padded = np.pad(image, ((4, 4), (4, 4), (0, 0)), constant_values=7)
        np.testing.assert_array_equal(out, padded[top : top + 32, left : left + 32])
    assert len(tops_lefts) > 20
    # pad_if_needed grows both sides by the shortfall, as torchvision.
    small = T.RandomCrop((6, 3), pad_if_needed=True)
    assert random_crop_box(small, T.ItemRandom(0, 0), 4, 5)[0] == (0, 2, 0, 2)
    with pytest.raises(T.TransformError, match=r"item 2: RandomCrop.* 4x5 once padded"):
        T.Compose([T.RandomCrop((6, 3))])(photo(4, 5), index=2)


# --- RandomErasing: torchvision's, on the float CHW image ------------------------


def test_random_erasing_checks_its_arguments_and_its_place():
    assert T.RandomErasing(value=2).value == (2.0,)
    assert T.RandomErasing(value=[1, 2, 3]).value == (1.0, 2.0, 3.0)
    assert T.op_from_dict(T.RandomErasing(value="random").to_dict()).value == "random"
    for bad, match in [
        ({"p": 1.5}, r"p should be in \[0, 1\], but got p=1.5"),
        ({"scale": (0.5, 1.5)}, r"scale should be a \(low, high\) pair within \[0, 1\]"),
        ({"ratio": (0, 1)}, r"ratio should be a \(low, high\) pair with 0 < low"),
        ({"value": "noise"}, r"value should be a number, .* or 'random', but got value='noise'"),
        ({"value": []}, r"but got value=\[\]"),
    ]:
        with pytest.raises(ValueError, match=match):
            T.RandomErasing(**bad)
    with pytest.raises(TypeError, match=r"needs a float32 CHW image.*after ToFloat\(\) and ToCHW"):
        T.Compose([T.ToFloat(), T.RandomErasing()])
    pipeline = T.Compose([T.ToFloat(), T.ToCHW(), T.RandomErasing(p=1, value=(1, 2))])
    with pytest.raises(T.TransformError, match=r"item 6: RandomErasing.* 2 numbers for 3 channels"):
        pipeline(photo(), index=6)


def test_random_erasing_sets_one_box_of_the_drawn_area_or_leaves_the_image():
    op = T.RandomErasing(p=0.5, scale=(0.1, 0.2), value=(2, 3, 4))
    pipeline = T.Compose([T.ToFloat(), T.ToCHW(), op])
    image = photo(40, 50)
    plain = T.Compose([T.ToFloat(), T.ToCHW()])(image)
    erased = 0
    for index in range(60):
        out = pipeline(image, index=index, epoch_seed=8)
        params = erasing_params(op, T.ItemRandom(8, index), 3, 40, 50)
        if params is None:
            np.testing.assert_array_equal(out, plain)
            continue
        erased += 1
        top, left, h, w, _ = params
        assert 0.1 * 0.8 <= h * w / (40 * 50) <= 0.2 * 1.2
        for channel, value in enumerate((2, 3, 4)):
            assert (out[channel, top : top + h, left : left + w] == value).all()
        outside = np.ones((40, 50), bool)
        outside[top : top + h, left : left + w] = False
        np.testing.assert_array_equal(out[:, outside], plain[:, outside])
    assert 15 <= erased <= 45
    noisy = T.Compose([T.ToFloat(), T.ToCHW(), T.RandomErasing(p=1, value="random")])
    outs = [noisy(image, index=i) for i in range(20)]
    values = np.concatenate([out[out != plain] for out in outs])  # the erased noise
    assert values.size > 1000 and abs(values.mean()) < 0.15 and 0.85 < values.std() < 1.15


# --- ColorJitter: torchvision's order and ranges, PIL's arithmetic ---------------


def test_color_jitter_reads_torchvisions_ranges_and_refuses_the_rest():
    op = T.ColorJitter(brightness=0.4, contrast=(0.5, 2), saturation=1.5, hue=0.1)
    assert (op.brightness, op.contrast, op.saturation, op.hue) == (
        (0.6, 1.4), (0.5, 2.0), (0.0, 2.5), (-0.1, 0.1)
    )  # fmt: skip
    assert T.ColorJitter().brightness is None and T.ColorJitter(hue=(0, 0)).hue is None
    assert T.op_from_dict(op.to_dict()) == op
    for bad, match in [
        ({"brightness": -1}, r"brightness should be >= 0, but got brightness=-1"),
        ({"contrast": (2, 1)}, r"contrast should give 0 <= low <= high, but got contrast=\(2, 1\)"),
        ({"saturation": "x"}, r"saturation should be a number >= 0 or a \(low, high\) pair"),
        ({"hue": 0.6}, r"hue should be in \[0, 0.5\], but got hue=0.6"),
        ({"hue": (-0.7, 0)}, r"hue should give -0.5 <= low <= high <= 0.5"),
    ]:
        with pytest.raises(ValueError, match=match):
            T.ColorJitter(**bad)
    with pytest.raises(TypeError, match=r"needs a uint8 image, as PIL's: put it before ToFloat"):
        T.Compose([T.ToFloat(), T.ColorJitter(0.4)])
    with pytest.raises(T.TransformError, match=r"item 1: ColorJitter.* 1 or 3 channels, not 4"):
        T.Compose([T.ColorJitter(0.4)])(photo(channels=4), index=1)


def test_color_jitter_draws_an_order_and_factors_per_item():
    op = T.ColorJitter(0.4, 0.4, 0.4, 0.1)
    orders = set()
    for index in range(50):
        order, factors = jitter_params(op, T.ItemRandom(1, index))
        assert sorted(order) == [0, 1, 2, 3]
        orders.add(tuple(order))
        assert all(0.6 <= f <= 1.4 for f in factors[:3]) and -0.1 <= factors[3] <= 0.1
    assert len(orders) > 12
    # Off adjustments draw nothing: only the order, then brightness.
    order, factors = jitter_params(T.ColorJitter(brightness=0.4), T.ItemRandom(1, 0))
    assert factors[1:] == [None, None, None]
    gray = photo(channels=1)
    only_hue = T.Compose([T.ColorJitter(saturation=0.9, hue=0.5)])
    np.testing.assert_array_equal(only_hue(gray, index=3), gray)  # nothing to turn on gray
