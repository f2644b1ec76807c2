"""The built-in synthetic dataset and the demo that loads it."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from dataloader_api import SyntheticImages, backends
from dataloader_api.demo import FRESH_LOADERS, load_note, main, measure


def test_synthetic_items_are_deterministic_and_checked():
    a, b = (
        SyntheticImages(10, shape=(3, 4, 4), seed=1),
        SyntheticImages(10, shape=(3, 4, 4), seed=1),
    )
    image, label = a[3]
    assert image.shape == (3, 4, 4) and image.dtype == np.float32 and label == 3
    np.testing.assert_array_equal(image, b[3][0])
    assert not np.array_equal(image, SyntheticImages(10, shape=(3, 4, 4), seed=2)[3][0])
    np.testing.assert_array_equal(a[-1][0], a[9][0])
    with pytest.raises(IndexError, match="out of range"):
        a[10]
    with pytest.raises(ValueError, match="read_latency"):
        SyntheticImages(read_latency=-1)


def test_demo_prints_a_row_per_installed_backend(capsys):
    assert main(["--items", "128", "--epochs", "1", "--read-latency", "0", "--images", "0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    end = lines.index("")
    rows = [line.split()[0] for line in lines[3:end]]
    assert rows == ["(calling", *backends()]
    assert "start-up" in lines[1] and lines[end - 1].endswith(" ms")
    assert lines[-1].startswith("machine: ") or lines[-1].startswith("note: the machine")


class OnceCostlyClock:
    """A clock that only items move: 1 ms each, and 100 s for the process's first
    item ever (a one-time start-up, as imports and loading a backend are)."""

    def __init__(self) -> None:
        self.now, self.started, self.lock = 0.0, False, threading.Lock()

    def __call__(self) -> float:
        with self.lock:
            return self.now

    def item(self) -> None:
        with self.lock:
            self.now += 0.001 if self.started else 100.0
            self.started = True


class ClockedItems:
    def __init__(self, clock: OnceCostlyClock) -> None:
        self.clock = clock

    def __len__(self) -> int:
        return 64

    def __getitem__(self, index: int) -> tuple[int, int]:
        self.clock.item()
        return index, index


@pytest.mark.parametrize("backend", [None, *(n for n in backends() if not n.startswith("broken"))])
def test_the_demos_first_batch_leaves_the_start_up_out(backend):
    clock = OnceCostlyClock()
    workers = 0 if backend is None else 2
    rates, first_batches, startup = measure(
        ClockedItems(clock), backend, workers, 8, 2, clock=clock
    )
    assert startup >= 100.0  # the one-time cost is the row's start-up ...
    assert len(first_batches) == FRESH_LOADERS
    assert all(first < 100.0 for first in first_batches)  # ... and in no first batch
    assert len(rates) == 2 and all(rate > 0 for rate in rates)


def test_the_demo_says_when_the_machine_was_busy():
    assert "note:" not in load_note(0.1, 0.2)
    assert "busy" in load_note(1000.0, 0.2) and "quiet machine" in load_note(0.1, 1000.0)


def test_demo_prints_an_image_row_per_installed_backend(capsys):
    pytest.importorskip("PIL", reason="the image rows need Pillow")
    # The shipped backends: the broken fixtures (installed for the suite) break on purpose.
    shipped = [name for name in ("rust", "cffi", "threads") if name in backends()]
    argv = ["--items", "64", "--epochs", "1", "--read-latency", "0", "--images", "8"]
    assert main([*argv, "--backends", ",".join(shipped)]) == 0
    lines = capsys.readouterr().out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("images: 8 JPEG photos"))
    end = lines.index("", start)
    rows = [line.split()[0] for line in lines[start + 3 : end]]
    assert rows == ["(calling", *shipped]


def test_demo_rejects_bad_arguments():
    with pytest.raises(SystemExit):
        main(["--workers", "0"])
    with pytest.raises(SystemExit):
        main(["--images", "-1"])
    with pytest.raises(SystemExit):
        main(["--backends", "no-such-backend"])
