"""The transport tests' fake clocks."""

from __future__ import annotations

import pytest

from support.clocks import Clocks


@pytest.fixture
def clocks() -> Clocks:
    return Clocks()
