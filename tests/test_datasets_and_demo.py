"""The built-in synthetic dataset and the demo that loads it."""

from __future__ import annotations

import numpy as np
import pytest

from dataloader_api import SyntheticImages, backends
from dataloader_api.demo import main


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
    out = capsys.readouterr().out
    rows = [line.split()[0] for line in out.splitlines()[3:]]
    assert rows == ["(calling", *backends()]
    assert "items/s" in out and "ms" in out.splitlines()[-1]


def test_demo_prints_an_image_row_per_installed_backend(capsys):
    pytest.importorskip("PIL", reason="the image rows need Pillow")
    # The shipped backends: the broken fixtures (installed for the suite) break on purpose.
    shipped = [name for name in ("rust", "cffi", "threads") if name in backends()]
    argv = ["--items", "64", "--epochs", "1", "--read-latency", "0", "--images", "8"]
    assert main([*argv, "--backends", ",".join(shipped)]) == 0
    lines = capsys.readouterr().out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("images: 8 JPEG photos"))
    rows = [line.split()[0] for line in lines[start + 3 :]]
    assert rows == ["(calling", *shipped]


def test_demo_rejects_bad_arguments():
    with pytest.raises(SystemExit):
        main(["--workers", "0"])
    with pytest.raises(SystemExit):
        main(["--images", "-1"])
    with pytest.raises(SystemExit):
        main(["--backends", "no-such-backend"])
