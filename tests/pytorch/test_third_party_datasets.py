"""Datasets nobody here wrote, run by torch's loader and ours side by side (torch
session): Hugging Face map-style and iterable datasets, webdataset shards,
torchvision's ImageFolder with v2 transforms, and an h5py file opened lazily on
``self``. Each gives torch's items on every backend, with workers, persistent
or not."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed; run `nox -s torch_parity`")

import dataloader_api  # noqa: E402
from dataloader_api import DataLoader, torch_collate  # noqa: E402

BACKENDS = [n for n in dataloader_api.backends() if not n.startswith("broken-")]
WORKERS = [pytest.param(0, id="0-workers"), pytest.param(2, id="2-workers")]


def flat(loader, key=None) -> list:
    """Every item of one epoch, as plain Python values."""
    out = []
    for batch in loader:
        values = batch[key] if key is not None else batch
        out.extend(values.tolist() if hasattr(values, "tolist") else list(values))
    return out


def both(dataset, backend, key=None, **kwargs) -> tuple[list, list]:
    """(torch's items, ours on ``backend``) for the same dataset and arguments."""
    theirs = flat(torch.utils.data.DataLoader(dataset, **kwargs), key)
    ours = flat(DataLoader(dataset, collate_fn=torch_collate, backend=backend, **kwargs), key)
    return theirs, ours


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("num_workers", WORKERS)
def test_hugging_face_map_style(backend, num_workers):
    datasets = pytest.importorskip("datasets")
    data = datasets.Dataset.from_dict({"x": list(range(64)), "y": [i * i for i in range(64)]})
    data = data.with_format("torch")
    theirs, ours = both(data, backend, "y", batch_size=8, num_workers=num_workers)
    assert ours == theirs == [i * i for i in range(64)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("num_workers", WORKERS)
@pytest.mark.parametrize("persistent", [False, True])
def test_hugging_face_iterable(backend, num_workers, persistent):
    datasets = pytest.importorskip("datasets")
    data = datasets.Dataset.from_dict({"x": list(range(96))}).with_format("torch")
    stream = data.to_iterable_dataset(num_shards=4)
    persistent = persistent and num_workers > 0
    loader = DataLoader(
        stream,
        batch_size=8,
        num_workers=num_workers,
        persistent_workers=persistent,
        backend=backend,
        collate_fn=torch_collate,
    )
    theirs = flat(torch.utils.data.DataLoader(stream, batch_size=8, num_workers=num_workers), "x")
    for _ in range(2):
        assert sorted(flat(loader, "x")) == sorted(theirs) == list(range(96))
    loader.close()  # the workers end holding pyarrow objects: no crash
    assert loader.join(30)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("num_workers", WORKERS)
def test_webdataset_shards(tmp_path, backend, num_workers):
    wds = pytest.importorskip("webdataset")
    for shard in range(4):
        with wds.TarWriter(str(tmp_path / f"shard-{shard}.tar")) as sink:
            for i in range(10):
                key = shard * 10 + i
                sink.write({"__key__": f"{key:04d}", "cls": str(key).encode()})
    urls = str(tmp_path / "shard-{0..3}.tar")

    def labels(loader) -> list[int]:
        return sorted(int(label) for batch in loader for label in batch["cls"])

    pipeline = wds.WebDataset(urls, shardshuffle=False, empty_check=False).decode()
    theirs = labels(torch.utils.data.DataLoader(pipeline, batch_size=5, num_workers=num_workers))
    ours = labels(
        DataLoader(
            pipeline,
            batch_size=5,
            num_workers=num_workers,
            backend=backend,
            collate_fn=torch.utils.data.default_collate,
        )
    )
    assert ours == theirs == list(range(40))


def test_tar_shards_read_the_samples_webdataset_reads(tmp_path):
    """TarShards' samples, keys, URLs and fields equal webdataset's over the same
    shards, webdataset's brace pattern and member names included."""
    wds = pytest.importorskip("webdataset")
    braceexpand = pytest.importorskip("braceexpand")
    from dataloader_api.shards import TarShards, expand_braces

    for pattern in ["s-{000..011}.tar", "x{1..9..4}{a,b}", "{a,{b,c}}-{7..10}", "{a}", "z"]:
        assert expand_braces(pattern) == list(braceexpand.braceexpand(pattern))
    long_name = "deep/" * 30 + "sample"  # past ustar's 100 bytes: a pax header
    for shard in range(3):
        with wds.TarWriter(str(tmp_path / f"shard-{shard:02d}.tar")) as sink:
            for i in range(7):
                key = f"{long_name if i == 3 else 'k'}{shard}-{i}"
                sink.write(
                    {
                        "__key__": key,
                        "cls": str(i).encode(),
                        "JPG": bytes(range(i * 30 % 256)),
                        "meta.json": b'{"i": %d}' % i,
                    }
                )
    urls = str(tmp_path / "shard-{00..02}.tar")
    theirs = list(wds.WebDataset(urls, shardshuffle=False, empty_check=False))
    for sample in theirs:  # webdataset 1.0 repeats a local shard's __url__ here
        assert sample.pop("__local_path__") == sample["__url__"]
    ours = TarShards(urls)
    assert len(ours) == len(theirs) == 21
    assert [ours[i] for i in range(len(ours))] == theirs


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("num_workers", WORKERS)
def test_torchvision_image_folder_with_v2_transforms(tmp_path, backend, num_workers):
    pytest.importorskip("torchvision")
    image = pytest.importorskip("PIL.Image")
    from torchvision import datasets
    from torchvision.transforms import v2

    for label in ("cat", "dog"):
        (tmp_path / label).mkdir()
        for i in range(6):
            colour = (40 * i, 200 if label == "cat" else 10, 7 * i)
            image.new("RGB", (12 + i, 10), colour).save(tmp_path / label / f"{i}.png")
    transform = v2.Compose(
        [v2.ToImage(), v2.Resize((8, 8), antialias=True), v2.ToDtype(torch.float32, scale=True)]
    )
    folder = datasets.ImageFolder(str(tmp_path), transform=transform)
    theirs = list(torch.utils.data.DataLoader(folder, batch_size=4, num_workers=num_workers))
    ours = list(
        DataLoader(
            folder,
            batch_size=4,
            num_workers=num_workers,
            backend=backend,
            collate_fn=torch_collate,
        )
    )
    assert len(ours) == len(theirs) == 3
    for (our_images, our_labels), (their_images, their_labels) in zip(ours, theirs, strict=True):
        assert torch.equal(our_images, their_images)
        assert torch.equal(our_labels, their_labels)


class LazyH5:
    """h5py opened lazily on ``self``, the idiom written for torch's worker processes."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.file = None

    def __len__(self) -> int:
        return 200

    def __getitem__(self, index: int):
        import h5py

        if self.file is None:
            self.file = h5py.File(self.path, "r")
        return self.file["values"][index]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("num_workers", WORKERS)
def test_h5py_opened_lazily_on_self(tmp_path, backend, num_workers):
    h5py = pytest.importorskip("h5py")
    np = pytest.importorskip("numpy")
    path = str(tmp_path / "values.h5")
    with h5py.File(path, "w") as out:
        out["values"] = np.arange(200 * 3).reshape(200, 3)
    theirs, ours = both(LazyH5(path), backend, batch_size=16, num_workers=num_workers)
    assert [list(row) for row in ours] == [list(row) for row in theirs]
    assert len(ours) == 200 and ours[199] == [597, 598, 599]
