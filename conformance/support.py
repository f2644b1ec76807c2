"""What the properties share beyond dataloader_api.testing."""

from __future__ import annotations

from dataloader_api.testing import ItemError, Recorder, os_thread_count, wait_until

__all__ = ["ItemError", "Recorder", "batches_as_lists", "os_thread_count", "wait_until"]


def batches_as_lists(loader: object) -> list[list[int]]:
    return [batch.tolist() for batch in loader]  # type: ignore[attr-defined]
