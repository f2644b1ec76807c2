"""Every sample right, or a loud error (issue 43): a tar cut where a member's
header would start, a companion index that leaves samples out or belongs to
another shard, and a sample missing a field are errors naming what is wrong,
locally and over HTTP; ``allow_truncated=`` and ``optional_fields=`` say
otherwise explicitly; ``default_collate`` never drops a key."""

from __future__ import annotations

import io
import os
import shutil
import tarfile
from pathlib import Path

import pytest
from shard_files import make_shards, sample_members, write_shard
from test_shards import BACKENDS, private_cache  # noqa: F401 (a fixture)
from test_shards_companion import write_dali_index

from dataloader_api import DataLoader, default_collate
from dataloader_api.io.loopback import LoopbackServer
from dataloader_api.shards import ShardError, TarShards

WORKERS = [0, 2]


def header_of(path: Path, sample: int) -> int:
    """Where sample ``sample``'s first member's header is in the shard at ``path``."""
    with tarfile.open(path) as tar:
        members = [m for m in tar if m.isreg()]
    return members[3 * sample].offset  # make_shards writes 3 members per sample


def cut_shard(tmp_path: Path, samples: int, keep: int) -> Path:
    """A shard of ``samples`` samples cut where sample ``keep``'s header starts."""
    make_shards(tmp_path, 1, samples)
    path = tmp_path / "train-000.tar"
    data = path.read_bytes()
    path.write_bytes(data[: header_of(path, keep)])
    return path


def labels_through_loader(dataset, backend, workers) -> list[int]:
    loader = DataLoader(dataset, batch_size=2, num_workers=workers, backend=backend)
    return [label for batch in loader for label in batch["cls"].tolist()]


# a. a tar cut at a sample boundary


@pytest.mark.parametrize("index_cache", [False, None])
def test_a_tar_cut_at_a_sample_boundary_is_an_error(tmp_path, index_cache):
    path = cut_shard(tmp_path, 5, 3)
    with tarfile.open(path) as tar:
        assert len(tar.getmembers()) == 9  # tarfile reads it quietly: 3 samples
    with pytest.raises(ShardError, match="without its end-of-archive block") as caught:
        TarShards(str(path), index_cache=index_cache)
    message = str(caught.value)
    assert str(path) in message and caught.value.offset == path.stat().st_size
    assert "the last whole sample there is 's/00001' ('s/00002' after it" in message
    assert "allow_truncated=True" in message


def test_a_tar_cut_between_a_samples_members_names_the_last_whole_sample(tmp_path):
    make_shards(tmp_path, 1, 4)
    path = tmp_path / "train-000.tar"
    with tarfile.open(path) as tar:
        cls_of_2 = next(m for m in tar if m.name == "s/00002.CLS").offset
    path.write_bytes(path.read_bytes()[:cls_of_2])  # sample 2 keeps its jpg only
    with pytest.raises(ShardError, match="last whole sample there is 's/00001'"):
        TarShards(str(path), index_cache=False)


def test_a_tar_cut_inside_its_end_block_is_an_error(tmp_path):
    make_shards(tmp_path, 1, 2)
    path = tmp_path / "train-000.tar"
    end = header_of(path, 1) + 3 * 1024  # past sample 1's three one-block members
    path.write_bytes(path.read_bytes()[: end + 100])
    with pytest.raises(ShardError, match="inside its end-of-archive block"):
        TarShards(str(path), index_cache=False)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("workers", WORKERS)
def test_allow_truncated_reads_what_is_there_with_a_warning(tmp_path, backend, workers):
    path = cut_shard(tmp_path, 5, 3)
    with pytest.warns(RuntimeWarning, match="read as it is"):
        dataset = TarShards(str(path), decoders={"cls": "int"}, allow_truncated=True)
    assert len(dataset) == 3
    assert sorted(labels_through_loader(dataset, backend, workers)) == [0, 1, 2]


def test_a_kept_index_of_a_truncated_shard_is_used_only_when_allowed(tmp_path):
    path = cut_shard(tmp_path, 4, 2)
    with pytest.warns(RuntimeWarning):
        assert len(TarShards(str(path), allow_truncated=True)) == 2  # kept in the cache
    with pytest.raises(ShardError, match="without its end-of-archive block"):
        TarShards(str(path))
    with pytest.warns(RuntimeWarning, match="read as it is"):  # from the cache, said again
        assert len(TarShards(str(path), allow_truncated=True)) == 2


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("workers", WORKERS)
def test_a_remote_tar_cut_at_a_sample_boundary_is_an_error(tmp_path, backend, workers):
    path = cut_shard(tmp_path, 5, 3)
    with LoopbackServer({"/d/train-000.tar": path.read_bytes()}) as server:
        url = server.url + "/d/train-000.tar"
        with pytest.raises(ShardError, match="without its end-of-archive block") as caught:
            TarShards(url, index_cache=False)
        assert url in str(caught.value) and "'s/00001'" in str(caught.value)
        with pytest.warns(RuntimeWarning, match="read as it is"):
            dataset = TarShards(url, decoders={"cls": "int"}, index_cache=False,
                                allow_truncated=True)  # fmt: skip
        assert sorted(labels_through_loader(dataset, backend, workers)) == [0, 1, 2]


@pytest.mark.parametrize("remote", [False, True])
def test_a_companion_index_of_a_cut_tar_is_an_error(tmp_path, remote):
    path = cut_shard(tmp_path, 5, 3)
    write_dali_index(path)  # tarfile reads the cut shard, so the index covers 3 samples
    os.utime(path.with_suffix(".idx"))
    if not remote:
        with pytest.raises(ShardError, match="without its end-of-archive block"):
            TarShards(str(path), index_cache=False)
        with pytest.warns(RuntimeWarning, match="read as it is"):
            dataset = TarShards(str(path), index_cache=False, allow_truncated=True)
        assert dataset._indexes[0].from_companion and len(dataset) == 3
        return
    objects = {f"/d/{p.name}": p.read_bytes() for p in (path, path.with_suffix(".idx"))}
    with LoopbackServer(objects) as server:
        url = server.url + "/d/train-000.tar"
        with pytest.raises(ShardError, match="without its end-of-archive block"):
            TarShards(url, index_cache=False)
        with pytest.warns(RuntimeWarning, match="read as it is"):
            dataset = TarShards(url, index_cache=False, allow_truncated=True)
        assert dataset._indexes[0].from_companion and len(dataset) == 3


@pytest.mark.parametrize(
    ("arguments", "error", "match"),
    [
        ({"allow_truncated": "yes"}, TypeError, "allow_truncated should be True or False"),
        ({"allow_truncated": 1}, TypeError, "allow_truncated=1"),
        ({"optional_fields": "cls"}, TypeError, "optional_fields should be a tuple"),
        ({"optional_fields": ("CLS",)}, ValueError, r"optional_fields=\('CLS',\)"),
        ({"optional_fields": ("__key__",)}, ValueError, "with '__key__'"),
        ({"optional_fields": 3}, TypeError, "optional_fields=3"),
    ],
)
def test_bad_integrity_arguments_are_named(arguments, error, match):
    with pytest.raises(error, match=match):
        TarShards("x.tar", **arguments)


# b. a companion index that leaves samples out, or is another shard's


def rewrite_index(index: Path, keep) -> None:
    lines = index.read_text().splitlines()
    kept = [line for number, line in enumerate(lines[1:]) if keep(number)]
    index.write_text(f"v1.2 {len(kept)}\n" + "".join(line + "\n" for line in kept))


LEFT_OUT = {
    "first 20": (lambda n: n >= 20, "s/00000.jpg"),
    "one in the middle": (lambda n: n != 12, "s/00012.jpg"),
    "the last": (lambda n: n != 24, "s/00024.jpg"),
}


@pytest.mark.parametrize("case", list(LEFT_OUT))
@pytest.mark.parametrize("remote", [False, True])
def test_an_index_that_leaves_samples_out_is_refused_when_made(tmp_path, case, remote):
    keep, first_left_out = LEFT_OUT[case]
    make_shards(tmp_path, 1, 25)
    shard = tmp_path / "train-000.tar"
    rewrite_index(write_dali_index(shard), keep)
    if not remote:
        with pytest.raises(ShardError, match=f"leaves out member '{first_left_out}'") as caught:
            TarShards(str(shard), index_cache=False)
        assert str(shard) in str(caught.value)
        assert str(tmp_path / "train-000.idx") in str(caught.value)
        return
    objects = {f"/d/{p.name}": p.read_bytes() for p in (shard, tmp_path / "train-000.idx")}
    with LoopbackServer(objects) as server:
        url = server.url + "/d/train-000.tar"
        with pytest.raises(ShardError, match=f"leaves out member '{first_left_out}'") as caught:
            TarShards(url, index_cache=False)
        assert url in str(caught.value) and "/d/train-000.idx" in str(caught.value)


@pytest.mark.parametrize("remote", [False, True])
@pytest.mark.parametrize("per_shard", [[5, 5], [5, 6]])
def test_another_shards_index_is_refused_when_made(tmp_path, remote, per_shard):
    """Shards of equal layout (each member one block) and of different lengths."""
    make_shards(tmp_path, 2, per_shard)
    shard = tmp_path / "train-001.tar"
    write_dali_index(tmp_path / "train-000.tar")
    shutil.copy(tmp_path / "train-000.idx", tmp_path / "train-001.idx")  # beside another shard
    if not remote:
        with pytest.raises(ShardError) as caught:
            TarShards(str(shard), index_cache=False)
        named = (str(shard), str(tmp_path / "train-001.idx"))
    else:
        objects = {f"/d/{p.name}": p.read_bytes() for p in (shard, tmp_path / "train-001.idx")}
        with LoopbackServer(objects) as server:
            with pytest.raises(ShardError) as caught:
                TarShards(server.url + "/d/train-001.tar", index_cache=False)
            named = (server.url + "/d/train-001.tar", "/d/train-001.idx")
    assert all(name in str(caught.value) for name in named), caught.value
    assert "another shard's index" in str(caught.value) or "leaves out" in str(caught.value)


def renamed(key: int, new_key: str) -> list[tuple[str, bytes]]:
    return [(name.replace(f"s/{key:05d}", new_key), data) for name, data in sample_members(key)]


def gapped_shards(folder: Path) -> None:
    """Members whose headers an index leaves out: a directory and a pax header (a
    name past 100 bytes) in one shard, a GNU long-name header in the other."""
    layouts = [
        (
            tarfile.PAX_FORMAT,
            [*sample_members(0), *renamed(5, "s/" + "k" * 120), *sample_members(1)],
        ),
        (tarfile.GNU_FORMAT, [*renamed(6, "s/" + "g" * 130), *sample_members(2)]),
    ]
    for shard, (layout, members) in enumerate(layouts):
        with tarfile.open(folder / f"train-{shard:03d}.tar", "w", format=layout) as tar:
            folder_member = tarfile.TarInfo("folder")
            folder_member.type = tarfile.DIRTYPE
            tar.addfile(folder_member)
            for name, data in members:
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))


@pytest.mark.parametrize("remote", [False, True])
def test_an_index_with_gaps_of_unindexed_headers_is_read(tmp_path, remote):
    """Gaps between indexed members that hold only headers of members an index
    leaves out (pax, GNU long names, directories) are read and accepted."""
    folder = tmp_path / "shards"
    folder.mkdir()
    gapped_shards(folder)
    expected = TarShards(str(folder / "train-{000..001}.tar"), index_cache=False)
    for shard in ("train-000.tar", "train-001.tar"):
        write_dali_index(folder / shard)
    if not remote:
        dataset = TarShards(str(folder / "train-{000..001}.tar"), index_cache=False)
        assert all(index.from_companion for index in dataset._indexes)
        assert [dataset[i] for i in range(len(dataset))] == [
            expected[i] for i in range(len(expected))
        ]
        return
    objects = {f"/d/{p.name}": p.read_bytes() for p in sorted(folder.iterdir())}
    with LoopbackServer(objects) as server:
        dataset = TarShards(server.url + "/d/train-{000..001}.tar", index_cache=False)
        assert all(index.from_companion for index in dataset._indexes)
        got = [dataset[i] for i in range(len(dataset))]
        assert [{**g, "__url__": None} for g in got] == [
            {**expected[i], "__url__": None} for i in range(len(expected))
        ]


# c. a sample missing a field


def shard_without_a_field(tmp_path: Path, samples: int = 10, lacking: int = 8) -> Path:
    members = []
    for key in range(samples):
        members += [m for m in sample_members(key) if not (key == lacking and ".CLS" in m[0])]
    write_shard(tmp_path / "train-000.tar", members)
    return tmp_path / "train-000.tar"


@pytest.mark.parametrize("remote", [False, True])
def test_a_sample_missing_a_field_is_named_when_the_dataset_is_made(tmp_path, remote):
    path = shard_without_a_field(tmp_path)
    match = r"sample 's/00008' has no 'cls' field \(it has 'jpg', 'meta.json'\)"
    if not remote:
        with pytest.raises(ShardError, match=match) as caught:
            TarShards(str(path), index_cache=False)
        assert caught.value.shard == str(path)
        assert "9 of the dataset's 10 samples" in str(caught.value)
        assert "optional_fields=('cls',)" in str(caught.value)
        return
    with LoopbackServer({"/d/train-000.tar": path.read_bytes()}) as server:
        with pytest.raises(ShardError, match=match) as caught:
            TarShards(server.url + "/d/train-000.tar", index_cache=False)
        assert caught.value.shard == server.url + "/d/train-000.tar"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("workers", WORKERS)
def test_an_optional_field_is_none_where_missing(tmp_path, backend, workers):
    path = shard_without_a_field(tmp_path)
    dataset = TarShards(str(path), decoders={"cls": "int"}, optional_fields=("cls", "txt"))
    assert dataset[8]["cls"] is None and dataset[8]["txt"] is None
    assert dataset[7]["cls"] == 7
    loader = DataLoader(dataset, batch_size=3, num_workers=workers, backend=backend,
                        collate_fn=list)  # fmt: skip
    items = [item for batch in loader for item in batch]
    assert [item["cls"] for item in items] == [0, 1, 2, 3, 4, 5, 6, 7, None, 9]
    assert all(set(item) == set(items[0]) for item in items)


def test_collate_refuses_dicts_with_different_keys():
    with pytest.raises(KeyError, match=r"batch\[1\] lacks \['cls'\]"):
        default_collate([{"x": 1, "cls": 2}, {"x": 3}])
    # torch drops a key only later items have; we never do
    with pytest.raises(KeyError, match=r"batch\[2\] has \['cls'\]"):
        default_collate([{"x": 1}, {"x": 2}, {"x": 3, "cls": 4}])
    batch = default_collate([{"x": 1, "y": 2.0}, {"y": 4.0, "x": 3}])  # same keys, any order
    assert batch["x"].tolist() == [1, 3] and batch["y"].tolist() == [2.0, 4.0]


def test_collate_of_equal_keys_matches_torch():
    pytest.importorskip("torch")
    from torch.utils.data import default_collate as torch_collate

    batch = [{"a": 1, "b": [1.5, 2.5], "c": "s"}, {"a": 2, "b": [3.5, 4.5], "c": "t"}]
    ours, theirs = default_collate(batch), torch_collate(batch)
    assert ours["a"].tolist() == theirs["a"].tolist()
    assert [b.tolist() for b in ours["b"]] == [b.tolist() for b in theirs["b"]]
    assert ours["c"] == theirs["c"]


class Items:
    def __init__(self, items):
        self.items = items

    def __len__(self):
        return len(self.items)

    def __getitem__(self, index):
        return self.items[index]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("workers", WORKERS)
def test_a_batch_whose_first_item_lacks_a_key_is_an_error(backend, workers):
    items = [{"x": i, "cls": i} for i in range(6)]
    del items[3]["cls"]  # first of the second batch
    loader = DataLoader(Items(items), batch_size=3, num_workers=workers, backend=backend)
    with pytest.raises(KeyError, match=r"batch\[1\] has \['cls'\]"):
        list(loader)


# d. a kept index is used only for the bytes it was made from


def test_a_kept_index_is_not_used_for_a_local_shard_of_the_same_size(tmp_path):
    """Size and modification time (already so before issue 43): a shard rewritten
    with other samples in as many bytes is indexed again, not read by the old index."""
    make_shards(tmp_path, 1, 5)
    path = tmp_path / "train-000.tar"
    first = TarShards(str(path), decoders={"cls": "int"})
    assert [first[i]["cls"] for i in range(5)] == [0, 1, 2, 3, 4]
    size, stamp = path.stat().st_size, path.stat().st_mtime_ns
    members = [m for key in range(7, 12) for m in sample_members(key)]  # other sizes within
    write_shard(path, members)
    os.utime(path, ns=(stamp + 10**9, stamp + 10**9))
    assert path.stat().st_size == size  # each member still fits its 512-byte block
    again = TarShards(str(path), decoders={"cls": "int"})
    assert [again[i]["cls"] for i in range(5)] == [7, 8, 9, 10, 11]
    with pytest.raises(ShardError, match="changed since it was indexed"):
        first[0]  # the first dataset's index is for the old bytes


def _shard_with_huge_member(huge: tarfile.TarInfo, form: int) -> bytes:
    """A member ``a.txt``, then ``huge``'s header (its size past any file) and one block."""
    first = tarfile.TarInfo("s0.txt")
    first.size = 3
    data = first.tobuf(tarfile.GNU_FORMAT) + b"abc".ljust(512, b"\0")
    return data + huge.tobuf(form) + b"x" * 512 + b"\0" * 1024


@pytest.mark.parametrize("form", ["gnu-2**63", "pax-10**20"])
def test_a_size_field_past_any_file_is_a_shard_error(tmp_path, form):
    # tarfile's seek to the next header overflows (a bare OverflowError or
    # ValueError before issue 49): a ShardError naming the shard and the offset.
    huge = tarfile.TarInfo("s1.txt")
    if form == "gnu-2**63":
        huge.size = 2**63
        data = _shard_with_huge_member(huge, tarfile.GNU_FORMAT)
    else:
        huge.pax_headers = {"size": str(10**20)}
        data = _shard_with_huge_member(huge, tarfile.PAX_FORMAT)
    path = tmp_path / "s.tar"
    path.write_bytes(data)
    with pytest.raises(ShardError) as caught:
        TarShards([str(path)])
    assert caught.value.shard == str(path) and caught.value.offset == 1024, caught.value
    assert "s1.txt" in str(caught.value) and str(path) in str(caught.value)
