"""The suite catches what it claims to: each deliberately broken backend fails
the property it breaks (and the file is not collected when checking a backend).

    pytest conformance/check_broken_backends.py

needs conformance/broken installed (``nox -s conformance`` installs it).
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import dataloader_api

HERE = Path(__file__).parent

# backend -> the tests that must each fail on it
BROKEN = {
    "broken-order": [
        "test_batches_equal_the_sequential_reference",
        "test_same_seed_same_batches_on_every_backend_and_worker_count",
    ],
    "broken-duplicate": [
        "test_batches_equal_the_sequential_reference",
        "test_unordered_delivers_the_same_multiset",
    ],
    "broken-window": ["test_started_but_unconsumed_batches_stay_within_the_window"],
    "broken-errors": ["test_an_item_error_surfaces_for_its_batch"],
    "broken-timeout": ["test_timeout_on_a_blocked_item_raises_promptly"],
    "broken-shutdown": [
        "test_no_dataset_call_starts_after_shutdown",
        "test_random_shutdown_schedules",
    ],
    "broken-attach": [
        "test_thread_local_state_persists_on_each_worker",
        "test_one_epoch_uses_at_most_pool_size_thread_states",
    ],
    "broken-iterable": ["test_every_item_exactly_once"],
    "broken-rotation": ["test_in_order_is_round_robin_over_workers", "test_iterable_resume"],
    "broken-serial": ["test_num_workers_batches_are_fetched_at_once"],
    "broken-init": ["test_a_worker_init_fn_error_surfaces_before_any_batch"],
    "broken-stall": ["test_stopping_behind_a_slow_item_is_prompt"],
    "broken-exit": ["test_interpreter_exit_mid_epoch"],
    "broken-images": ["test_a_pipeline_gives_the_references_items"],
    "broken-reader": ["test_file_reads_give_the_references_items_and_errors"],
    "broken-plan": [
        "test_a_plan_given_as_data_gives_its_own_batches",
        "test_shuffled_laps_equal_the_calling_threads",
    ],
    "broken-stack": [
        "test_a_worker_thread_has_a_python_threads_stack",
        "test_an_item_that_needs_a_deep_stack_runs",
    ],
    "broken-thread-end": ["test_a_worker_threads_end_never_crashes"],
    "broken-closed": ["test_a_closed_pool_raises_the_contracts_error"],
    "broken-copies": ["test_each_worker_calls_its_own_copy"],
    "broken-outer-copies": ["test_every_dataset_inside_a_wrapper_is_per_worker"],
    "broken-started": ["test_fetch_receives_what_the_loader_started"],
    "broken-shards": ["test_remote_shards_give_tarfiles_samples"],
    "broken-caller": ["test_batches_made_by_the_consumer_are_a_workers"],
}
# CPython with gh-119585's fix (3.12.5+, 3.13+) clears a state at gilstate counter 1
# itself, so there the thread end that broken-thread-end gets wrong cannot crash.
CPYTHON_GUARDS_THREAD_END = sys.version_info >= (3, 12, 5)


def run_suite(backend: str, tests: list[str]) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable,
        "-m",
        "pytest",
        str(HERE),
        "-q",
        "-p",
        "no:cacheprovider",
        "--timeout",
        "60",
        "--backend",
        backend,
        "-k",
        " or ".join(tests),
    ]
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "CONFORMANCE_PROFILE": "detect"},
    )


# Broken suites run this many at a time: each mostly waits (its properties'
# bounded waits, a child's start-up), and a broken backend fails its property
# the more surely on a loaded machine. The correct backend's run stays alone.
AT_ONCE = 4


@pytest.fixture(scope="module")
def broken_runs(request: pytest.FixtureRequest) -> dict[str, subprocess.CompletedProcess[str]]:
    """Every selected broken backend's suite, run ``AT_ONCE`` at a time."""
    names = sorted(
        {
            item.callspec.params["name"]
            for item in request.session.items
            if hasattr(item, "callspec") and "name" in item.callspec.params
        }
        & set(dataloader_api.backends())
    )
    if CPYTHON_GUARDS_THREAD_END:  # skipped below
        names = [n for n in names if n != "broken-thread-end"]
    with ThreadPoolExecutor(AT_ONCE) as runs:
        return dict(zip(names, runs.map(lambda n: run_suite(n, BROKEN[n]), names), strict=True))


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_suite_fails_on_a_backend_that_breaks_its_property(name, broken_runs):
    if name == "broken-thread-end" and CPYTHON_GUARDS_THREAD_END:
        pytest.skip(f"CPython {sys.version.split()[0]} ends such a thread safely itself")
    if name not in dataloader_api.backends():
        pytest.fail(f"{name} is not installed: pip install {HERE / 'broken'}")
    result = broken_runs[name]
    failed = {
        line.split("::")[-1].split(" ")[0].split("[")[0]
        for line in result.stdout.splitlines()
        if line.startswith("FAILED")
    }
    for test in BROKEN[name]:
        assert test in failed, f"{test} passed on {name}:\n{result.stdout[-3000:]}"


def test_the_same_selection_passes_on_a_correct_backend():
    """So the failures above come from the breakage, not from the selection."""
    every = sorted({test for tests in BROKEN.values() for test in tests})
    result = run_suite("threads", every)
    assert result.returncode == 0, result.stdout[-3000:]
