"""``dataloader_api.shards``: tar shards indexed once and read as a map-style
dataset, their errors, and ``ShardSampler``'s order, through every backend."""

from __future__ import annotations

import io
import itertools
import pickle
from pathlib import Path

import pytest
from shard_files import make_shards, sample_members, write_shard

import dataloader_api
from dataloader_api import DataLoader
from dataloader_api.shards import ShardError, ShardSampler, TarShards, expand_braces

BACKENDS = [n for n in dataloader_api.backends() if not n.startswith("broken-")]


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch) -> Path:
    """Shard indexes kept in a folder of this test's, not the user's cache."""
    folder = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("DATALOADER_CACHE_DIR", str(folder))
    return folder / "tar-index"


def test_brace_patterns():
    assert expand_braces("a-{000..002}.tar") == ["a-000.tar", "a-001.tar", "a-002.tar"]
    assert expand_braces("x{1..7..3}") == ["x1", "x4", "x7"]
    assert expand_braces("{a,b}-{8..10}") == ["a-8", "a-9", "a-10", "b-8", "b-9", "b-10"]
    assert expand_braces("{09..11}") == ["09", "10", "11"]
    assert expand_braces("{a}") == ["{a}"]  # not a pattern, as braceexpand keeps it
    with pytest.raises(ValueError, match="unbalanced"):
        expand_braces("a-{0..3.tar")


def test_samples_group_by_key_with_fields_by_extension(tmp_path):
    pattern = make_shards(tmp_path, 3, [4, 0, 5])
    dataset = TarShards(pattern, decoders={"cls": "int", "meta.json": "json"})
    assert len(dataset) == 9
    assert dataset.shard_sizes == (4, 0, 5)
    for index in range(9):
        sample = dataset[index]
        assert sample["__key__"] == f"s/{index:05d}"
        assert sample["__url__"] == dataset.shards[0 if index < 4 else 2]
        assert sample["jpg"] == bytes([index % 251]) * (index % 7 + 1)
        assert sample["cls"] == index  # the extension is lowercased, as webdataset does
        assert sample["meta.json"] == {"key": index}
    assert dataset[-1]["cls"] == 8
    assert pickle.loads(pickle.dumps(dataset))[5] == dataset[5]


def test_skipped_members_are_those_webdataset_skips(tmp_path):
    write_shard(
        tmp_path / "a.tar",
        [
            ("__meta__", b"x"),  # webdataset's metadata
            ("noextension", b"x"),
            ("k1.txt", b"one"),
            ("__skip__/k1.txt", b"x"),
            ("k2.txt", b"two"),
        ],
    )
    dataset = TarShards(str(tmp_path / "a.tar"), decoders={"txt": "text"})
    assert [dataset[i]["txt"] for i in range(len(dataset))] == ["one", "two"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_sample_once_through_the_loader(tmp_path, backend):
    dataset = TarShards(make_shards(tmp_path, 4, 6), decoders={"cls": "int"})
    loader = DataLoader(dataset, batch_size=5, shuffle=True, num_workers=2, backend=backend)
    labels = [label for batch in loader for label in batch["cls"].tolist()]
    assert sorted(labels) == list(range(24))


def test_missing_shard_is_named(tmp_path):
    make_shards(tmp_path, 2, 2)
    with pytest.raises(FileNotFoundError, match="tar shard not found") as caught:
        TarShards(str(tmp_path / "train-{000..002}.tar"))
    assert caught.value.filename == str(tmp_path / "train-002.tar")


def test_a_truncated_shard_names_shard_and_offset(tmp_path):
    make_shards(tmp_path, 1, 3)
    path = tmp_path / "train-000.tar"
    data = path.read_bytes()
    path.write_bytes(data[:1600])  # inside the second sample's data
    with pytest.raises(ShardError, match="unexpected end of data") as caught:
        TarShards(str(path))
    assert caught.value.shard == str(path) and caught.value.offset > 0


def test_a_corrupt_header_past_the_first_is_an_error_not_a_short_shard(tmp_path):
    make_shards(tmp_path, 1, 3)
    path = tmp_path / "train-000.tar"
    data = bytearray(path.read_bytes())
    second = TarShards(str(path))._indexes[0].samples[1]
    header = second.fields[0][1] - 512
    data[header + 100 : header + 108] = b"garbage!"  # the mode field: checksum fails
    path.write_bytes(bytes(data))
    with pytest.raises(ShardError, match="not a valid tar header") as caught:
        TarShards(str(path))
    assert caught.value.offset == header


def test_a_field_twice_in_a_sample_is_an_error(tmp_path):
    write_shard(tmp_path / "d.tar", [("k.jpg", b"a"), ("k.JPG", b"b")])
    with pytest.raises(ShardError, match="second 'jpg' field of sample 'k'"):
        TarShards(str(tmp_path / "d.tar"))


def test_a_shard_changed_since_indexed_is_an_error(tmp_path):
    dataset = TarShards(make_shards(tmp_path, 1, 2))
    write_shard(tmp_path / "train-000.tar", sample_members(0))
    with pytest.raises(ShardError, match="changed since it was indexed"):
        dataset[0]


@pytest.mark.parametrize(
    ("arguments", "error", "match"),
    [
        ({"shards": 3}, TypeError, "shards should be a brace pattern"),
        ({"shards": []}, ValueError, "names no shard"),
        ({"shards": "x.tar", "decoders": ["int"]}, TypeError, "decoders should map"),
        ({"shards": "x.tar", "decoders": {"CLS": "int"}}, ValueError, "lower case"),
        ({"shards": "x.tar", "decoders": {"cls": "float"}}, ValueError, "'float' is not a known"),
        ({"shards": "x.tar", "decoders": {"cls": 3}}, TypeError, r"decoders\['cls'\]"),
        ({"shards": "x.tar", "index_cache": 1}, TypeError, "index_cache should be a folder"),
    ],
)
def test_bad_arguments_are_named(arguments, error, match):
    with pytest.raises(error, match=match):
        TarShards(**arguments)


def test_a_function_given_as_shards_is_called_once(tmp_path):
    pattern = make_shards(tmp_path, 2, 3)
    calls: list[str] = []
    dataset = TarShards(lambda: calls.append(pattern) or pattern)
    assert len(calls) == 1
    assert len(dataset) == 6
    with pytest.raises(ValueError, match=r"not the location 's3://b/x\.tar'"):
        TarShards(lambda: ["s3://b/x.tar"])


def test_bad_indices_are_named(tmp_path):
    dataset = TarShards(make_shards(tmp_path, 1, 2))
    with pytest.raises(IndexError, match="index 2 is out of range for 2 items"):
        dataset[2]
    with pytest.raises(TypeError, match="must be integers, not str"):
        dataset["0"]


class Sized:
    def __init__(self, sizes):
        self.shard_sizes = sizes


def test_shard_sampler_gives_ranks_whole_shards_and_every_sample_once(tmp_path):
    sizes = [5] * 8  # shard s holds 5s .. 5s+4
    for epoch in range(3):
        seen: list[int] = []
        for rank in range(2):
            sampler = ShardSampler(Sized(sizes), seed=7, window=2, num_replicas=2, rank=rank)
            sampler.set_epoch(epoch)
            indices = list(sampler)
            assert len(indices) == len(sampler) == 20
            shards = sampler.shards_of_epoch()
            assert {i // 5 for i in indices} == set(shards)  # whole shards, this rank's
            for group in range(0, 4, 2):  # shuffled only within a window of 2 shards
                window = indices[group * 5 : group * 5 + 10]
                assert {i // 5 for i in window} == set(shards[group : group + 2])
            seen += indices
        assert sorted(seen) == list(range(40))


def test_shard_sampler_order_is_seeded_by_seed_and_epoch():
    def order(seed, epoch):
        sampler = ShardSampler(Sized([3] * 6), seed=seed)
        sampler.set_epoch(epoch)
        return list(sampler)

    assert order(1, 0) == order(1, 0)
    assert order(1, 0) != order(1, 1) and order(1, 0) != order(2, 0)
    assert sorted(order(1, 1)) == list(range(18))
    plain = ShardSampler(Sized([2, 3]), shuffle=False)
    assert list(plain) == [0, 1, 2, 3, 4]


def test_a_shuffle_buffer_draws_each_sample_from_the_next_ones_as_they_stream():
    sizes = [30, 20, 30, 25, 30]  # shard s starts at sum(sizes[:s])
    starts = [0, 30, 50, 80, 105]
    for seed in range(3):
        sampler = ShardSampler(Sized(sizes), seed=seed, window=2, buffer=8)
        indices = list(sampler)
        assert sorted(indices) == list(range(135)) and indices == list(sampler)
        shards = sampler.shards_of_epoch()
        position = 0
        for first in range(0, 5, 2):
            group = shards[first : first + 2]
            count = sum(sizes[s] for s in group)
            drawn = indices[position : position + count]
            assert {next(s for s in range(4, -1, -1) if starts[s] <= i) for i in drawn} == set(
                group
            )
            # The group's shards streamed side by side: sample k of each is the
            # (k * shards + which)-th to arrive; none goes before it can have.
            streams = [range(starts[s], starts[s] + sizes[s]) for s in group]
            columns = itertools.zip_longest(*streams)
            arrived = [i for column in columns for i in column if i is not None]
            assert sorted(arrived) == sorted(drawn)
            assert all(arrived.index(index) <= k + 8 for k, index in enumerate(drawn))
            position += count
    assert list(ShardSampler(Sized([2, 3]), shuffle=False, buffer=2)) == [0, 1, 2, 3, 4]


def test_unequal_shards_pad_to_the_most_or_drop_to_the_fewest():
    sizes = [4, 4, 4, 1]
    padded = [ShardSampler(Sized(sizes), num_replicas=2, rank=r, seed=3) for r in range(2)]
    assert {len(list(s)) for s in padded} == {8} and all(len(s) == 8 for s in padded)
    assert set().union(*(set(s) for s in padded)) == set(range(13))  # nothing dropped
    trimmed = [
        ShardSampler(Sized(sizes), num_replicas=2, rank=r, seed=3, drop_last=True) for r in range(2)
    ]
    assert all(len(list(s)) == len(s) == 5 for s in trimmed)


@pytest.mark.parametrize(
    ("arguments", "error", "match"),
    [
        ({"dataset": [1, 2]}, TypeError, "needs a sharded dataset"),
        ({"window": 0}, ValueError, "window should be a positive number"),
        ({"seed": 1.5}, TypeError, "seed should be an int"),
        ({"num_replicas": 3}, ValueError, "2 shards for num_replicas=3"),
        ({"rank": 2, "num_replicas": 2}, ValueError, "Invalid rank 2"),
        ({"shuffle": "yes"}, TypeError, "shuffle should be a boolean"),
        ({"buffer": 0}, ValueError, "buffer should be a positive number of samples or None"),
        ({"buffer": 2.5}, ValueError, r"buffer=2\.5"),
    ],
)
def test_shard_sampler_bad_arguments_are_named(arguments, error, match):
    with pytest.raises(error, match=match):
        ShardSampler(**{"dataset": Sized([1, 1]), **arguments})


@pytest.mark.parametrize("backend", BACKENDS)
def test_resume_mid_epoch_with_the_shard_sampler(tmp_path, backend):
    dataset = TarShards(make_shards(tmp_path, 6, 4), decoders={"cls": "int"})

    def loader():
        sampler = ShardSampler(dataset, seed=5, window=2)
        sampler.set_epoch(1)
        return DataLoader(dataset, batch_size=3, sampler=sampler, num_workers=2, backend=backend)

    whole = [batch["cls"].tolist() for batch in loader()]
    first = loader()
    iterator = iter(first)
    taken = [next(iterator)["cls"].tolist() for _ in range(3)]
    state = first.state_dict()
    resumed = loader()
    resumed.load_state_dict(state)
    assert taken + [batch["cls"].tolist() for batch in resumed] == whole


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_ranks_with_distributed_true_split_every_sample(tmp_path, backend, monkeypatch):
    dataset = TarShards(make_shards(tmp_path, 3, 5), decoders={"cls": "int"})
    monkeypatch.setenv("WORLD_SIZE", "2")
    labels = []
    for rank in ("0", "1"):
        monkeypatch.setenv("RANK", rank)
        loader = DataLoader(dataset, batch_size=4, distributed=True, num_workers=2, backend=backend)
        labels += [label for batch in loader for label in batch["cls"].tolist()]
    # torch pads 15 to 16 with the first index of its order
    assert len(labels) == 16 and set(labels) == set(range(15))


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_image_pipeline_on_a_shards_jpg_field(tmp_path, backend):
    """transform=Compose(..., on="jpg") and ImageCollate(on="jpg") take the image
    from each sample's field, natively where the backend runs pipelines."""
    image = pytest.importorskip("PIL.Image", reason="Pillow: pip install 'dataloader-api[images]'")
    import numpy as np

    from dataloader_api import transforms as T

    members = []
    for key in range(6):
        encoded = io.BytesIO()
        image.new("RGB", (20 + key, 16), (40 * key, 90, 200 - 30 * key)).save(encoded, "JPEG")
        members += [(f"{key:03d}.jpg", encoded.getvalue()), (f"{key:03d}.cls", b"%d" % key)]
    write_shard(tmp_path / "images.tar", members)
    dataset = TarShards(str(tmp_path / "images.tar"), decoders={"cls": "int"})
    pipeline = T.Compose([T.Decode(), T.CenterCrop(12), T.ToFloat()], on="jpg")
    loader = DataLoader(
        dataset,
        batch_size=3,
        num_workers=2,
        backend=backend,
        transform=pipeline,
        collate_fn=T.ImageCollate(on="jpg"),
    )
    batches = list(loader)
    expected = np.stack([pipeline(dataset[i])["jpg"] for i in range(6)])
    assert np.array_equal(np.concatenate([b["jpg"] for b in batches]), expected)
    assert [label for b in batches for label in b["cls"].tolist()] == list(range(6))


def test_indexes_are_kept_and_read_again_when_a_shard_changes(tmp_path, private_cache, monkeypatch):
    from dataloader_api.shards import _dataset

    pattern = make_shards(tmp_path, 3, 4)
    first = TarShards(pattern, decoders={"cls": "int"})
    assert len(list(private_cache.glob("*.json"))) == 3
    scanned: list[str] = []
    real_scan = _dataset.scan_shard
    monkeypatch.setattr(
        _dataset, "scan_shard", lambda s, *more: scanned.append(s) or real_scan(s, *more)
    )
    again = TarShards(pattern, decoders={"cls": "int"})
    assert scanned == []  # every index came from the cache
    assert [again[i] for i in range(12)] == [first[i] for i in range(12)]
    write_shard(tmp_path / "train-001.tar", sample_members(4) + sample_members(5))
    (next(private_cache.glob("*.json"))).write_text("{not json")  # a damaged entry
    changed = TarShards(pattern, decoders={"cls": "int"})
    assert str(tmp_path / "train-001.tar") in scanned and len(scanned) <= 2
    assert changed.shard_sizes == (4, 2, 4)
    assert [changed[i]["cls"] for i in range(10)] == [0, 1, 2, 3, 4, 5, 8, 9, 10, 11]


def test_index_cache_false_keeps_nothing_and_an_unwritable_cache_warns(tmp_path, private_cache):
    pattern = make_shards(tmp_path, 2, 2)
    TarShards(pattern, index_cache=False)
    assert not private_cache.exists()
    blocked = tmp_path / "file"
    blocked.write_text("a file, not a folder")
    with pytest.warns(RuntimeWarning, match="cannot keep shard indexes in"):
        dataset = TarShards(pattern, index_cache=blocked / "cache")
    assert len(dataset) == 4
