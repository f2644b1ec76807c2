"""``DataLoader(transform=...)``: where it runs, what it is given, and the seeds of
a pipeline's random ops (same seed, same images: any backend, any worker count)."""

from __future__ import annotations

import io
import json
import threading

import numpy as np
import pytest

import dataloader_api
from dataloader_api import DataLoader, IterableDataset, get_worker_info
from dataloader_api import transforms as T

Image = pytest.importorskip("PIL.Image", reason="Pillow: pip install 'dataloader-api[images]'")

BACKENDS = [b for b in ("threads", "rust", "cffi") if b in dataloader_api.backends()]


def jpeg_items(count: int = 24) -> list[tuple[bytes, int]]:
    rng = np.random.default_rng(1)
    items = []
    for label in range(count):
        buffer = io.BytesIO()
        shape = (30 + label % 7, 40 + label % 5, 3)
        Image.fromarray(rng.integers(0, 256, shape, np.uint8)).save(buffer, "JPEG")
        items.append((buffer.getvalue(), label))
    return items


PIPELINE = T.Compose(
    [T.Decode(), T.RandomResizedCrop(16), T.RandomHFlip(), T.RandomVFlip(), T.ToFloat(),
     T.Normalize([0.5], [0.25]), T.ToCHW()],
    on=0,
)  # fmt: skip


def epoch(loader) -> list[tuple[np.ndarray, list[int]]]:
    return [(images.copy(), labels.tolist()) for images, labels in loader]


def same(a, b) -> bool:
    return len(a) == len(b) and all(
        la == lb and np.array_equal(ia, ib) for (ia, la), (ib, lb) in zip(a, b, strict=True)
    )


def loader(items, **options) -> DataLoader:
    options.setdefault("batch_size", 5)
    return DataLoader(items, transform=PIPELINE, collate_fn=T.ImageCollate(on=0), **options)


@pytest.mark.parametrize("backend", BACKENDS)
def test_same_seed_same_images_on_every_backend_and_worker_count(backend):
    items = jpeg_items()
    reference = epoch(loader(items, seed=3, shuffle=True))
    assert [label for _, labels in reference for label in labels] != list(range(24))
    for workers in (1, 2, 3):
        got = epoch(
            loader(items, seed=3, shuffle=True, num_workers=workers, backend=backend, in_order=True)
        )
        assert same(got, reference), (backend, workers)
    other_seed = epoch(loader(items, seed=4, shuffle=True))
    assert not same(other_seed, reference)


def test_each_epoch_draws_new_augmentations_and_a_resumed_epoch_the_same():
    items = jpeg_items()
    original = loader(items, seed=0, num_workers=2, persistent_workers=True)
    first, second = epoch(original), epoch(original)
    assert [labels for _, labels in first] == [labels for _, labels in second]
    assert not same(first, second)  # the order is fixed, the augmentations are not

    fresh = loader(items, seed=0, num_workers=2)
    epoch(fresh)
    iterator = iter(fresh)
    taken = [next(iterator) for _ in range(2)]
    state = json.loads(json.dumps(fresh.state_dict()))
    rest = epoch(iterator)
    resumed = loader(items, seed=0, num_workers=1)
    resumed.load_state_dict(state)
    assert same(epoch(resumed), rest)
    assert same([(images.copy(), labels.tolist()) for images, labels in taken] + rest, second)


def test_a_python_transform_runs_on_the_workers_with_each_index():
    calls = []
    lock = threading.Lock()

    def transform(index, item):
        with lock:
            calls.append((index, item, get_worker_info() is not None))
        return item * 10

    data = list(range(100, 120))
    got = DataLoader(data, batch_size=4, num_workers=2, transform=transform, shuffle=True, seed=1)
    assert sorted(x for batch in got for x in batch.tolist()) == [x * 10 for x in data]
    assert sorted(calls) == [(i, 100 + i, True) for i in range(20)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_transform_applies_to_items_fetched_in_parallel_and_without_batching(backend):
    data = list(range(30))
    options = {"num_workers": 2, "backend": backend, "transform": lambda i, x: (i, x + 1)}
    unbatched = DataLoader(data, batch_size=None, **options)
    assert [tuple(b) for b in unbatched] == [(i, i + 1) for i in range(30)]

    class WithGetitems(list):
        def __getitems__(self, indices):
            return [self[i] for i in indices]

    batched = DataLoader(WithGetitems(data), batch_size=6, **options)
    assert [x for b in batched for x in b[1].tolist()] == [i + 1 for i in range(30)]


def test_a_transform_sees_an_iterable_workers_items_by_position():
    class Stream(IterableDataset):
        def __iter__(self):
            info = get_worker_info()
            start, step = (0, 1) if info is None else (info.id, info.num_workers)
            return iter(range(start, 12, step))

    seen = []
    items = DataLoader(
        Stream(), batch_size=None, num_workers=2, transform=lambda p, x: seen.append(p) or x
    )
    assert sorted(items) == list(range(12))
    assert sorted(seen) == sorted(list(range(6)) * 2)


def test_a_bad_transform_is_refused_by_name():
    with pytest.raises(TypeError, match=r"transform=3\b"):
        DataLoader([1, 2], transform=3)
    with pytest.raises(TypeError, match=r"transform=HFlip\(\).*Compose\(\[op\]\)"):
        DataLoader([1, 2], transform=T.HFlip())


def test_corrupt_bytes_fail_for_their_index_through_the_loader():
    items = jpeg_items(8)
    items[5] = (b"not an image", 5)
    with pytest.raises(T.ImageDecodeError, match="transform of item 5: the bytes are not"):
        list(loader(items, num_workers=2, batch_size=2))


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_item_without_the_image_is_named_on_every_backend(backend):
    """Compose(on="image") over items that have no "image": the error names the item."""
    pytest.importorskip("PIL")
    pipeline = T.Compose([T.HFlip()], on="image")

    class NoImage:
        def __len__(self) -> int:
            return 4

        def __getitem__(self, index: int) -> dict:
            return {"label": index}

    loader = DataLoader(NoImage(), batch_size=2, num_workers=2, transform=pipeline, backend=backend)
    with pytest.raises(TypeError, match=r"but item 0 is dict without it"):
        next(iter(loader))


def _outcome(items, pipeline, backend):
    try:
        batches = DataLoader(items, batch_size=2, num_workers=1, backend=backend,
                             transform=pipeline, collate_fn=list)  # fmt: skip
        return [(image.dtype, image.shape, image.tobytes()) for b in batches for image in b]
    except Exception as error:
        return (type(error), str(error))


@pytest.mark.parametrize(
    "image, ops, start",
    [
        (np.full((6, 5, 3), 0.25, np.float32), [T.ToRGB()], "uint8"),
        (np.full((6, 5, 3), 0.25, np.float32), [T.ToGray()], "uint8"),
        (np.full((6, 5, 3), 0.25, np.float32), [T.ToFloat()], "uint8"),
        (np.full((6, 5, 3), 9, np.uint8), [T.Normalize([0.5], [0.25])], "float32"),
        (np.zeros((6, 5, 0), np.uint8), [T.ToRGB()], "uint8"),
        (np.zeros((6, 5, 0), np.uint8), [T.ToGray(), T.ToFloat()], "uint8"),
    ],
    ids=["f32-to-rgb", "f32-to-gray", "f32-to-float", "u8-normalize", "0ch-to-rgb", "0ch-gray"],
)
def test_an_image_the_native_ops_do_not_take_gets_the_references_outcome(image, ops, start):
    """A dtype or channel count the pipeline was not declared for: every backend
    gives the reference's image or error (rust raised 'internal error (Rust panic)')."""
    pipeline = T.Compose(ops, start=start)
    reference = _outcome([image, image], pipeline, "threads")
    for backend in BACKENDS:
        assert _outcome([image, image], pipeline, backend) == reference, backend


PILLOW_13 = tuple(int(part) for part in Image.__version__.split(".")[:2]) >= (13, 0)

# (height, width) -> (out_h, out_w): both pass orders, as Pillow 13 picks them.
RESIZES = [((64, 48), (30, 20)), ((56, 46), (37, 68)), ((70, 35), (11, 34)), ((21, 78), (3, 27))]


@pytest.mark.skipif(not PILLOW_13, reason="Pillow 13 set the pass order the reference follows")
@pytest.mark.parametrize("interpolation", T.INTERPOLATIONS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_resize_equals_pillows_resize_with_every_filter(backend, interpolation):
    """Bicubic and lanczos differed from ``Image.resize`` by up to 14 and 27 where
    Pillow runs the vertical pass first; every filter now equals it exactly."""
    rng = np.random.default_rng(7)
    images = [rng.integers(0, 256, (h, w, 3), np.uint8) for (h, w), _ in RESIZES]
    resample = getattr(Image.Resampling, interpolation.upper())
    for image, (_, (out_h, out_w)) in zip(images, RESIZES, strict=True):
        pipeline = T.Compose([T.Resize((out_h, out_w), interpolation)])
        (batch,) = DataLoader([image], batch_size=1, num_workers=1, backend=backend,
                              transform=pipeline, collate_fn=list)  # fmt: skip
        got = batch[0]
        expected = np.asarray(Image.fromarray(image).resize((out_w, out_h), resample))
        np.testing.assert_array_equal(got, expected, err_msg=f"{image.shape} -> {expected.shape}")


@pytest.mark.parametrize(
    "image, op",
    [
        (np.zeros((6, 0, 3), np.uint8), T.Resize(4)),
        (np.zeros((0, 6, 3), np.uint8), T.Resize((3, 3))),
        (np.zeros((0, 6, 3), np.uint8), T.RandomResizedCrop(4)),
        (np.zeros((6, 6, 0), np.uint8), T.Resize(4)),
        (np.zeros((6, 6, 0), np.uint8), T.RandomResizedCrop(4)),
    ],
    ids=["resize-int-no-width", "resize-pair-no-height", "random-resized-crop",
         "resize-no-channels", "random-resized-crop-no-channels"],
)  # fmt: skip
def test_resizing_an_empty_image_names_the_item_on_every_backend(image, op):
    """It raised a bare ZeroDivisionError, Pillow's error or (no channels) NumPy's
    "need at least one array to stack", without the item."""
    pipeline = T.Compose([op])
    for backend in BACKENDS:
        error, message = _outcome([image, image], pipeline, backend)
        assert error is T.TransformError, (backend, error, message)
        assert message.startswith("transform of item 0: ") and (
            "empty image" in message or "without channels" in message
        )


def test_color_jitter_equals_the_reference_on_every_colour():
    """Hue goes through PIL's HSV and back, in floats: all 256 x 256 x 86 colours
    (every third blue) under shifts of both signs give the reference's pixels."""
    levels = np.arange(256)
    cube = np.stack(np.meshgrid(levels, levels, levels[::3], indexing="ij"), -1)
    image = cube.reshape(256, -1, 3).astype(np.uint8)
    pipeline = T.Compose([T.ColorJitter(brightness=0.3, saturation=0.5, hue=0.5)])

    def run(backend: str) -> list[np.ndarray]:
        loader = DataLoader([image] * 3, batch_size=2, num_workers=1, backend=backend,
                            transform=pipeline, collate_fn=list, seed=5)  # fmt: skip
        return [item for batch in loader for item in batch]

    reference = run("threads")
    assert not np.array_equal(reference[0], reference[1])  # each item its own draws
    for backend in BACKENDS:
        for got, expected in zip(run(backend), reference, strict=True):
            np.testing.assert_array_equal(got, expected, err_msg=backend)
