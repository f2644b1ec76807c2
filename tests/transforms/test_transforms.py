"""The transforms' records, checks and reference execution (Pillow and NumPy);
torchvision's random ops with their own draws: test_transforms_random.py."""

from __future__ import annotations

import io

import numpy as np
import pytest

from dataloader_api import transforms as T
from dataloader_api.transforms._reference import crop_box, resized_size

Image = pytest.importorskip("PIL.Image", reason="Pillow: pip install 'dataloader-api[images]'")
from PIL import features  # noqa: E402

# Pillow's cp313t wheels are built without libwebp.
needs_webp = pytest.mark.skipif(not features.check("webp"), reason="this Pillow has no WebP")


def encode(array: np.ndarray, fmt: str, **options) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(array.squeeze(-1) if array.shape[-1] == 1 else array).save(
        buffer, fmt, **options
    )
    return buffer.getvalue()


def photo(height=37, width=53, channels=3, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (height, width, channels), np.uint8)


# --- the random stream ---------------------------------------------------------


def test_item_random_is_splitmix64_keyed_by_seed_and_index():
    # Index 0 leaves the seed alone: SplitMix64's published first outputs for seed 0.
    stream = T.ItemRandom(0, 0)
    assert [stream.next_u64() for _ in range(3)] == [
        0xE220A8397B1DCDAF,
        0x6E789E6AA1B965F4,
        0x06C45D188009454F,
    ]
    # Pinned for native implementations: a change here changes every augmentation.
    assert T.ItemRandom(12345, 7).next_u64() == 0xFFE19E76DAB03E8A
    assert T.ItemRandom(3, "key").next_u64() == 0x5EEE6F08C6CA5C00
    assert T.ItemRandom(1, -1).below(10) == 4
    assert T.ItemRandom(1, 5).next_u64() != T.ItemRandom(1, 6).next_u64()


def test_item_random_refuses_an_unhashable_index():
    with pytest.raises(TypeError, match=r"index=\(1, 2\)"):
        T.ItemRandom(0, (1, 2))


# --- records and their checks ----------------------------------------------------


@pytest.mark.parametrize(
    "build, error, words",
    [
        (lambda: T.Decode(max_pixels=0), ValueError, "max_pixels=0"),
        (lambda: T.Crop(-1, 0, 2, 2), ValueError, "top=-1"),
        (lambda: T.Crop(0, 0, 2.5, 2), TypeError, "height=2.5"),
        (lambda: T.Resize(0), ValueError, "size=0"),
        (lambda: T.Resize((2, 2, 2)), ValueError, "size=(2, 2, 2)"),
        (lambda: T.Resize(8, interpolation="area"), ValueError, "interpolation='area'"),
        (lambda: T.RandomResizedCrop(8, scale=(0.5, 0.1)), ValueError, "scale=(0.5, 0.1)"),
        (lambda: T.RandomResizedCrop(8, ratio=(0, 1)), ValueError, "ratio=(0, 1)"),
        (lambda: T.RandomHFlip(p=1.5), ValueError, "p=1.5"),
        (lambda: T.Normalize([0.5], [0.0]), ValueError, "std=[0.0]"),
        (lambda: T.Normalize([], [1.0]), ValueError, "mean=[]"),
        (lambda: T.Pad(top=-2), ValueError, "top=-2"),
        (lambda: T.Rotate90(k=1.0), TypeError, "k=1.0"),
        (
            lambda: T.Crop(2**64, 0, 2, 2),
            ValueError,
            "from 0 to 2**31 - 1, but got top=18446744073709551616",
        ),
        (lambda: T.Resize(2**31), ValueError, "from 1 to 2**31 - 1 or a (height, width) pair"),
        (lambda: T.CenterCrop((4, 2**31)), ValueError, "size=(4, 2147483648)"),
        (lambda: T.Pad(right=2**31), ValueError, "right=2147483648"),
        (lambda: T.PadTo(2**31, 4), ValueError, "height=2147483648"),
        (lambda: T.RandomCrop(4, padding=2**31), ValueError, "padding=2147483648"),
        (lambda: T.GaussianBlur(2**31 + 1), ValueError, "kernel_size=2147483649"),
        (lambda: T.Compose(T.HFlip()), TypeError, "ops=HFlip()"),
        (lambda: T.Compose([T.HFlip(), print]), TypeError, "ops[1]"),
        (lambda: T.Compose([T.HFlip()], on=1.5), TypeError, "on=1.5"),
        (lambda: T.Compose([T.HFlip()], start="rgb"), ValueError, "start='rgb'"),
    ],
)
def test_bad_arguments_name_the_argument_and_value(build, error, words):
    with pytest.raises(error) as raised:
        build()
    assert words in str(raised.value)


@pytest.mark.parametrize(
    "ops, words",
    [
        ([T.Decode(), T.ToRGB(), T.Normalize([0.5], [0.2])], "put ToFloat() before it"),
        ([T.ToFloat(), T.ToGray()], "before ToFloat()"),
        ([T.ToCHW(), T.HFlip()], "before ToCHW()"),
        ([T.HFlip(), T.Decode()], "already decoded"),
        ([T.Decode(), T.Decode()], "already decoded"),
        ([T.ToHWC()], "already HWC"),
        ([T.ToFloat(), T.ToFloat()], "already float32"),
        ([T.Pad(top=1, value=300)], "value=300"),
    ],
)
def test_a_misordered_pipeline_fails_when_built(ops, words):
    with pytest.raises((TypeError, ValueError)) as raised:
        T.Compose(ops)
    assert words in str(raised.value) and "Compose: ops[" in str(raised.value)


def test_a_pipeline_is_plain_data_that_round_trips():
    pipeline = T.Compose(
        [T.Decode(max_pixels=10**6), T.ToRGB(), T.RandomResizedCrop(24, scale=(0.2, 1.0)),
         T.RandomHFlip(0.3), T.Rotate90(3), T.Pad(1, 2, 3, 4, value=7), T.PadTo(40, 40),
         T.CenterCrop((30, 28)), T.ToFloat(), T.Normalize([0.4, 0.5, 0.6], 0.25), T.ToCHW()],
        on="image",
    )  # fmt: skip
    record = pipeline.to_dict()
    assert record["ops"][2] == {
        "op": "random_resized_crop",
        "size": [24, 24],
        "scale": [0.2, 1.0],
        "ratio": [0.75, 4 / 3],
        "interpolation": "bilinear",
    }
    assert T.Compose.from_dict(record) == pipeline
    assert pipeline.output == ("float32", "CHW") and pipeline.random
    assert not T.Compose([T.HFlip()]).random


# --- the reference against Pillow and torchvision's definitions ------------------


@pytest.mark.parametrize("channels", [1, 3, 4])
@pytest.mark.parametrize("fmt", ["PNG", pytest.param("WEBP", marks=needs_webp)])
def test_lossless_decode_gives_the_encoded_pixels(fmt, channels):
    image = photo(channels=channels)
    options = {"lossless": True, "exact": True} if fmt == "WEBP" else {}
    decoded = T.Compose([T.Decode()])(encode(image, fmt, **options))
    if fmt == "WEBP" and channels == 1:
        image = np.repeat(image, 3, axis=2)  # WebP has no gray mode: Pillow stores RGB
    assert decoded.dtype == np.uint8 and decoded.shape == image.shape
    np.testing.assert_array_equal(decoded, image)


def test_jpeg_decode_equals_pillow():
    data = encode(photo(), "JPEG", quality=90)
    decoded = T.Compose([T.Decode()])(data)
    np.testing.assert_array_equal(decoded, np.asarray(Image.open(io.BytesIO(data))))


def test_palette_and_bilevel_images_decode_to_rgb_and_gray():
    palette = Image.fromarray(photo()).convert("P")
    buffer = io.BytesIO()
    palette.save(buffer, "PNG")
    decoded = T.Compose([T.Decode()])(buffer.getvalue())
    np.testing.assert_array_equal(decoded, np.asarray(palette.convert("RGB")))
    bilevel = Image.fromarray(photo(channels=1).squeeze(-1)).convert("1")
    buffer = io.BytesIO()
    bilevel.save(buffer, "PNG")
    assert T.Compose([T.Decode()])(buffer.getvalue()).shape == (37, 53, 1)


@pytest.mark.parametrize(
    "data, words",
    [
        (b"GIF89a" + bytes(40), "not a JPEG, PNG or WebP image (they start with b'GIF89a"),
        (b"", "not a JPEG, PNG or WebP"),
        (b"\xff\xd8\xff\xe0" + bytes(30), "cannot decode the JPEG image"),
        (b"\x89PNG\r\n\x1a\n" + b"garbage" * 5, "cannot decode the PNG image"),
    ],
)
def test_bytes_that_are_no_image_raise_naming_the_index(data, words):
    with pytest.raises(T.ImageDecodeError) as raised:
        T.Compose([T.Decode()])(data, index=41)
    assert "transform of item 41" in str(raised.value) and words in str(raised.value)
    assert raised.value.index == 41 and isinstance(raised.value, ValueError)


def test_a_truncated_jpeg_raises():
    data = encode(photo(200, 300), "JPEG")
    with pytest.raises(T.ImageDecodeError, match=r"item 3.*cannot decode the JPEG"):
        T.Compose([T.Decode()])(data[: len(data) // 2], index=3)


def test_an_image_over_max_pixels_is_refused_before_decoding():
    data = encode(photo(100, 100), "PNG")
    with pytest.raises(T.ImageDecodeError, match=r"100x100 = 10000 pixels.*max_pixels=9999"):
        T.Compose([T.Decode(max_pixels=9999)])(data)
    assert T.Compose([T.Decode(max_pixels=10000)])(data).shape == (100, 100, 3)


@pytest.mark.parametrize("fmt", ["JPEG", "PNG"])
def test_max_pixels_governs_not_pillows_global_bomb_limit(monkeypatch, fmt):
    """Decode(max_pixels) above Pillow's Image.MAX_IMAGE_PIXELS decodes, as rust
    does (the reference raised Pillow's DecompressionBombError, whose message
    told the user to raise max_pixels, which they had)."""
    data = encode(photo(100, 100), fmt)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)  # 2x of it: Pillow's error
    assert T.Compose([T.Decode(max_pixels=10000)])(data).shape == (100, 100, 3)
    with pytest.raises(T.ImageDecodeError, match=r"max_pixels=9999"):
        T.Compose([T.Decode(max_pixels=9999)])(data)


def test_to_gray_is_pillows_luma_and_to_rgb_drops_alpha():
    rgba = photo(channels=4)
    gray = T.Compose([T.ToGray()])(rgba)
    expected = np.asarray(Image.fromarray(rgba[:, :, :3], "RGB").convert("L"))
    np.testing.assert_array_equal(gray[:, :, 0], expected)
    np.testing.assert_array_equal(T.Compose([T.ToRGB()])(rgba), rgba[:, :, :3])
    np.testing.assert_array_equal(T.Compose([T.ToRGB()])(gray), np.repeat(gray, 3, axis=2))


@pytest.mark.parametrize("interpolation", T.INTERPOLATIONS)
def test_resize_of_each_band_equals_pillows_rgb_resize(interpolation):
    image = photo(64, 48)
    resample = getattr(Image.Resampling, interpolation.upper())
    expected = np.asarray(Image.fromarray(image).resize((20, 30), resample, reducing_gap=None))
    np.testing.assert_array_equal(T.Compose([T.Resize((30, 20), interpolation)])(image), expected)
    # Four channels go band by band: the same numbers for the colour channels.
    rgba = np.concatenate([image, image[:, :, :1]], axis=2)
    resized = T.Compose([T.Resize((30, 20), interpolation)])(rgba)
    np.testing.assert_array_equal(resized[:, :, :3], expected)


def test_resize_of_an_int_sets_the_shorter_side_as_torchvision():
    assert resized_size(32, 375, 500) == (32, 42)
    assert resized_size(32, 500, 375) == (42, 32)
    assert T.Compose([T.Resize(10)])(photo(30, 45)).shape == (10, 15, 3)
    floats = T.Compose([T.ToFloat(), T.Resize((5, 7))])(photo(30, 45))
    assert floats.dtype == np.float32 and floats.shape == (5, 7, 3)


def test_random_resized_crop_follows_torchvisions_algorithm():
    op = T.RandomResizedCrop(16)
    for index in range(200):
        top, left, h, w = crop_box(op, T.ItemRandom(9, index), 375, 500)
        assert 0 <= top <= 375 - h and 0 <= left <= 500 - w
        assert 0.08 * 0.9 <= h * w / (375 * 500) <= 1.0
    # Aspect ratios no attempt can meet: the centred fallback of torchvision.
    narrow = T.RandomResizedCrop(8, scale=(0.99, 1.0), ratio=(4.0, 5.0))
    assert crop_box(narrow, T.ItemRandom(0, 0), 100, 100) == (37, 0, 25, 100)
    out = T.Compose([op])(photo(), index=3, epoch_seed=9)
    assert out.shape == (16, 16, 3)
    np.testing.assert_array_equal(out, T.Compose([op])(photo(), index=3, epoch_seed=9))


def test_decode_draft_decodes_a_jpeg_at_the_scale_its_crop_allows():
    """Decode(draft=True) then RandomResizedCrop: Pillow's draft at the largest
    of 1/8, 1/4 and 1/2 that keeps the box at least the output size both ways,
    the box's numbers divided by it, then Pillow's resize of that box."""
    data = encode(photo(600, 800), "JPEG", quality=90)
    crop = T.RandomResizedCrop(48, scale=(0.001, 0.6))
    scales = set()
    for index in range(60):
        top, left, h, w = crop_box(crop, T.ItemRandom(5, index), 600, 800)
        scale = next((s for s in (8, 4, 2) if h >= 48 * s and w >= 48 * s), 1)
        scales.add(scale)
        with Image.open(io.BytesIO(data)) as image:
            image.draft("RGB", (800 // scale, 600 // scale))
            box = tuple(v // scale for v in (left, top, left + w, top + h))
            box = (box[0], box[1], box[0] + w // scale, box[1] + h // scale)
            expected = np.asarray(
                image.crop(box).resize((48, 48), Image.Resampling.BILINEAR, reducing_gap=None)
            )
        drafted = T.Compose([T.Decode(draft=True), T.ToRGB(), crop])(data, index, 5)
        np.testing.assert_array_equal(drafted, expected, err_msg=f"item {index}")
        whole = T.Compose([T.Decode(), crop])(data, index, 5)
        assert np.array_equal(drafted, whole) == (scale == 1), index
    assert scales == {1, 2, 4, 8}
    # Not a JPEG, or no RandomResizedCrop next: draft changes nothing.
    png = encode(photo(300, 300), "PNG")
    for ops in ([crop], [T.CenterCrop(64)], [T.HFlip(), crop]):
        np.testing.assert_array_equal(
            T.Compose([T.Decode(draft=True), *ops])(png, 1, 5),
            T.Compose([T.Decode(), *ops])(png, 1, 5),
        )
    with pytest.raises(TypeError, match=r"Decode: draft should be a bool, but got draft=1"):
        T.Decode(draft=1)


def test_center_crop_pads_a_small_image_with_zeros_as_torchvision():
    out = T.Compose([T.CenterCrop((5, 9))])(np.full((3, 4, 1), 9, np.uint8))
    assert out[:, :, 0].tolist() == [[0] * 9] + [[0, 0, 9, 9, 9, 9, 0, 0, 0]] * 3 + [[0] * 9]
    image = photo(10, 10)
    np.testing.assert_array_equal(T.Compose([T.CenterCrop(4)])(image), image[3:7, 3:7])


def test_geometry_ops_equal_numpy():
    image = photo()
    run = lambda *ops: T.Compose(list(ops))(image)  # noqa: E731
    np.testing.assert_array_equal(run(T.HFlip()), image[:, ::-1])
    np.testing.assert_array_equal(run(T.VFlip()), image[::-1])
    np.testing.assert_array_equal(run(T.Rotate90(3)), np.rot90(image, 3))
    np.testing.assert_array_equal(run(T.Crop(2, 3, 4, 5)), image[2:6, 3:8])
    padded = run(T.Pad(1, 2, 3, 4, value=5))
    assert padded.shape == (40, 60, 3) and padded[0, 0, 0] == 5
    assert run(T.PadTo(40, 60)).shape == (40, 60, 3)
    np.testing.assert_array_equal(run(T.ToCHW(), T.ToHWC()), image)
    with pytest.raises(T.TransformError, match=r"item 0.*does not fit in an image of 37x53"):
        run(T.Crop(30, 0, 10, 5))
    with pytest.raises(T.TransformError, match="the image is larger"):
        run(T.PadTo(10, 100))


def test_random_flips_flip_about_p_of_the_items_and_each_item_the_same_way():
    image = photo(4, 4)
    flipped = [
        bool((T.Compose([T.RandomHFlip(0.25)])(image, index=i, epoch_seed=5) != image).any())
        for i in range(2000)
    ]
    assert 0.2 < sum(flipped) / len(flipped) < 0.3
    again = [
        bool((T.Compose([T.RandomHFlip(0.25)])(image, index=i, epoch_seed=5) != image).any())
        for i in range(2000)
    ]
    assert flipped == again


def test_to_float_and_normalize_are_torchvisions_to_tensor_and_normalize():
    image = photo()
    out = T.Compose([T.ToFloat(), T.ToCHW(), T.Normalize([0.1, 0.2, 0.3], [0.5, 0.25, 2])])(image)
    expected = (image.transpose(2, 0, 1).astype(np.float32) / np.float32(255)) - np.array(
        [0.1, 0.2, 0.3], np.float32
    ).reshape(3, 1, 1)
    expected /= np.array([0.5, 0.25, 2], np.float32).reshape(3, 1, 1)
    assert out.dtype == np.float32 and out.flags["C_CONTIGUOUS"]
    np.testing.assert_array_equal(out, expected)
    with pytest.raises(T.TransformError, match="mean has 2 values for 3 channels"):
        T.Compose([T.ToFloat(), T.Normalize([0.1, 0.2], 1)])(image)


def test_the_pipeline_finds_the_image_in_a_tuple_or_mapping_and_keeps_the_rest():
    image = photo()
    flipped = image[:, ::-1]
    out = T.Compose([T.HFlip()], on=0)((image, 7))
    assert isinstance(out, tuple) and out[1] == 7
    np.testing.assert_array_equal(out[0], flipped)
    record = T.Compose([T.HFlip()], on="img")({"img": image, "label": 2})
    assert record["label"] == 2
    np.testing.assert_array_equal(record["img"], flipped)
    with pytest.raises(T.TransformError, match=r"Compose\(\.\.\., on=position\)"):
        T.Compose([T.HFlip()])((image, 7))
    with pytest.raises(TypeError, match=r"item\[2\].*item 0 is tuple"):
        T.Compose([T.HFlip()], on=2)((image, 7))


def test_image_collate_makes_one_contiguous_batch_and_collates_the_rest():
    items = [(photo(seed=i)[:, ::-1], i) for i in range(4)]  # views, not contiguous
    images, labels = T.ImageCollate(on=0)(items)
    assert images.shape == (4, 37, 53, 3) and images.flags["C_CONTIGUOUS"]
    np.testing.assert_array_equal(images[2], items[2][0])
    assert labels.tolist() == [0, 1, 2, 3]
    # NumPy's own DLPack view shares the memory: a write is seen through both.
    view = np.from_dlpack(images)
    view[0, 0, 0, 0] = 1 + images[0, 0, 0, 0] % 200
    assert images[0, 0, 0, 0] == view[0, 0, 0, 0]
    with pytest.raises(ValueError, match="image 1 of the batch is uint8 of shape"):
        T.ImageCollate()([photo(), photo(5, 5)])
    with pytest.raises(TypeError, match="image 1 of the batch is a bytes, not a NumPy array"):
        T.ImageCollate()([photo(), b"jpeg"])
    with pytest.raises(ValueError, match=r"float32 of shape.*ToFloat"):
        T.ImageCollate()([photo(), photo().astype(np.float32)])


def test_image_collate_names_to_rgb_for_a_gray_photo_among_rgb_ones():
    def jpeg(mode: str) -> bytes:
        buffer = io.BytesIO()
        Image.fromarray(photo(24, 32)).convert(mode).save(buffer, "JPEG")
        return buffer.getvalue()

    decode = T.Compose([T.Decode()])
    with pytest.raises(ValueError, match=r"gray or RGBA image among RGB ones: ToRGB\(\)"):
        T.ImageCollate()([decode(jpeg("RGB")), decode(jpeg("L"))])
    fixed = T.Compose([T.Decode(), T.ToRGB()])
    assert T.ImageCollate()([fixed(jpeg("RGB")), fixed(jpeg("L"))]).shape == (2, 24, 32, 3)
    with pytest.raises(TypeError, match=r"on=1\.0"):
        T.ImageCollate(on=1.0)


def test_a_16_bit_png_is_refused_with_the_way_around_it():
    gray16 = (np.arange(12 * 9, dtype=np.uint16).reshape(12, 9) * 600).astype(np.uint16)
    buffer = io.BytesIO()
    Image.fromarray(gray16).save(buffer, "PNG")
    assert Image.open(io.BytesIO(buffer.getvalue())).mode == "I;16"
    with pytest.raises(T.ImageDecodeError, match=r"item 4: .*mode 'I;16' .*without Decode"):
        T.Compose([T.Decode()])(buffer.getvalue(), index=4)
