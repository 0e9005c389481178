"""How a failing harness test (a conformance check or a stateful machine) is reported: once, whatever the project's
warning filters, without repeated noise.

The pytest plugin (:mod:`headwater.harness.plugin`) wraps the making of each harness test's report:

* warnings raised while pytest and its plugins *make* the report are shown in pytest's warnings summary instead of
  raised. pytest applies the project's ``filterwarnings`` to a test's whole run protocol, report hooks included;
  under ``filterwarnings = error`` a deprecation in a dependency that a report hook calls (Hypothesis' own
  ``pytest_runtest_makereport`` imports ``libcst`` to write a patch of the failing example) ends the session in
  ``INTERNALERROR`` and the failure's report is never printed. The test's own phases (setup, call, teardown) keep
  the project's filters: a warning in the connector's code or its test still fails the test.
* each captured log section shows a repeated log record once, with how many times it came (``(x27)``): a machine
  runs the connector through hundreds of examples and crashes, and the runtime logs each crash.
"""

from __future__ import annotations

import logging
import re
import sys
from collections import Counter
from typing import Any

import pytest

_LEVELS = "|".join(re.escape(logging.getLevelName(level)) for level in (10, 20, 30, 40, 50))
_RECORD_START = re.compile(rf"^(?:{_LEVELS})\b")
"""The first line of a record in pytest's default log format (``%(levelname)-8s %(name)s:...``)."""


def is_harness_test(item: pytest.Item) -> bool:
    """Whether ``item`` is a test of the harness's own making: a conformance suite's check or a stateful machine's
    test case (:func:`~headwater.harness.stateful.machine_test`)."""
    conformance = sys.modules.get("headwater.harness.conformance")
    cls = getattr(item, "cls", None)
    if conformance is not None and isinstance(cls, type) and issubclass(cls, conformance.Conformance):
        return True
    stateful = sys.modules.get("headwater.harness.stateful")
    machine = getattr(getattr(item, "obj", None), "_hypothesis_state_machine_class", None)
    return stateful is not None and isinstance(machine, type) and issubclass(machine, stateful.ConnectorMachine)


def collapse_repeats(log: str) -> str:
    """A captured log section with each distinct record (its first line and any traceback lines after it) once,
    where it first came, followed by ``(xN)`` when it came N > 1 times. Lines of a format that does not start with
    the level name are each a record of their own."""
    lines = log.splitlines()
    leveled = any(_RECORD_START.match(line) for line in lines)
    records: list[list[str]] = []
    for line in lines:
        if leveled and records and not _RECORD_START.match(line):
            records[-1].append(line)
        else:
            records.append([line])
    counts = Counter("\n".join(record) for record in records)
    shown: list[str] = []
    for text, count in counts.items():
        first, _, rest = text.partition("\n")
        shown.append(f"{first} (x{count})" + (f"\n{rest}" if rest else "") if count > 1 else text)
    return "\n".join(shown)


def tidy_sections(report: Any) -> None:
    """Collapse the repeated records of ``report``'s captured log sections (:func:`collapse_repeats`)."""
    report.sections = [
        (title, collapse_repeats(content) if title.startswith("Captured log") else content)
        for title, content in report.sections
    ]
