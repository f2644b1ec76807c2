"""Workload 9: JPEG files through a training pipeline, natively (``transform=`` a
pipeline) against the same pipeline in Pillow in ``__getitem__``, on each loader;
once with the ImageNet recipe, once with ``ColorJitter`` added (9b)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import peers
from measure import Entry, Table, count_pairs, rates_table
from photos import JpegFiles, PillowJitterPipeline, PillowPipeline, stack_pairs, write_jpegs

from dataloader_api import DataLoader
from dataloader_api import transforms as T

NORMALIZE = T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])


def images(s: Any) -> list[Table]:
    """``s``: workloads.Settings (names, runs, scale)."""
    crop = [T.Decode(), T.ToRGB(), T.RandomResizedCrop(224), T.RandomHFlip()]
    recipe = T.Compose([*crop, T.ToFloat(), NORMALIZE, T.ToCHW()], on=0)
    jitter = T.ColorJitter(0.4, 0.4, 0.4, 0.1)
    jittered = T.Compose([*crop, jitter, T.ToFloat(), NORMALIZE, T.ToCHW()], on=0)
    with tempfile.TemporaryDirectory() as folder:
        origin, paths = write_jpegs(Path(folder), 512 // s.scale)
        files = [str(p) for p in paths]
        what = f"{len(files)} JPEG files of 500x375 from {origin}, decode, random resized crop 224"
        plain = _table(
            s, files, "images", recipe, PillowPipeline,
            f"9. Images: {what}, random flip, normalize to CHW float32, batch 64",
            peers_too=True,
        )  # fmt: skip
        colour = _table(
            s, files, "images_jitter", jittered, PillowJitterPipeline,
            f"9b. Images: {what}, random flip, ColorJitter(0.4, 0.4, 0.4, 0.1), normalize "
            "to CHW float32, batch 64",
            peers_too=False,
        )  # fmt: skip
    return [plain, colour]


def _table(
    s: Any, files: list[str], id: str, pipeline: T.Compose, pillow_class: type,
    title: str, peers_too: bool,
) -> Table:  # fmt: skip
    jpegs, pillow = JpegFiles(files), pillow_class(files)

    def ours(dataset: Any, name: str | None, workers: int, **kw: Any) -> Entry:
        loader = DataLoader(dataset, batch_size=64, num_workers=workers, backend=name,
                            persistent_workers=workers > 0, seed=0, **kw)  # fmt: skip
        return Entry(label(name, workers, kw), count_pairs(loader), workers)

    def label(name: str | None, workers: int, kw: dict[str, Any]) -> str:
        how = "transforms pipeline" if kw else "Pillow in __getitem__"
        where = f"{name}, {workers} workers" if workers else "calling thread"
        return f"{how}: {where}"

    native = {"transform": pipeline, "collate_fn": T.ImageCollate(on=0)}
    entries: list[Entry | None] = [ours(pillow, None, 0)]
    for workers in (1, 2):
        entries += [ours(jpegs, name, workers, **native) for name in s.names]
        entries += [ours(pillow, name, workers) for name in s.names]
        torch = peers.torch_entry(pillow, workers, 64, count_pairs)
        found = [torch]
        if peers_too:
            found.append(peers.rs_entry(pillow, workers, 64, stack_pairs, count_pairs))
        for entry in found:
            if entry is not None:
                entry.label = f"Pillow in __getitem__: {entry.label}"
        entries += found
    reference = (label(None, 0, {}), [])
    return rates_table(id, "images", title, entries, s.runs, reference)
