"""Headwater: Kafka Connect for Python.

The parts install as subpackages of this root: :mod:`headwater.sdk` (what a connector author imports),
:mod:`headwater.runtime` (the worker), :mod:`headwater.harness` (the simulated worker, conformance suite and pytest
plugin), :mod:`headwater.reference_connectors` and :mod:`headwater.demo` (the main job, ``make demo``).
``python -m headwater`` is the ``headwater`` command.
"""

__version__ = "0.1.0"
"""The distribution's version; ``pyproject.toml`` reads it from here."""

__all__ = ["__version__"]
