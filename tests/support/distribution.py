"""Headwater as users get it: a wheel and an sdist built from this tree with the standard build frontend, once per
test session (the ``headwater_distribution`` fixture), and fresh virtual environments that install from them alone.

Nothing here uses the editable development install: a package or data file the wheel leaves out, or an extra that
does not hold on its own, shows up as it would for a user.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

SOURCE_ROOT = Path(__file__).resolve().parents[2]
"""The checkout the distribution is built from."""


@dataclass(frozen=True)
class Distribution:
    """The built artifacts: ``wheel`` (``headwater-<version>-py3-none-any.whl``) and ``sdist`` (``.tar.gz``)."""

    wheel: Path
    sdist: Path


def build_distribution(out: Path) -> Distribution:
    """Builds the sdist, and the wheel from that sdist (``python -m build``'s default), into ``out``."""
    _build(out)
    (wheel,) = out.glob("headwater-*.whl")
    (sdist,) = out.glob("headwater-*.tar.gz")
    return Distribution(wheel=wheel, sdist=sdist)


def build_wheel_from_tree(out: Path) -> Path:
    """Builds the wheel straight from the tree (``python -m build --wheel``, as ``pip install .`` does) into ``out``."""
    _build(out, "--wheel")
    (wheel,) = out.glob("headwater-*.whl")
    return wheel


def _build(out: Path, *options: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "build", *options, "--outdir", str(out), str(SOURCE_ROOT)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(
            f"python -m build failed ({done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
        )
