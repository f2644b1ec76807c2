"""What the properties share beyond dataloader_api.testing."""

from __future__ import annotations

import subprocess
import sys
import threading

from dataloader_api import IterableDataset, get_worker_info
from dataloader_api.testing import (
    ItemError,
    Recorder,
    os_thread_count,
    python_thread_count,
    wait_until,
)

__all__ = [
    "ItemError",
    "Recorder",
    "Sharded",
    "batches_as_lists",
    "os_thread_count",
    "python_thread_count",
    "run_clean_child",
    "wait_until",
]


def run_clean_child(code: str, exit_code: int = 0, env: dict[str, str] | None = None) -> None:
    """Run ``code`` in a child interpreter: it ends with ``exit_code``, no abort, no
    fatal error, no traceback (a crash of the child is the property failing)."""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert result.returncode == exit_code, f"exit code {result.returncode}\n{result.stderr}"
    assert "Fatal Python error" not in result.stderr, result.stderr
    assert "Traceback" not in result.stderr, result.stderr


def batches_as_lists(loader: object) -> list[list[int]]:
    return [batch.tolist() for batch in loader]  # type: ignore[attr-defined]


class Sharded(IterableDataset):
    """The PyTorch documentation's idiom: each worker takes a strided share.
    Logs each worker's info and the threads that iterate it."""

    def __init__(self, length: int, uneven: bool = False) -> None:
        self.length = length
        self.uneven = uneven
        self.infos: list[tuple[int, int, int, int]] = []
        self.threads: set[int] = set()
        self.lock = threading.Lock()

    def __iter__(self):
        info = get_worker_info()
        assert info is not None
        with self.lock:
            self.infos.append((info.id, info.num_workers, info.seed, id(info.dataset)))
            self.threads.add(threading.get_ident())
        assert isinstance(info.dataset, Sharded)
        if self.uneven:
            # worker w takes a contiguous block whose size grows with w
            bounds = [
                self.length * k * (k + 1) // (info.num_workers * (info.num_workers + 1))
                for k in range(info.num_workers + 1)
            ]
            return iter(range(bounds[info.id], bounds[info.id + 1]))
        return iter(range(info.id, self.length, info.num_workers))
