"""One batch on the threads backend crosses few Python files: each wrapper frame
between the worker loop and ``dataset[i]`` is a call paid by every batch, and a
file a reader must open to follow it (torch's batch crosses 5; ours crossed 10
before the one fetch maker, issue 44). Counted, not timed."""

from __future__ import annotations

import sys
import threading
from types import FrameType
from typing import Any

import dataloader_api
from dataloader_api import DataLoader

# The worker loop (kit/_thread_pool.py), the job (kit/_epoch_state.py), the one
# fetch (_epoch/fetch.py), the window that stores the batch (kit/_map_stream.py)
# and its condition (threading.py), and this file (the dataset and the collate):
# six today; one more is the budget, not an invitation.
MAX_FILES_PER_BATCH = 7


class Recorded:
    """Trivial items; the first item a worker thread fetches records the files of
    the frames above it and starts recording every Python call that thread makes
    from then on, until the epoch was consumed."""

    def __init__(self, files: dict[int, set[str]], active: threading.Event) -> None:
        self.files = files
        self.active = active

    def __len__(self) -> int:
        return 64 * 8

    def __getitem__(self, index: int) -> int:
        ident = threading.get_ident()
        if ident not in self.files and self.active.is_set():
            # The frames above this item, from the thread's start (the worker loop).
            seen = self.files[ident] = set()
            frame: FrameType | None = sys._getframe()
            while frame is not None:
                seen.add(frame.f_code.co_filename)
                frame = frame.f_back
            active = self.active

            def profile(frame: FrameType, event: str, arg: Any) -> None:
                if event == "call" and active.is_set():
                    seen.add(frame.f_code.co_filename)

            sys.setprofile(profile)
        return index


def identity(batch: Any) -> Any:
    return batch


def test_one_batch_crosses_at_most_seven_files_on_the_threads_backend(monkeypatch):
    # The workers' path: trivial items would soon be made by the consumer itself
    # (caller-runs), whose frames are the test runner's.
    monkeypatch.setenv("DATALOADER_CALLER_RUNS", "off")
    files: dict[int, set[str]] = {}
    active = threading.Event()
    active.set()
    loader = DataLoader(
        Recorded(files, active), batch_size=8, num_workers=2, collate_fn=identity, backend="threads"
    )
    try:
        batches = list(loader)
        active.clear()  # the epoch was consumed: what the threads do next is no batch's
    finally:
        loader.close()
    assert len(batches) == 64
    assert files, "no worker thread fetched an item"
    for thread_files in files.values():
        names = sorted(thread_files)
        assert len(names) <= MAX_FILES_PER_BATCH, (
            f"one batch crosses {len(names)} Python files (at most {MAX_FILES_PER_BATCH}): {names}"
        )
        # What a batch needs, so the count cannot pass by recording nothing.
        assert any(name.endswith("_thread_pool.py") for name in names), names
    assert dataloader_api.backends()  # the threads backend is always installed
