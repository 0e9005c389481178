"""A guard over the whole test suite: no test's connector or worker config has a key the worker reports as unknown,
unless the test expects it (it takes the warnings from the ``unknown_key_warnings`` fixture). A false warning on the
project's own configs would teach users to ignore the warning."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest


class UnknownKeyWarnings(logging.Handler):
    """The unknown-key warnings the worker logged during one test (records with an ``unknown_key`` attribute)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if hasattr(record, "unknown_key"):
            self.records.append(record)

    def take(self) -> list[str]:
        """The unknown keys warned about so far, in order; the test expected them, so they are forgotten."""
        taken, self.records = self.records, []
        return [str(record.__dict__["unknown_key"]) for record in taken]


@pytest.fixture(autouse=True)
def unknown_key_warnings() -> Iterator[UnknownKeyWarnings]:
    handler = UnknownKeyWarnings()
    logger = logging.getLogger("headwater")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
    messages = [record.getMessage() for record in handler.records]
    assert not messages, f"a connector or worker config of this test has keys the worker does not know: {messages}"
