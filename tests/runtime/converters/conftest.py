"""The converter tests' fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from support.registry_converters import close_made


@pytest.fixture(autouse=True)
def closed() -> Iterator[None]:
    """Every converter a test makes with ``support.registry_converters.made`` is closed after it."""
    yield
    close_made()
