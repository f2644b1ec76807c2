"""Run PyTorch's own DataLoader tests (``test/test_dataloader.py`` of a PyTorch
checkout) against our DataLoader, and say which tests fail and why.

    python scripts/torch_test_file.py PATH/test_dataloader.py [--backend rust] [-- PYTEST-ARGS]

The file is not ours and not shipped here: give a copy of it, of the torch
version installed. The tests run in a temporary folder where a conftest (and a
``sitecustomize`` for the child processes some tests start) replaces
``torch.utils.data.DataLoader`` by ours, with ``collate_fn=torch_collate`` by
default: batches of NumPy arrays are our documented default, and
``torch_collate`` the documented way to get torch's tensors (user guide,
*Differences from PyTorch*). Needs torch, pytest, psutil and expecttest.

The file runs twice: with torch's own loader, then with ours. Exit status 0
when each test that fails with ours fails with torch's too (a test older or
newer than the torch installed) or is one of ``KNOWN`` below (each a
documented difference), 1 otherwise; every failure is printed with its reason.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path

#: Tests that cannot pass with worker threads, and why (the user guide lists each).
KNOWN = {
    "TestIndividualWorkerQueue::test_ind_worker_queue": (
        "torch deals batches to workers round-robin; a free thread takes the next batch here"
    ),
    "TestDataLoader::test_segfault": (
        "a worker that segfaults is a thread: the signal ends the whole process, which no "
        "loader in it can report"
    ),
    "TestDataLoaderPersistentWorkers::test_segfault": "as TestDataLoader::test_segfault",
}

# Imported first in the test folder (conftest) and in every child process
# (sitecustomize, with the folder on PYTHONPATH).
_SWAP = '''
import os
if os.environ.get("DATALOADER_TORCH_TEST_SWAP") == "1":
    from typing import TypeVar

    import torch.utils.data
    import torch.utils.data.dataloader

    import dataloader_api

    _T = TypeVar("_T")

    class DataLoader(dataloader_api.DataLoader[_T]):
        """Ours, with torch's tensors as the default batches (torch_collate)."""

        def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None,
                     batch_sampler=None, num_workers=0, collate_fn=None, *args, **kwargs):
            if collate_fn is None and (batch_size is not None or batch_sampler is not None):
                collate_fn = dataloader_api.torch_collate
            super().__init__(dataset, batch_size, shuffle, sampler, batch_sampler,
                             num_workers, collate_fn, *args, **kwargs)

    torch.utils.data.DataLoader = DataLoader
    torch.utils.data.dataloader.DataLoader = DataLoader
'''


def outcomes(junit: Path) -> dict[str, tuple[str, str]]:
    """test id -> (outcome, first line of its failure)."""
    found: dict[str, tuple[str, str]] = {}
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        test = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"
        outcome, why = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome, why = "failed", (child.get("message") or "").split("\n")[0][:200]
            elif child.tag == "skipped":
                outcome, why = "skipped", (child.get("message") or "")[:120]
        found[test] = (outcome, why)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("test_file", type=Path, help="PyTorch's test/test_dataloader.py")
    parser.add_argument("--backend", help="DATALOADER_BACKEND for the run (default: the best)")
    parser.add_argument("pytest_args", nargs="*", help="after --: passed to pytest")
    args = parser.parse_args()
    if not args.test_file.is_file():
        parser.error(f"test_file={str(args.test_file)!r} is not a file")
    print("== torch's own DataLoader", flush=True)
    theirs = run(args.test_file, None, args.backend, args.pytest_args)
    print("== ours", flush=True)
    ours = run(args.test_file, _SWAP, args.backend, args.pytest_args)
    if theirs is None or ours is None:
        print("pytest wrote no report: see its output above", file=sys.stderr)
        return 1
    unexpected = []
    for test, (outcome, why) in sorted(ours.items()):
        if outcome != "failed":
            continue
        if theirs.get(test, ("",))[0] == "failed":
            print(f"{test}: fails with torch's loader too: {theirs[test][1]}")
        elif test in KNOWN:
            print(f"{test}: known: {KNOWN[test]}")
        else:
            print(f"{test}: FAILED: {why}")
            unexpected.append(test)
    counts = {k: sum(o == k for o, _ in ours.values()) for k in ("passed", "failed", "skipped")}
    torch_failed = sum(o == "failed" for o, _ in theirs.values())
    print(
        f"\nours: {counts['passed']} passed, {counts['failed']} failed "
        f"({len(unexpected)} unexpected), {counts['skipped']} skipped; "
        f"torch's: {torch_failed} failed"
    )
    return 1 if unexpected else 0


def run(
    test_file: Path, swap: str | None, backend: str | None, pytest_args: list[str]
) -> dict[str, tuple[str, str]] | None:
    """The file's outcomes, with our loader swapped in when ``swap`` is given."""
    with tempfile.TemporaryDirectory(prefix="torch-tests-") as folder:
        root = Path(folder)
        shutil.copy(test_file, root / "test_dataloader.py")
        env = dict(os.environ)
        if swap is not None:
            (root / "conftest.py").write_text(swap)
            (root / "sitecustomize.py").write_text(swap)
            env["DATALOADER_TORCH_TEST_SWAP"] = "1"
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [folder, env.get("PYTHONPATH")]))
        if backend:
            env["DATALOADER_BACKEND"] = backend
        junit = root / "junit.xml"
        command = [sys.executable, "-m", "pytest", "test_dataloader.py", "-q", "-p"]
        command += ["no:cacheprovider", f"--junitxml={junit}", *pytest_args]
        subprocess.run(command, cwd=folder, env=env, check=False)
        return outcomes(junit) if junit.exists() else None


if __name__ == "__main__":
    sys.exit(main())
