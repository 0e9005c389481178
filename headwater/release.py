"""Which Headwater this is: the installed distribution's version and the commit it was built from, as ``headwater
--version`` and the REST API's ``GET /`` report them.

``setup.py`` runs this file on its own (it imports nothing of Headwater at module level) to record the commit at
build time, so that the build and the run-time lookup are one piece of code.
"""

from __future__ import annotations

import subprocess
from functools import cache
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as distribution_version
from importlib.resources import files
from pathlib import Path

DISTRIBUTION = "headwater"
COMMIT_FILE = "commit.txt"
"""The file of the ``headwater`` package in which a build records its commit (written by ``setup.py``, never
checked in)."""
COMMIT_LENGTH = 16
"""Hex digits of a commit shown, as Kafka shows its own (``GET /`` of a Kafka Connect worker)."""


@cache
def version() -> str:
    """The installed distribution's version (as this process found it: an upgrade while it runs does not change the
    code it runs); ``headwater.__version__`` where the tree runs without being installed."""
    try:
        return distribution_version(DISTRIBUTION)
    except PackageNotFoundError:
        from headwater import __version__

        return __version__


@cache
def commit() -> str | None:
    """The commit Headwater was built from, recorded in the wheel when it was built from a git checkout (or from an
    sdist made from one); for a development (editable) install, the commit checked out in the tree it runs from;
    None when neither tells."""
    recorded = files("headwater").joinpath(COMMIT_FILE)
    if recorded.is_file():
        return recorded.read_text().strip() or None
    return git_commit(Path(__file__).resolve().parent.parent)


def git_commit(root: Path) -> str | None:
    """The commit checked out at ``root`` when ``root`` is the top of a git work tree (not merely inside one, as a
    virtual environment or an unpacked sdist may be); None otherwise or without git."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--show-toplevel", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    found = done.stdout.split()
    if done.returncode != 0 or len(found) != 2 or Path(found[0]).resolve() != root.resolve():
        return None
    return found[1][:COMMIT_LENGTH]


__all__ = ["COMMIT_FILE", "commit", "git_commit", "version"]
