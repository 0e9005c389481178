"""Declared dependencies match imports: deptry, configured in ``pyproject.toml``'s ``[tool.deptry]``, reads every
import of the shipped packages and the declared dependencies and extras (the ``dev`` extra counted as a dev group)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_declared_dependencies_match_the_imports() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "deptry", "--no-ansi", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No dependency issues found" in done.stdout + done.stderr


def test_the_missing_worker_module_hint_covers_the_worker_extra() -> None:
    """A worker started without one of the worker extra's packages names the extra to install; the list of modules
    that hint covers is the extra's (module names are the distributions' with ``_`` for ``-``)."""
    import re
    import tomllib

    from headwater.runtime.commands.cli import WORKER_STACK

    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["worker"]
    modules = {re.split(r"[<>=!~\[ ;]", requirement, maxsplit=1)[0].replace("-", "_") for requirement in extra}
    assert set(WORKER_STACK) == modules
