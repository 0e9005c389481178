"""The distribution as a whole: its version, its ``python -m headwater`` entry."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

import headwater


def test_version_is_the_installed_distributions() -> None:
    assert headwater.__version__ == importlib.metadata.version("headwater")


def test_python_dash_m_headwater_is_the_headwater_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "headwater", "--help"], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: headwater ")
    assert "standalone" in done.stdout and "distributed" in done.stdout
