"""Shared fixtures and options of the test suite.

``--crash-loops N`` (or ``EVOLOG_CRASH_LOOPS=N``) sets how many times the crash tests
kill a writer; the default is small so the suite stays fast, the ``long`` variants use 100.
``HYPOTHESIS_PROFILE=evolog-long`` runs ten times the property tests' examples.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "evolog",
    deadline=None,  # file-system work on a shared 2-core machine has no stable latency
    suppress_health_check=[HealthCheck.too_slow],
)
# HYPOTHESIS_PROFILE=evolog-long: ten times the examples, for a run with time to spare (the
# default profile is sized for CI). A test that sets its own count takes it from examples().
LONG_EXAMPLES_FACTOR = 10
settings.register_profile(
    "evolog-long", parent=settings.get_profile("evolog"), max_examples=100 * LONG_EXAMPLES_FACTOR
)
HYPOTHESIS_PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "evolog")
settings.load_profile(HYPOTHESIS_PROFILE)


def examples(n: int) -> int:
    """``max_examples`` for a property test sized ``n`` for CI: ``n`` under the default
    profile, ``LONG_EXAMPLES_FACTOR`` times it under ``evolog-long``."""
    return n * LONG_EXAMPLES_FACTOR if HYPOTHESIS_PROFILE == "evolog-long" else n


DEFAULT_CRASH_LOOPS = 5
LONG_CRASH_LOOPS = 100


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    parser.addoption(
        "--crash-loops",
        type=int,
        default=None,
        help="kills per crash test (default: $EVOLOG_CRASH_LOOPS or 5)",
    )
    if not pluginmanager.has_plugin("xdist"):
        # pyproject's addopts name xdist's options; without the plugin (`-p no:xdist`, or
        # pytest-xdist not installed) they are accepted here and the suite runs in one process.
        # (``_addoption``: pytest reserves lowercase short options; xdist registers -n so too.)
        group = parser.getgroup("xdist", "distributed testing (pytest-xdist not loaded)")
        group._addoption("-n", "--numprocesses", dest="numprocesses", default=None,
                        help="ignored: pytest-xdist is not loaded")  # fmt: skip
        group.addoption("--dist", dest="dist", default="no",
                        help="ignored: pytest-xdist is not loaded")  # fmt: skip


@pytest.fixture
def crash_loops(request: pytest.FixtureRequest) -> int:
    """How many kill -9 rounds a (non-long) crash test runs."""
    option = request.config.getoption("--crash-loops")
    if option is not None:
        return int(option)
    return int(os.environ.get("EVOLOG_CRASH_LOOPS", DEFAULT_CRASH_LOOPS))


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A path for a new store (not created yet)."""
    return tmp_path / "store"


@pytest.fixture(autouse=True, scope="session")
def _private_state_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Point ``XDG_STATE_HOME`` (the hook's fallback dead letter) and ``XDG_CACHE_HOME``
    (``evolog mcp``'s handshake cache) into the test's temp dir, for this process and every
    subprocess: a test must never read or write the user's home."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("xdg-state")))
        mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
        yield
