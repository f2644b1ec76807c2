"""Every sample right, or a loud error, over random shard sets and random faults
(issue 43's property): a tar cut at any offset, a companion index that leaves a
sample out or belongs to another shard, a sample missing a field, a shard
replaced by one of the same length after it was indexed. Whatever Hypothesis
draws, the dataset either raises (when it is made or during the epoch) or hands
out every sample written, each with its own key's bytes; without a fault it
never raises."""

from __future__ import annotations

import os
import tarfile
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shard_files import sample_members, write_shard
from test_shards import BACKENDS
from test_shards_companion import write_dali_index

from dataloader_api import DataLoader
from dataloader_api.shards import TarShards

FAULTS = ["none", "cut", "cut at a header", "index drops a sample", "index of another shard",
          "field missing", "replaced, same length"]  # fmt: skip


def members_of(keys: list[int], drop_field_of: int | None = None) -> list[tuple[str, bytes]]:
    members = []
    for key in keys:
        members += [m for m in sample_members(key) if not (key == drop_field_of and ".CLS" in m[0])]
    return members


@st.composite
def cases(draw):
    sizes = draw(st.lists(st.integers(1, 5), min_size=1, max_size=3))
    fault = draw(st.sampled_from(FAULTS))
    shard = draw(st.integers(0, len(sizes) - 1))
    sample = draw(st.integers(0, sizes[shard] - 1))
    fraction = draw(st.floats(0, 1, exclude_max=True))
    backend = draw(st.sampled_from(BACKENDS))
    workers = draw(st.sampled_from([0, 2]))
    return sizes, fault, shard, sample, fraction, backend, workers


def make(folder: Path, sizes: list[int], fault: str, shard: int, sample: int) -> list[Path]:
    """The shards (keys counted on from 0), one with ``fault`` where that fault is in
    the shard's bytes; returns their paths."""
    paths, first = [], 0
    for number, size in enumerate(sizes):
        keys = list(range(first, first + size))
        first += size
        missing = keys[sample] if fault == "field missing" and number == shard else None
        path = folder / f"part-{number:03d}.tar"
        write_shard(path, members_of(keys, missing))
        paths.append(path)
    return paths


def damage(paths: list[Path], fault: str, shard: int, sample: int, fraction: float) -> None:
    """The faults made after the shards were written (and, for a replacement, indexed)."""
    path = paths[shard]
    if fault == "cut":
        data = path.read_bytes()
        path.write_bytes(data[: int(fraction * len(data))])
    elif fault == "cut at a header":  # an interrupted copy that ends where a sample starts
        with tarfile.open(path) as tar:
            start = [m for m in tar if m.isreg()][3 * sample].offset
        path.write_bytes(path.read_bytes()[:start])
    elif fault == "index drops a sample":
        index = write_dali_index(path)
        _, *lines = index.read_text().splitlines()  # its count line, written anew
        del lines[sample]
        index.write_text(f"v1.2 {len(lines)}\n" + "".join(line + "\n" for line in lines))
    elif fault == "index of another shard":
        other = paths[(shard + 1) % len(paths)] if len(paths) > 1 else None
        if other is None:  # one shard: the index of a shard with one sample fewer or more
            neighbour = path.with_name("neighbour.tar")
            write_shard(neighbour, members_of(list(range(100, 100 + sample + 2))))
            other = neighbour
        write_dali_index(other).replace(path.with_suffix(".idx"))
    elif fault == "replaced, same length":
        with path.open("rb") as file:
            size_before = len(file.read())
        stat = path.stat()
        keys = keys_of(path)
        if len(keys) > 1:  # the same samples in another order
            write_shard(path, members_of(keys[::-1]))
        else:  # another key and other bytes, of the same lengths
            write_shard(path, _renamed(keys[0], keys[0] + 1000))
        assert path.stat().st_size == size_before
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # copied in later


def keys_of(path: Path) -> list[int]:
    with tarfile.open(path) as tar:
        return sorted({int(m.name[2:7]) for m in tar if m.isreg()})


def _renamed(key: int, new: int) -> list[tuple[str, bytes]]:
    """A sample named ``new`` with bytes of ``key``'s lengths, but other bytes."""
    return [
        (name.replace(f"{key:05d}", f"{new:05d}"), bytes(b ^ 0xFF for b in data))
        for name, data in sample_members(key)
    ]


def in_files(paths: list[Path]) -> dict[int, dict[str, bytes]]:
    """What the shards hold now, read by Python's tarfile: key -> fields."""
    held: dict[int, dict[str, bytes]] = {}
    for path in paths:
        with tarfile.open(path) as tar:
            for member in tar:
                if member.isreg():
                    file = tar.extractfile(member)
                    assert file is not None
                    field = member.name.split(".", 1)[1].lower()
                    held.setdefault(int(member.name[2:7]), {})[field] = file.read()
    return held


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(case=cases())
def test_every_item_carries_its_own_keys_bytes_or_the_epoch_raises(case, monkeypatch):
    sizes, fault, shard, sample, fraction, backend, workers = case
    with tempfile.TemporaryDirectory() as folder:
        monkeypatch.setenv("DATALOADER_CACHE_DIR", os.path.join(folder, "cache"))
        shards = Path(folder) / "shards"
        shards.mkdir()
        paths = make(shards, sizes, fault, shard, sample)
        written = in_files(paths)
        if fault == "replaced, same length":
            TarShards([str(p) for p in paths])  # indexed and kept before the change
        damage(paths, fault, shard, sample, fraction)
        try:
            dataset = TarShards([str(p) for p in paths])
            loader = DataLoader(
                dataset, batch_size=2, num_workers=workers, backend=backend, collate_fn=list
            )
            items = [item for batch in loader for item in batch]
        except Exception as error:  # a loud error: what the property allows for a fault
            assert fault != "none", f"no fault, yet {type(error).__name__}: {error}"
            return
        # Without an error: every sample written, as the shards hold it (a replaced
        # shard's new samples, read again), each with its own key's bytes.
        truth = in_files(paths) if fault == "replaced, same length" else written
        keys = [int(item["__key__"][2:]) for item in items]
        assert sorted(keys) == sorted(truth), f"{fault}: fewer or other samples, silently"
        for key, item in zip(keys, items, strict=True):
            fields = {name: value for name, value in item.items() if not name.startswith("__")}
            assert fields == truth[key], f"{fault}: sample {key} carries other bytes"


@pytest.mark.parametrize("fault", FAULTS[1:-1])
def test_each_fault_that_loses_or_moves_samples_raises(tmp_path, fault, monkeypatch):
    """Each fault once, plainly: the dataset or its epoch raises. (A replaced shard
    is read again instead: the property above checks its items.)"""
    monkeypatch.setenv("DATALOADER_CACHE_DIR", str(tmp_path / "cache"))
    paths = make(tmp_path, [3, 4], fault, 1, 2)
    damage(paths, fault, 1, 2, 0.5)
    with pytest.raises(Exception):  # noqa: B017 (any loud error; the kinds have their tests)
        dataset = TarShards([str(p) for p in paths])
        [item for batch in DataLoader(dataset, batch_size=2, collate_fn=list) for item in batch]
