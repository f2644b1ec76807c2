"""Property 11: the io datasets give the reference's items and errors on the backend.

Files of random sizes (some missing, some directories, some past
``max_bytes``) are read through ``FileDataset`` on the backend, at 1 to 3
workers, batched or not, shuffled or not. A backend that offers
``open_reader`` reads them natively; the others run the reference. Either
way each batch equals the reference's on the calling thread, and a failing
item raises the reference's exception type for the first failing index of
its batch, naming that index.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from dataloader_api import DataLoader
from dataloader_api.io import FileDataset

# What each drawn file is: bytes of this size, missing, or a directory.
kinds = st.one_of(st.integers(0, 3000), st.sampled_from(["missing", "directory"]))


def make_files(folder: Path, drawn: list[int | str]) -> list[str]:
    paths = []
    for i, kind in enumerate(drawn):
        path = folder / f"{i:04d}.bin"
        if kind == "directory":
            path.mkdir()
        elif kind != "missing":
            path.write_bytes(bytes((i * 13 + j) % 256 for j in range(kind)))
        paths.append(str(path))
    return paths


def outcome(loader: DataLoader) -> list[object]:
    """Each batch, or (exception type, index) where the batch failed."""
    results: list[object] = []
    iterator = iter(loader)
    while True:
        try:
            batch = next(iterator)
        except StopIteration:
            return results
        except OSError as error:
            index = getattr(error, "index", None)
            if index is None:  # the system's OSError: the index is in its message
                index = int(str(error).split("item ", 1)[1].split(":", 1)[0])
            results.append((type(error), index))
            continue
        results.append(batch)


@given(
    drawn=st.lists(kinds, min_size=1, max_size=24),
    batch_size=st.sampled_from([None, 1, 3, 8]),
    workers=st.integers(1, 3),
    shuffle=st.booleans(),
    max_bytes=st.sampled_from([None, 1000]),
)
def test_file_reads_give_the_references_items_and_errors(
    backend, drawn, batch_size, workers, shuffle, max_bytes
):
    with tempfile.TemporaryDirectory() as folder:
        dataset = FileDataset(make_files(Path(folder), drawn), max_bytes=max_bytes)
        options = dict(batch_size=batch_size, shuffle=shuffle, seed=7, collate_fn=list)
        if batch_size is None:
            options["collate_fn"] = lambda item: item
        expected = outcome(DataLoader(dataset, num_workers=0, **options))
        got = outcome(DataLoader(dataset, num_workers=workers, backend=backend, **options))
    assert got == expected
