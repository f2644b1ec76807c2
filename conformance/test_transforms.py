"""Property 10: a transforms pipeline gives the reference's items on the backend.

Images (arrays, or PNG and JPEG bytes of any quality, subsampling and
progression) and pipelines come from Hypothesis. The reference is the calling
thread (``num_workers=0``), which runs ``transforms._reference``; a backend
with a native pipeline may differ only within ``transforms.TOLERANCES``.
Corrupt or foreign bytes raise ``ImageDecodeError`` for their item, never a crash.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dataloader_api import DataLoader
from dataloader_api import transforms as T

Image = pytest.importorskip("PIL.Image", reason="Pillow: pip install 'dataloader-api[images]'")

sizes = st.integers(1, 24)
interpolations = st.sampled_from(T.INTERPOLATIONS)
geometry = st.one_of(
    st.builds(T.HFlip),
    st.builds(T.VFlip),
    st.builds(T.RandomHFlip, st.floats(0, 1)),
    st.builds(T.RandomVFlip, st.floats(0, 1)),
    st.builds(T.Rotate90, st.integers(-3, 5)),
    st.builds(T.Pad, *[st.integers(0, 3)] * 4, value=st.integers(0, 255)),
    st.builds(T.CenterCrop, st.tuples(sizes, sizes)),
    st.builds(T.Resize, st.one_of(sizes, st.tuples(sizes, sizes)), interpolations),
    st.builds(
        T.RandomResizedCrop,
        st.tuples(sizes, sizes),
        scale=st.sampled_from([(0.08, 1.0), (0.5, 0.9)]),
        interpolation=interpolations,
    ),
    st.builds(
        T.RandomCrop,
        st.tuples(sizes, sizes),
        padding=st.one_of(st.integers(0, 4), st.tuples(*[st.integers(0, 40)] * 4)),
        pad_if_needed=st.booleans(),
        fill=st.integers(0, 255),
        padding_mode=st.sampled_from(T.PADDING_MODES),
    ),
    st.builds(
        T.ColorJitter,
        brightness=st.sampled_from([0, 0.4, (0.0, 3.0)]),
        contrast=st.sampled_from([0, 0.4, (0.0, 3.0)]),
        saturation=st.sampled_from([0, 0.4, (0.0, 3.0)]),
        hue=st.sampled_from([0, 0.1, 0.5]),
    ),
    st.builds(
        T.GaussianBlur,
        st.sampled_from([1, 3, 5, (3, 7), (9, 1)]),
        sigma=st.sampled_from([(0.1, 2.0), 1.0, (0.5, 6.0)]),
    ),
    st.builds(T.RandomGrayscale, st.floats(0, 1)),
    st.builds(T.RandomSolarize, st.integers(-1, 256) | st.floats(0, 255), p=st.floats(0, 1)),
    st.builds(T.RandomPosterize, st.integers(1, 8), p=st.floats(0, 1)),
    st.builds(T.RandomAutocontrast, st.floats(0, 1)),
    st.builds(T.RandomEqualize, st.floats(0, 1)),
    st.builds(T.RandomAdjustSharpness, st.floats(0, 3), p=st.floats(0, 1)),
    st.builds(T.AdjustBrightness, st.floats(0, 3)),
    st.builds(T.AdjustContrast, st.floats(0, 3)),
    st.builds(T.AdjustSaturation, st.floats(0, 3)),
    st.builds(T.AdjustHue, st.floats(-0.5, 0.5)),
    st.builds(T.ToGray),
    st.builds(T.ToRGB),
)
# Ops over ops: RandomApply, RandomChoice and RandomOrder of ops that keep the
# image's kind (geometry's all do).
inner = st.lists(geometry, min_size=1, max_size=3)
applied = (
    st.builds(T.RandomApply, inner, p=st.floats(0, 1))
    | inner.flatmap(
        lambda ops: st.builds(
            T.RandomChoice,
            st.just(ops),
            st.none() | st.lists(st.floats(0.01, 5), min_size=len(ops), max_size=len(ops)),
        )
    )
    | st.builds(T.RandomOrder, inner)
)


@st.composite
def pipelines(draw):
    encoded = draw(st.sampled_from([None, "PNG", "JPEG"]))
    ops = [T.Decode()] if encoded else []
    ops += draw(st.lists(geometry | applied, max_size=4))
    if draw(st.booleans()):
        ops.append(T.ToFloat())
        if draw(st.booleans()):
            ops.append(T.Normalize(draw(st.floats(-1, 1)), draw(st.floats(0.1, 2))))
    if draw(st.booleans()):
        ops.append(T.ToCHW())
        if len(ops) > 1 and ops[-2].name in ("to_float", "normalize") and draw(st.booleans()):
            ops.append(
                T.RandomErasing(
                    p=draw(st.floats(0, 1)),
                    scale=draw(st.sampled_from([(0.02, 0.33), (0.1, 0.9)])),
                    value=draw(st.sampled_from([0, 0.5, "random", (1.0,)])),
                )
            )
    return T.Compose(ops, on=0), encoded


def flat(ops):
    """The ops that may run, an op over ops' in its place (for tolerances: any
    order of RandomOrder's ops is covered by its ops' own tolerances)."""
    over = (T.RandomApply, T.RandomChoice, T.RandomOrder)
    for op in ops:
        yield from flat(op.transforms) if isinstance(op, over) else [op]


def tolerance(pipeline: T.Compose) -> float:
    """What a native backend may differ by, carried through the ops after the first
    approximate one (a u8 step becomes 1/255 after ToFloat, divided by std)."""
    atol = 0.0
    for op in flat(pipeline.ops):
        allowed = T.TOLERANCES.get(op.name, 0)
        if op.name == "to_float":
            atol /= 255
        elif op.name == "normalize":
            atol = atol / min(op.std) + allowed  # type: ignore[attr-defined]
        else:
            atol = max(atol, allowed)
    return atol


def images(draw, count: int) -> list[np.ndarray]:
    channels = draw(st.sampled_from([1, 3, 4]), label="channels")
    out = []
    for _ in range(count):
        shape = (draw(st.integers(1, 30)), draw(st.integers(1, 30)), channels)
        seed = draw(st.integers(0, 2**32 - 1))
        out.append(np.random.default_rng(seed).integers(0, 256, shape, np.uint8))
    return out


def encode(image: np.ndarray, fmt: str, draw=None) -> bytes:
    buffer = io.BytesIO()
    options = {}
    if fmt == "JPEG":
        image = image[:, :, :3]  # JPEG has no alpha
        if draw is not None:
            options = {
                "quality": draw(st.integers(30, 100), label="quality"),
                "subsampling": draw(st.sampled_from([0, 1, 2]), label="subsampling"),
                "progressive": draw(st.booleans(), label="progressive"),
                # Pillow >= 10.2; older ones ignore the option
                "restart_marker_rows": draw(st.sampled_from([0, 1, 3]), label="restart rows"),
            }
    Image.fromarray(image[:, :, 0] if image.shape[2] == 1 else image).save(buffer, fmt, **options)
    return buffer.getvalue()


def png(image: np.ndarray) -> bytes:
    return encode(image, "PNG")


@given(data=st.data(), length=st.integers(1, 12), num_workers=st.integers(1, 3))
def test_a_pipeline_gives_the_references_items(backend, data, length, num_workers):
    pipeline, encoded = data.draw(pipelines(), label="pipeline")
    batch_size = data.draw(st.integers(1, 4), label="batch_size")
    seed = data.draw(st.integers(0, 2**63 - 1), label="seed")
    # ImageCollate lets a backend lay the batch out itself (ImageWork.stack).
    stacked = data.draw(st.booleans(), label="ImageCollate")
    items = [
        (png(image) if encoded else image, i) for i, image in enumerate(images(data.draw, length))
    ]

    def run(**options):
        loader = DataLoader(
            items, batch_size=batch_size, shuffle=True, seed=seed, transform=pipeline,
            collate_fn=T.ImageCollate(on=0) if stacked else list, **options,
        )  # fmt: skip
        if stacked:
            return [
                (i, int(label))
                for images, labels in loader
                for i, label in zip(images, labels, strict=True)
            ]
        return [item for batch in loader for item in batch]

    try:
        expected = run()
    except (T.TransformError, ValueError) as error:
        # An op that does not fit an image (RandomCrop without pad_if_needed), or
        # images ImageCollate cannot stack: the backend raises the reference's error.
        with pytest.raises(type(error)) as raised:
            run(num_workers=num_workers, backend=backend)
        assert str(raised.value) == str(error)
        return
    got = run(num_workers=num_workers, backend=backend)
    atol = tolerance(pipeline)
    assert [label for _, label in got] == [label for _, label in expected]
    for (image, label), (reference, _) in zip(got, expected, strict=True):
        assert image.dtype == reference.dtype and image.shape == reference.shape, label
        if atol == 0:
            np.testing.assert_array_equal(image, reference, err_msg=f"item {label}")
        else:
            np.testing.assert_allclose(image, reference, rtol=0, atol=atol, err_msg=f"item {label}")


def photo(height: int, width: int, gray: bool, seed: int) -> np.ndarray:
    """Gradients under noise: smooth enough that chroma upsampling matters."""
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([(3 * x + y) % 256, (5 * y) % 256, (x + 2 * y) % 256], axis=2)
    noise = np.random.default_rng(seed).normal(0, 30, base.shape)
    image = np.clip(base + noise, 0, 255).astype(np.uint8)
    return image[:, :, :1] if gray else image


@st.composite
def crops_of(draw, height: int, width: int):
    top, left = draw(st.integers(0, height - 1)), draw(st.integers(0, width - 1))
    box = draw(st.integers(1, height - top)), draw(st.integers(1, width - left))
    return draw(
        st.sampled_from(
            [
                T.Crop(top, left, *box),
                T.CenterCrop(box),
                T.RandomResizedCrop(
                    (16, 16),
                    scale=draw(st.sampled_from([(0.01, 0.5), (0.3, 1.0)])),
                    interpolation=draw(interpolations),
                ),
            ]
        )
    )


@given(data=st.data(), length=st.integers(1, 4), num_workers=st.integers(1, 3))
def test_a_crop_right_after_decode_keeps_the_full_decodes_pixels(
    backend, data, length, num_workers
):
    """10, the crop after Decode (and ops on single pixels): a backend may decode
    only the part of a JPEG that a crop keeps, with the whole decode's pixels
    there; with Decode(draft=True), at the DCT scale the reference's Pillow uses."""
    height, width = data.draw(st.integers(1, 200)), data.draw(st.integers(1, 200))
    gray = data.draw(st.booleans(), label="gray")
    per_pixel = data.draw(st.lists(st.sampled_from([T.ToRGB(), T.ToGray()]), max_size=2))
    decode = T.Decode(draft=data.draw(st.booleans(), label="draft"))
    pipeline = T.Compose([decode, *per_pixel, data.draw(crops_of(height, width))], on=0)
    items = [(encode(photo(height, width, gray, i), "JPEG", data.draw), i) for i in range(length)]

    def run(**options):
        loader = DataLoader(items, transform=pipeline, collate_fn=list, seed=3, **options)
        return [item for batch in loader for item in batch]

    expected, got = run(), run(num_workers=num_workers, backend=backend)
    atol = tolerance(pipeline)
    for (image, label), (reference, _) in zip(got, expected, strict=True):
        assert image.shape == reference.shape, label
        np.testing.assert_allclose(image, reference, rtol=0, atol=atol, err_msg=f"item {label}")


signatures = st.sampled_from([b"", b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n", b"RIFF\0\0\0\0WEBP"])


@given(
    prefix=signatures,
    tail=st.binary(max_size=64),
    bad=st.integers(0, 7),
    num_workers=st.integers(1, 3),
)
def test_bytes_that_are_no_image_raise_for_their_item(backend, prefix, tail, bad, num_workers):
    items = [png(np.full((4, 5, 3), i, np.uint8)) for i in range(8)]
    items[bad] = prefix + tail
    loader = DataLoader(
        items,
        batch_size=2,
        num_workers=num_workers,
        backend=backend,
        transform=T.Compose([T.Decode(max_pixels=10**4)]),
    )
    with pytest.raises(T.ImageDecodeError) as raised:
        list(loader)
    assert raised.value.index == bad
    assert str(raised.value).startswith(f"transform of item {bad}: ")
