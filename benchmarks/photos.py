"""Workload 9's data: JPEG files on disk, made from the colour photos
scikit-image ships (or, without it, from generated scenes), and the same
training pipeline written the usual way, with Pillow and NumPy in
``__getitem__`` (what torchvision's PIL path does for RandomResizedCrop).
"""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import numpy as np

MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)
HEIGHT, WIDTH = 375, 500  # the size of a typical ImageNet photo


def source_photos() -> tuple[str, list[np.ndarray]]:
    """Colour photos to cut the JPEGs from, and where they come from."""
    try:
        from skimage import data
    except ImportError:
        rng = np.random.default_rng(0)
        y, x = np.mgrid[0:HEIGHT, 0:WIDTH]
        scenes = []
        for i in range(4):
            scene = np.stack([(x + 7 * i) % 256, (y + 3 * i) % 256, (x + y + i) % 256], axis=2)
            scenes.append(np.clip(scene + rng.normal(0, 12, scene.shape), 0, 255).astype(np.uint8))
        return "generated scenes (scikit-image is not installed)", scenes
    names = ("astronaut", "chelsea", "coffee", "rocket", "hubble_deep_field", "retina")
    return "scikit-image's sample photos", [getattr(data, name)()[:, :, :3] for name in names]


def write_jpegs(folder: Path, count: int) -> tuple[str, list[Path]]:
    """``count`` JPEG files of 500x375 (quality 90): random windows of the photos,
    scaled up first where a photo is smaller."""
    from PIL import Image

    origin, photos = source_photos()
    rng = random.Random(0)
    paths = []
    for i in range(count):
        photo = Image.fromarray(photos[i % len(photos)])
        scale = max(HEIGHT / photo.height, WIDTH / photo.width, 1.0) * rng.uniform(1.0, 1.3)
        photo = photo.resize((math.ceil(photo.width * scale), math.ceil(photo.height * scale)))
        left, top = rng.randrange(photo.width - WIDTH + 1), rng.randrange(photo.height - HEIGHT + 1)
        window = photo.crop((left, top, left + WIDTH, top + HEIGHT))
        if rng.random() < 0.5:
            window = window.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        path = folder / f"{i:05d}.jpg"
        window.save(path, "JPEG", quality=90)
        paths.append(path)
    return origin, paths


class JpegFiles:
    """Item ``i``: (the bytes of file ``i``, its label), read from disk."""

    def __init__(self, paths: list[str]) -> None:
        super().__init__()  # dataloader-rs's PyDataset needs its __init__
        self.paths = paths
        self.args: tuple[Any, ...] = (paths,)

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int) -> Any:
        with open(self.paths[index], "rb") as file:
            return file.read(), index % 1000


def random_resized_crop_box(rng: random.Random, height: int, width: int) -> tuple[int, ...]:
    """torchvision's ``RandomResizedCrop.get_params`` (scale 0.08-1, ratio 3/4-4/3)."""
    area = height * width
    for _ in range(10):
        target = area * rng.uniform(0.08, 1.0)
        aspect = math.exp(rng.uniform(math.log(3 / 4), math.log(4 / 3)))
        w, h = round(math.sqrt(target * aspect)), round(math.sqrt(target / aspect))
        if 0 < w <= width and 0 < h <= height:
            return rng.randint(0, height - h), rng.randint(0, width - w), h, w
    return 0, 0, height, width


class PillowPipeline(JpegFiles):
    """The pipeline in ``__getitem__``: Pillow decode, random resized crop to 224
    (one Pillow resize over the box), random flip, float, normalize, CHW."""

    def __getitem__(self, index: int) -> Any:
        from PIL import Image

        rng = random.Random(index)
        with Image.open(self.paths[index]) as image:
            image = image.convert("RGB")
            top, left, h, w = random_resized_crop_box(rng, image.height, image.width)
            box = (left, top, left + w, top + h)
            image = image.resize((224, 224), Image.Resampling.BILINEAR, box)
        if rng.random() < 0.5:
            image = image.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        image = self.colour(image, rng)
        pixels = (np.asarray(image, np.float32) / np.float32(255) - MEAN) / STD
        return np.ascontiguousarray(pixels.transpose(2, 0, 1)), index % 1000

    def colour(self, image: Any, rng: random.Random) -> Any:
        return image


class PillowJitterPipeline(PillowPipeline):
    """The same, with torchvision's ``ColorJitter(0.4, 0.4, 0.4, 0.1)`` on PIL after
    the flip: its four adjustments in a random order, as torchvision runs them."""

    def colour(self, image: Any, rng: random.Random) -> Any:
        from PIL import Image, ImageEnhance

        steps = [0, 1, 2, 3]
        rng.shuffle(steps)
        for step in steps:
            if step == 3:
                hue, saturation, value = image.convert("HSV").split()
                shift = np.uint8(int(rng.uniform(-0.1, 0.1) * 255) % 256)
                shifted = Image.fromarray(np.asarray(hue, np.uint8) + shift, "L")
                image = Image.merge("HSV", (shifted, saturation, value)).convert("RGB")
            else:
                enhance = (ImageEnhance.Brightness, ImageEnhance.Contrast, ImageEnhance.Color)
                image = enhance[step](image).enhance(rng.uniform(0.6, 1.4))
        return image


def stack_pairs(batch: list[tuple[np.ndarray, int]]) -> tuple[np.ndarray, np.ndarray]:
    """dataloader-rs's collate for (image, label) items (it has no default one)."""
    return np.stack([image for image, _ in batch]), np.array([label for _, label in batch])
