"""Fresh virtual environments made from the session's wheel alone (:mod:`support.venvs`), each made once per
session on first use and shared by the tests that need it; every test here carries the ``install`` marker."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.distribution import Distribution
from support.venvs import Venv, Venvs

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def venvs(headwater_distribution: Distribution, tmp_path_factory: pytest.TempPathFactory) -> Venvs:
    """The session's fresh venvs."""
    return Venvs(tmp_path_factory.mktemp("venvs"), headwater_distribution)


@pytest.fixture(scope="session")
def core_venv(venvs: Venvs) -> Venv:
    """``pip install headwater``: the SDK, the runtime and the simulated worker; no extra."""
    return venvs.get("core", [venvs.headwater()])


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.install)
