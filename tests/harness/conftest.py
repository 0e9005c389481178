"""Makes ``conformance_samples`` (connectors that keep or break the offset contract) importable by the harness
tests, which are not a package."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SAMPLES_PATH = Path(__file__).with_name("conformance_samples.py")

if "conformance_samples" not in sys.modules:
    _spec = importlib.util.spec_from_file_location("conformance_samples", SAMPLES_PATH)
    assert _spec is not None and _spec.loader is not None
    _module = importlib.util.module_from_spec(_spec)
    sys.modules[_spec.name] = _module
    _spec.loader.exec_module(_module)
