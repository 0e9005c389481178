"""Fresh virtual environments made from the session's wheel alone (:mod:`support.venvs`), each made once per
session on first use and shared by the tests that need it; every test here carries the ``install`` marker
(:mod:`support.tiers` derives it from the wheel's fixture)."""

from __future__ import annotations

import pytest

from support.distribution import Distribution
from support.venvs import Venv, Venvs


@pytest.fixture(scope="session")
def venvs(headwater_distribution: Distribution, tmp_path_factory: pytest.TempPathFactory) -> Venvs:
    """The session's fresh venvs."""
    return Venvs(tmp_path_factory.mktemp("venvs"), headwater_distribution)


@pytest.fixture(scope="session")
def core_venv(venvs: Venvs) -> Venv:
    """``pip install headwater``: the SDK, the runtime and the simulated worker; no extra."""
    return venvs.get("core", [venvs.headwater()])
