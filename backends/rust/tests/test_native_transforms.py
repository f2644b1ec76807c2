"""The rust backend runs a transforms pipeline natively (MapWork.images): the
reference's pixels, in buffers NumPy and torch share, and the reference for
whatever it does not reproduce."""

from __future__ import annotations

import gc
import io
import itertools
import subprocess
import sys
import weakref

import numpy as np
import pytest

from dataloader_api import DataLoader
from dataloader_api import transforms as T

Image = pytest.importorskip("PIL.Image", reason="the reference needs Pillow")
from dataloader_rust import _native  # noqa: E402
from PIL import features  # noqa: E402

# Pillow's cp313t wheels are built without libwebp: no reference to compare with.
needs_webp = pytest.mark.skipif(not features.check("webp"), reason="this Pillow has no WebP")

PIPELINE = T.Compose(
    [T.Decode(), T.ToRGB(), T.RandomResizedCrop(24), T.RandomHFlip(), T.ToFloat(),
     T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]), T.ToCHW()],
    on=0,
)  # fmt: skip


def encoded(fmt: str, mode: str = "RGB", seed: int = 0, **options) -> bytes:
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, (40, 52, 3), np.uint8)
    image = Image.fromarray(pixels).convert(mode)
    buffer = io.BytesIO()
    image.save(buffer, fmt, **options)
    return buffer.getvalue()


def is_native(array: np.ndarray) -> bool:
    base = array.base
    return isinstance(base, memoryview) and type(base.obj).__name__ == "PixelBuffer"


def items(loader) -> list:
    return [item for batch in loader for item in batch]


def load(dataset, backend="rust", **options):
    return items(
        DataLoader(
            dataset,
            batch_size=3,
            num_workers=2,
            backend=backend,
            seed=5,
            transform=PIPELINE,
            collate_fn=list,
            **options,
        )
    )


def test_jpegs_and_pngs_are_decoded_and_transformed_natively_as_the_reference():
    dataset = [
        (encoded("JPEG", quality=q, subsampling=s, progressive=p, seed=i), i)
        for i, (q, s, p) in enumerate(
            [(75, 2, False), (95, 0, True), (50, 1, False), (100, 0, False), (85, 2, True)]
        )
    ] + [(encoded("PNG", mode, seed=9), 5 + i) for i, mode in enumerate(["RGB", "L", "P", "RGBA"])]
    native, reference = load(dataset), load(dataset, backend="threads")
    assert all(is_native(image) for image, _ in native)
    assert not any(is_native(image) for image, _ in reference)
    for (image, label), (expected, _) in zip(native, reference, strict=True):
        np.testing.assert_array_equal(image, expected, err_msg=f"item {label}")


@needs_webp
def test_what_is_not_reproduced_natively_goes_to_the_reference():
    dataset = [
        (encoded("WEBP", quality=80), 0),  # lossy WebP: libwebp is the reference
        (encoded("JPEG", mode="CMYK"), 1),
        (encoded("WEBP", lossless=True), 2),  # lossless: native
    ]
    native = load(dataset)
    assert [is_native(image) for image, _ in native] == [False, False, True]
    for (image, label), (expected, _) in zip(native, load(dataset, "threads"), strict=True):
        np.testing.assert_array_equal(image, expected, err_msg=f"item {label}")
    # A str index keys its random numbers by a hash only the reference computes.
    keyed = DataLoader(
        {"a": (np.zeros((2, 3, 1), np.uint8), 0)},
        sampler=["a"],
        num_workers=1,
        backend="rust",
        transform=T.Compose([T.RandomHFlip()], on=0),
        collate_fn=list,
    )
    assert not is_native(items(keyed)[0][0])


def test_errors_are_the_references():
    dataset = [(encoded("JPEG", seed=i), i) for i in range(6)]
    dataset[4] = (dataset[4][0][: len(dataset[4][0]) // 2], 4)  # truncated
    with pytest.raises(T.ImageDecodeError, match=r"transform of item 4: cannot decode the JPEG"):
        load(dataset)
    too_big = DataLoader(
        [(encoded("PNG"), 0)],
        num_workers=1,
        backend="rust",
        transform=T.Compose([T.Decode(max_pixels=100)], on=0),
        collate_fn=list,
    )
    with pytest.raises(T.ImageDecodeError, match=r"52x40 = 2080 pixels.*max_pixels=100"):
        items(too_big)


def test_a_native_image_shares_its_memory_and_outlives_the_loader():
    loader = DataLoader(
        [(encoded("PNG"), 0)],
        num_workers=1,
        backend="rust",
        transform=T.Compose([T.Decode()], on=0),
        collate_fn=list,
    )
    image = next(iter(loader))[0][0]
    del loader
    gc.collect()
    assert is_native(image) and image.flags.writeable and image.flags.c_contiguous
    shared = np.asarray(image.base)  # a second view of the same native buffer
    image[0, 0, 0] = 255 - image[0, 0, 0]
    assert shared[0, 0, 0] == image[0, 0, 0]
    assert np.from_dlpack(image).ctypes.data == image.ctypes.data


def test_run_pipeline_gives_the_reference_or_none():
    data = encoded("JPEG", quality=90)
    pipeline = T.Compose([T.Decode(), T.RandomResizedCrop((17, 29), interpolation="lanczos")])
    for index in range(20):
        native = _native.run_pipeline(pipeline.to_dict(), 11, index, data)
        np.testing.assert_array_equal(native, pipeline(data, index=index, epoch_seed=11))
    assert _native.run_pipeline(pipeline.to_dict(), 11, "a", data) is None
    assert _native.run_pipeline(pipeline.to_dict(), 11, 0, b"GIF89a") is None


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
def test_native_resize_is_the_references_bit_for_bit(channels):
    """Each filter, shrinking and growing in each direction, on both pass
    orders, uint8 and float32: the native passes (SSE4.1 and AVX2 where the
    CPU has them) sum as the reference."""
    rng = np.random.default_rng(channels)
    sizes = [(61, 47, 23, 90), (30, 200, 30, 7), (97, 13, 5, 13), (5, 3, 40, 50), (1, 64, 1, 9),
             (33, 33, 32, 34)]  # fmt: skip
    for height, width, out_h, out_w in sizes:
        image = rng.integers(0, 256, (height, width, channels), np.uint8)
        for interpolation, first in itertools.product(T.INTERPOLATIONS, [[], [T.ToFloat()]]):
            pipeline = T.Compose([*first, T.Resize((out_h, out_w), interpolation)])
            native = _native.run_pipeline(pipeline.to_dict(), 0, 0, image)
            np.testing.assert_array_equal(
                native, pipeline(image), err_msg=f"{pipeline} to {(out_h, out_w)}"
            )


class SpyCollate(T.ImageCollate):
    """Records, per batch, whether the backend laid the images out itself."""

    def __init__(self) -> None:
        super().__init__(on=0)
        self.native: list[bool] = []

    def with_stacked(self, batch, stacked):
        self.native.append(stacked is not None)
        return super().with_stacked(batch, stacked)


def test_image_collate_gets_the_batch_laid_out_natively():
    dataset = [(encoded("JPEG", seed=i), i) for i in range(6)]

    def epoch(backend, collate):
        loader = DataLoader(dataset, batch_size=3, num_workers=2, backend=backend, seed=5,
                            transform=PIPELINE, collate_fn=collate)  # fmt: skip
        return list(loader)

    spy = SpyCollate()
    native, reference = epoch("rust", spy), epoch("threads", T.ImageCollate(on=0))
    assert spy.native == [True, True]
    for (images, labels), (expected, expected_labels) in zip(native, reference, strict=True):
        assert images.shape == (3, 3, 24, 24) and images.flags.c_contiguous
        np.testing.assert_array_equal(images, expected)
        assert labels.tolist() == expected_labels.tolist()
    # One item the reference makes (a CMYK JPEG): that batch is stacked by ImageCollate.
    dataset[4] = (encoded("JPEG", mode="CMYK"), 4)
    spy = SpyCollate()
    mixed, with_reference = epoch("rust", spy), epoch("threads", T.ImageCollate(on=0))
    assert sorted(spy.native) == [False, True]  # batches finish in either order
    np.testing.assert_array_equal(mixed[1][0], with_reference[1][0])


CROP = T.Compose([T.Decode(), T.RandomResizedCrop(16), T.ToFloat(), T.ToCHW()], on=0)


def batches(backend, length=40, **options):
    dataset = [(encoded("JPEG", seed=i), i) for i in range(length)]
    loader = DataLoader(dataset, batch_size=4, num_workers=2, backend=backend, seed=5,
                        transform=CROP, collate_fn=T.ImageCollate(on=0), **options)  # fmt: skip
    return iter(loader)


def test_a_batch_array_anything_still_holds_is_never_filled_again():
    """Batch arrays are reused, but only once nothing of the user's holds them:
    not the batch, a view, a memoryview, a DLPack capsule or its consumer."""
    expected = [images.copy() for images, _ in batches("threads")]
    held = []
    for position, (images, _) in enumerate(batches("rust")):
        keep = [
            lambda a: a,
            lambda a: a[1:],
            memoryview,
            lambda a: a.__dlpack__(),
            np.from_dlpack,
        ][position % 5]
        held.append(keep(images))
        del images
        gc.collect()
    assert len(held) == len(expected) == 10
    for position, (kept, images) in enumerate(zip(held, expected, strict=True)):
        if type(kept).__name__ == "PyCapsule":
            continue  # a capsule is read by its consumer only; np.from_dlpack covers it
        part = images[1:] if position % 5 == 1 else images
        np.testing.assert_array_equal(np.asarray(kept), part, err_msg=f"batch {position}")


def test_a_dropped_batch_array_is_filled_again():
    loader = batches("rust", length=80)
    first, _ = next(loader)
    dropped = weakref.ref(first)
    del first
    # The pool keeps the array, then hands it out again once it is free.
    assert dropped() is not None
    assert any(images is dropped() for images, _ in loader)


class KeepItems(T.ImageCollate):
    """The batch's items as they came when the backend did not stack them."""

    def with_stacked(self, batch, stacked):
        return batch if stacked is None else super().with_stacked(batch, stacked)


def test_images_of_two_shapes_in_one_batch_come_back_as_the_references():
    """The first image sets the batch array's shape and each next one is written
    into its slot as it is made; one of another shape, or one the reference
    makes, gives the written images back out as items, unchanged."""
    small = Image.fromarray(np.full((30, 20, 3), 7, np.uint8))
    buffer = io.BytesIO()
    small.save(buffer, "PNG")
    dataset = [(encoded("PNG", seed=i), i) for i in range(10)]
    dataset[3] = (buffer.getvalue(), 3)  # 30x20, the others 40x52
    dataset[9] = (encoded("JPEG", mode="CMYK"), 9)  # made by the reference
    pipeline = T.Compose([T.Decode(), T.ToRGB(), T.ToFloat(), T.ToCHW()], on=0)

    def epoch(backend):
        loader = DataLoader(dataset, batch_size=5, num_workers=2, backend=backend,
                            transform=pipeline, collate_fn=KeepItems(on=0))  # fmt: skip
        return list(loader)

    native, expected = epoch("rust"), epoch("threads")
    assert [[label for _, label in batch] for batch in native] == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    for batch, reference in zip(native, expected, strict=True):
        for (image, _), (wanted, _) in zip(batch, reference, strict=True):
            assert image.dtype == wanted.dtype
            np.testing.assert_array_equal(image, wanted)
    with pytest.raises(ValueError, match="image 3 of the batch is float32 of shape"):
        list(DataLoader(dataset, batch_size=5, backend="rust", transform=pipeline,
                        collate_fn=T.ImageCollate(on=0)))  # fmt: skip


HUGE = 2**31 - 1  # the largest side an op takes


@pytest.mark.parametrize(
    "op",
    [
        T.Rotate90(2**64 + 1),
        T.PadTo(HUGE, HUGE),
        T.Pad(HUGE, HUGE, HUGE, HUGE),
        T.CenterCrop(HUGE),
        T.Resize((HUGE, 3)),
        T.RandomResizedCrop((3, HUGE)),
        T.RandomCrop(5, padding=HUGE),
        T.RandomCrop(HUGE, pad_if_needed=True),
    ],
    ids=repr,
)
def test_any_argument_an_op_takes_gives_the_references_result_or_error(op):
    # Before: Rotate90 past 64 bits was an OverflowError for the whole epoch, and
    # the sizes aborted the interpreter (a failed allocation) or panicked. A
    # child process, so that an abort fails this test rather than the session.
    script = f"""
import numpy as np
from dataloader_api import DataLoader, transforms as T
image = np.arange(4 * 3 * 3, dtype=np.uint8).reshape(4, 3, 3)
outcomes = []
for backend in ("rust", "threads"):
    loader = DataLoader([image] * 2, batch_size=2, num_workers=1, backend=backend,
                        transform=T.Compose([T.op_from_dict({op.to_dict()!r})]),
                        collate_fn=list)
    try:
        outcomes.append([a.tobytes() for batch in loader for a in batch])
    except Exception as error:
        outcomes.append((type(error).__name__, str(error)))
assert outcomes[0] == outcomes[1], outcomes
"""
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr[-2000:]


def test_decode_takes_a_max_pixels_past_64_bits():
    data = encoded("JPEG")
    pipeline = T.Compose([T.Decode(max_pixels=2**64)])
    native = _native.run_pipeline(pipeline.to_dict(), 0, 0, data)
    np.testing.assert_array_equal(native, pipeline(data))


def test_decode_record_with_a_non_int_max_pixels_is_refused_not_unlimited():
    record = T.Compose([T.Decode()]).to_dict()
    record["ops"][0]["max_pixels"] = "many"
    with pytest.raises(TypeError):
        _native.run_pipeline(record, 0, 0, encoded("JPEG"))


@pytest.mark.parametrize(
    "record",
    [
        {"op": "random_choice", "transforms": [], "p": []},
        {"op": "random_choice", "transforms": [{"op": "hflip"}], "p": [0.5, 0.5]},
        {"op": "random_choice", "transforms": [{"op": "hflip"}], "p": [-1.0]},
        {"op": "random_choice", "transforms": [{"op": "hflip"}], "p": [float("nan")]},
        {"op": "random_choice", "transforms": [{"op": "hflip"}], "p": [0.0]},
        {"op": "random_order", "transforms": []},
    ],
    ids=repr,
)
def test_an_op_over_ops_record_the_python_side_refuses_is_refused_natively(record):
    """Records written by hand, past the Python checks: a ValueError, never an
    index out of range in a worker."""
    image = np.zeros((2, 2, 3), np.uint8)
    with pytest.raises(ValueError, match=r"MapWork\.images\.pipeline: "):
        _native.run_pipeline({"ops": [record], "on": None}, 0, 0, image)
