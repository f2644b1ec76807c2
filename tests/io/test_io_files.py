"""FileDataset and the ways of naming each item's location."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dataloader_api import DataLoader
from dataloader_api.io import FileDataset, HttpDataset, ItemTooLargeError, Locations


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for split in ("train", "val"):
        (tmp_path / split).mkdir()
        for i in range(20):
            (tmp_path / split / f"{i:08d}.bin").write_bytes(f"{split}-{i}".encode() * (i + 1))
    return tmp_path


def expected(split: str, i: int) -> bytes:
    return f"{split}-{i}".encode() * (i + 1)


def test_template_list_and_function_read_each_file_once(tree, io_mode):
    backend = io_mode
    template = FileDataset("{root}/{split}/{index:08d}.bin", columns={"root": str(tree),
                           "split": "train"}, length=20)  # fmt: skip
    listed = FileDataset([tree / "val" / f"{i:08d}.bin" for i in range(20)])
    function = FileDataset(lambda i: f"{tree}/train/{19 - i:08d}.bin", length=20)
    workers = 0 if backend is None else 2
    for data, want in (
        (template, [expected("train", i) for i in range(20)]),
        (listed, [expected("val", i) for i in range(20)]),
        (function, [expected("train", 19 - i) for i in range(20)]),
    ):
        loader = DataLoader(data, batch_size=3, num_workers=workers, backend=backend,
                            collate_fn=list)  # fmt: skip
        assert [item for batch in loader for item in batch] == want


def test_per_item_columns(tree):
    splits = ["train", "val"] * 10
    data = FileDataset("{root}/{split}/{n:08d}.bin",
                       columns={"root": str(tree), "split": splits, "n": range(20)})  # fmt: skip
    assert [data[i] for i in range(20)] == [expected(splits[i], i) for i in range(20)]


def test_errors_keep_their_type_and_name_the_path_and_index(tree, reads):
    data = FileDataset([str(tree / "train" / "00000005.bin"), str(tree / "missing.bin"),
                        str(tree / "train")], max_bytes=20)  # fmt: skip

    with pytest.raises(FileNotFoundError) as raised:
        list(DataLoader(data, batch_size=None, sampler=[1], num_workers=1, backend=reads))
    assert raised.value.filename == str(tree / "missing.bin")
    assert "item 1" in str(raised.value) and "missing.bin" in str(raised.value)
    with pytest.raises(IsADirectoryError, match="item 2"):
        list(DataLoader(data, batch_size=None, sampler=[2], num_workers=1, backend=reads))
    with pytest.raises(FileNotFoundError, match="item 1"):
        data[1]  # outside a loader: the reference
    with pytest.raises(
        ItemTooLargeError, match=r"item 0: .*5\.bin: 42 bytes, more than max_bytes=20"
    ):
        FileDataset([str(tree / "train" / "00000005.bin")], max_bytes=20)[0]
    loader = DataLoader(data, batch_size=2, num_workers=2, backend=reads, collate_fn=list)
    with pytest.raises(ItemTooLargeError, match=r"item 0: .*: 42 bytes, more than max_bytes=20"):
        list(loader)


def test_empty_file_and_negative_index(tmp_path):
    (tmp_path / "empty").write_bytes(b"")
    data = FileDataset([str(tmp_path / "empty"), os.devnull])
    assert data[0] == b"" and data[-2] == b""


def test_locations_checks_name_what_is_wrong():
    with pytest.raises(ValueError, match=r"uses \{split\}, which is not in columns="):
        Locations("{root}/{split}", columns={"root": "/r"}, length=3)
    with pytest.raises(ValueError, match=r"columns\['b'\] has 2 items, expected 3"):
        Locations("{a}{b}", columns={"a": [1, 2, 3], "b": [1, 2]})
    with pytest.raises(TypeError, match="has no per-item column: pass length="):
        Locations("{root}/x", columns={"root": "/r"})
    with pytest.raises(TypeError, match="is a function of the index: pass length="):
        Locations(lambda i: str(i))
    with pytest.raises(TypeError, match=r"locations\[1\] must be a str, got int \(5\)"):
        Locations(["a", 5])
    with pytest.raises(ValueError, match=r"columns\['c'\] is not used by the template"):
        Locations("{index}", columns={"c": [1]}, length=1)
    with pytest.raises(ValueError, match="could not be filled for index 0"):
        Locations("{index:q}", length=2)
    with pytest.raises(TypeError, match="returned int"):
        Locations(lambda i: i, length=2).of(0)
    with pytest.raises(ValueError, match=r"max_bytes must be an int >= 0 or None, got -1"):
        FileDataset(["a"], max_bytes=-1)
    with pytest.raises(TypeError, match="FileDataset indices must be integers, not str"):
        FileDataset(["a"])["0"]


def test_url_templates_percent_encode_column_strings():
    data = HttpDataset("http://127.0.0.1:1/{root}/{name}",
                       columns={"root": "a b", "name": ["x y/z.jpg", "ü?#"]})  # fmt: skip
    assert data.locations.of(0) == "http://127.0.0.1:1/a b/x%20y/z.jpg"  # constants as given
    assert data.locations.of(1) == "http://127.0.0.1:1/a b/%C3%BC%3F%23"


def test_max_concurrency_caps_native_file_reads_or_warns(tree, reads):
    data = FileDataset([str(tree / "train" / f"{i:08d}.bin") for i in range(20)])
    loader = DataLoader(data, batch_size=5, num_workers=2, max_concurrency=1, backend=reads,
                        collate_fn=list)  # fmt: skip
    if reads == "rust":
        assert [x for b in loader for x in b] == [expected("train", i) for i in range(20)]
    else:
        with pytest.warns(UserWarning, match="max_concurrency=1 is not applied: threads reads"):
            assert len([x for b in loader for x in b]) == 20
    with pytest.raises(ValueError, match="event_loop='asyncio' applies only to async datasets"):
        DataLoader(data, num_workers=2, event_loop="asyncio")


def test_items_in_parallel_reads_each_file_once(tree, monkeypatch):
    """Native reads with ``items_in_parallel``: each item is read once. (Each was
    read twice: once as its job was taken, again by its own item read.)"""
    rust = pytest.importorskip("dataloader_rust")
    open_reader = rust.RustBackend.open_reader
    started: list[bytes] = []

    class CountingReader:
        def __init__(self, reader):
            self._reader = reader

        def start(self, locations, cancel):
            started.extend(locations)
            return self._reader.start(locations, cancel)

        def __getattr__(self, name):
            return getattr(self._reader, name)

    monkeypatch.setattr(
        rust.RustBackend, "open_reader", lambda self, *a: CountingReader(open_reader(self, *a))
    )
    paths = [tree / "val" / f"{i:08d}.bin" for i in range(20)]
    loader = DataLoader(FileDataset(paths), batch_size=4, num_workers=2, backend="rust",
                        items_in_parallel=2, collate_fn=list)  # fmt: skip
    assert [item for batch in loader for item in batch] == [expected("val", i) for i in range(20)]
    assert sorted(started) == sorted(os.fsencode(path) for path in paths)
