"""The test connectors' short names, ``monitorable-source``, ``monitorable-sink``, ``sequence-source`` and
``discard-sink``, registered by the test suite, never by the installed package.

They are ``headwater.connectors`` entry points of a distribution of the tests' own,
``tests/headwater_test_connectors.dist-info``, which the runtime finds like any installed connector whenever
``tests/`` is on the Python path: in the test session (pytest's ``pythonpath``) and in the worker subprocesses the
tests start (``PYTHONPATH``, :func:`worker_env`), the way Kafka Connect finds the connectors of a ``plugin.path``
directory. The synthetic connectors are the repository's examples (``examples/synthetic.py``), so ``examples/`` is
on the path too. A worker started without these directories lists only what is installed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parents[1]
EXAMPLES_DIR = TESTS_DIR.parent / "examples"
ALLOWED_MODULES = {"connector.class.allowed.modules": "tests,support"}
"""Worker settings that let the test suite's workers load the connectors its test modules define by import path
(``tests.runtime.test_x:Source``, ``support.errant_sink:ErrantSinkConnector``); by default a worker loads only
installed connectors."""
CONNECTOR_PATH = (TESTS_DIR, EXAMPLES_DIR)
"""The directories that make the test connectors' short names resolve, in ``PYTHONPATH`` order."""


def python_path(directories: tuple[Path | str, ...] = CONNECTOR_PATH, existing: str | None = None) -> str:
    """``PYTHONPATH`` with ``directories`` first, then ``existing`` (default: this process's ``PYTHONPATH``)."""
    existing = os.environ.get("PYTHONPATH", "") if existing is None else existing
    return os.pathsep.join([*map(str, directories), *([existing] if existing else [])])


def worker_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's environment) with :data:`CONNECTOR_PATH` first on ``PYTHONPATH``, for a
    worker subprocess that runs the test connectors by their short names."""
    base = dict(os.environ if env is None else env)
    return {**base, "PYTHONPATH": python_path(existing=base.get("PYTHONPATH", ""))}
