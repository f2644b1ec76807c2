"""Options of the conformance suite: which backend, which hypothesis profile.

    pytest conformance --backend NAME [--conformance-profile fast|thorough]

NAME is any installed backend (entry-point group ``dataloader_api.backends``);
without it, ``$DATALOADER_BACKEND`` or the best installed one.
"""

from __future__ import annotations

import os

import numpy  # noqa: F401  # its BLAS threads start at import: before any thread count
import pytest
from hypothesis import HealthCheck, Phase, settings

import dataloader_api

_COMMON = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
}
settings.register_profile("fast", max_examples=15, **_COMMON)
settings.register_profile("thorough", max_examples=1000, **_COMMON)
# For proving that broken backends fail: stop at the first failure, no shrinking.
settings.register_profile(
    "detect", max_examples=15, phases=[Phase.explicit, Phase.reuse, Phase.generate], **_COMMON
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance")
    group.addoption("--backend", default=None, help="backend to check (an installed name)")
    group.addoption(
        "--conformance-profile",
        default=os.environ.get("CONFORMANCE_PROFILE", "fast"),
        choices=["fast", "thorough", "detect"],
        help="fast: a few examples per property; thorough: >= 1000 (nightly); "
        "detect: fast without shrinking",
    )


def pytest_configure(config: pytest.Config) -> None:
    settings.load_profile(config.getoption("--conformance-profile"))


def pytest_report_header(config: pytest.Config) -> str:
    return (
        f"conformance: backend={_backend_name(config)!r}, "
        f"profile={config.getoption('--conformance-profile')!r}"
    )


def _backend_name(config: pytest.Config) -> str:
    name = config.getoption("--backend") or os.environ.get("DATALOADER_BACKEND")
    if not name:
        installed = dataloader_api.backends()
        if not installed:
            raise pytest.UsageError("no dataloader_api backend is installed")
        name = installed[0]
    return str(name)


@pytest.fixture(scope="session")
def backend(pytestconfig: pytest.Config) -> str:
    """The name of the backend under test (resolved once, so a bad name fails early)."""
    name = _backend_name(pytestconfig)
    try:
        dataloader_api.resolve_backend(name)
    except (ValueError, TypeError) as error:
        raise pytest.UsageError(str(error)) from error
    return name


@pytest.fixture
def thorough(pytestconfig: pytest.Config) -> bool:
    return pytestconfig.getoption("--conformance-profile") == "thorough"
