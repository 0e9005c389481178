"""Makes ``conformance_samples`` (connectors that keep or break the offset contract) importable by the harness
tests, which are not a package; runs the conformance suites' real-broker checks once each."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SAMPLES_PATH = Path(__file__).with_name("conformance_samples.py")
CONFORMANCE_MODULE = "tests/harness/test_conformance.py::"

if "conformance_samples" not in sys.modules:
    _spec = importlib.util.spec_from_file_location("conformance_samples", SAMPLES_PATH)
    assert _spec is not None and _spec.loader is not None
    _module = importlib.util.module_from_spec(_spec)
    sys.modules[_spec.name] = _module
    _spec.loader.exec_module(_module)


PATTERNS = ("feed_pattern", "produce_pattern")
"""The parameters that say how records come (all at once, or one per pass): which bugs a check catches depends on
them (a sink committing what it only buffered shows with records trickling in only), on the real broker too."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The conformance suites' real-broker run of ``test_conformance.py`` keeps one case of each check per pattern
    of records (:data:`PATTERNS`): the batch sizes, bad configs and connector states at a delete that a check is
    also parametrized with exercise the connector's and the herder's logic, which the simulated run covers case by
    case; what the real broker adds (its producers, consumer groups, compacted topics) is the same in each, and each
    case costs seconds."""
    kept: set[tuple[str, ...]] = set()
    deselected: list[pytest.Item] = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        if not item.nodeid.startswith(CONFORMANCE_MODULE) or callspec is None:
            continue
        if callspec.params.get("conformance_backend") != "kafka":
            continue
        patterns = tuple(str(callspec.params.get(name)) for name in PATTERNS)
        check = (item.nodeid.split("::")[1], getattr(item, "originalname", item.name), *patterns)
        if check in kept:
            deselected.append(item)
        kept.add(check)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if item not in deselected]
