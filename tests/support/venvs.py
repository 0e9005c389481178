"""Fresh virtual environments that install Headwater from the session's wheel (:mod:`support.distribution`) and only
what they are asked for, the way a user or a connector author installs it: no editable install, no ``dev`` extra,
nothing of the test session's own environment on their path.

They are made with uv (``uv venv``, ``uv pip install``, ``uv build``, from the ``uv`` package of the ``dev`` extra)
rather than ``python -m venv`` and pip, for speed: uv resolves from the same package index and honours extras
the same way, but installs each dependency by hard-linking it from its cache instead of unpacking and copying it,
so a venv takes about a second once the cache holds its dependencies (pip: tens of seconds, more than a minute for
the 650 MB of the ``spark-sink`` extra). Each install is tried from the cache alone (``--offline``) first: online,
uv revalidates every cached index page and download, and pyspark, published only as an sdist, was built anew
every time (about 50 s); only when the cache lacks something is the index asked.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from uv import find_uv_bin

from support.distribution import Distribution

UV = find_uv_bin()

SERVER_STACK = frozenset({"fastapi", "uvicorn", "starlette", "pydantic", "prometheus-client", "cryptography"})
"""Distributions that the ``worker`` extra installs (the REST API's server stack and the metrics exporter)."""

TEST_TOOLS = frozenset({"pytest", "hypothesis", "testcontainers"})
"""Distributions that the ``harness`` extra installs."""

LEFT_OUT = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONSAFEPATH", "VIRTUAL_ENV", "CONDA_PREFIX")
"""Environment variables that would let the test session's environment leak into a fresh venv's processes."""


def clean_env(venv: Path | None = None, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without what would reach into it (:data:`LEFT_OUT`, pytest's own variables),
    with ``venv``'s scripts first on ``PATH``."""
    env = {key: value for key, value in os.environ.items() if key not in LEFT_OUT and not key.startswith("PYTEST_")}
    if venv is not None:
        env["VIRTUAL_ENV"] = str(venv)
        env["PATH"] = os.pathsep.join([str(venv / "bin"), env.get("PATH", "")])
    return {**env, **(extra or {})}


def run(
    command: Sequence[str | os.PathLike[str]],
    cwd: Path,
    env: Mapping[str, str] | None = None,
    timeout: float = 600,
) -> str:
    """Run ``command`` in ``cwd``; its standard output, or an AssertionError with all it printed when it fails."""
    done = subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=dict(env) if env is not None else clean_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        shown = " ".join(str(part) for part in command)
        raise AssertionError(
            f"{shown} exited {done.returncode} in {cwd}:\n{done.stdout[-6000:]}\n{done.stderr[-6000:]}"
        )
    return done.stdout


def uv(*args: str | os.PathLike[str], cwd: Path) -> str:
    """``uv args...`` from the cache alone, else (when the cache lacks something) from the package index."""
    try:
        return run([UV, *args, "--offline"], cwd)
    except AssertionError:
        return run([UV, *args], cwd)


@dataclass(frozen=True)
class Venv:
    """A virtual environment at ``path``, made by :func:`make_venv`."""

    path: Path

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    def script(self, name: str) -> Path:
        """An installed command, such as ``headwater`` or ``pytest``."""
        return self.path / "bin" / name

    def run(self, command: Sequence[str | os.PathLike[str]], cwd: Path, timeout: float = 600) -> str:
        """Run ``command`` (a bare first word is one of this venv's scripts) in ``cwd`` with this venv active."""
        first = command[0]
        program = self.script(first) if isinstance(first, str) and os.sep not in first else first
        return run([program, *command[1:]], cwd, clean_env(self.path), timeout)

    def python_code(self, code: str, cwd: Path) -> str:
        """Run ``code`` with this venv's python in ``cwd``."""
        return self.run([self.python, "-c", code], cwd)

    def distributions(self) -> set[str]:
        """The normalised names of the distributions installed, pip and setuptools aside."""
        listed = self.python_code(
            "import importlib.metadata as m\nfor d in m.distributions(): print(d.metadata['Name'])", self.path
        )
        return {name.lower().replace("_", "-") for name in listed.split()} - {"pip", "setuptools"}

    def __repr__(self) -> str:
        return f"Venv({str(self.path)!r})"


def make_venv(path: Path, requirements: Sequence[str]) -> Venv:
    """A new venv at ``path`` on this interpreter's Python (its base, not this venv), with ``requirements``
    (``uv pip install`` arguments: requirement strings, ``-e`` and a path) installed and nothing else."""
    uv("venv", "--quiet", "--python", sys.executable, path, cwd=path.parent)
    venv = Venv(path)
    uv("pip", "install", "--quiet", "--link-mode", "hardlink", "--python", venv.python, *requirements, cwd=path.parent)
    return venv


def build_wheel(project: Path, out: Path) -> Path:
    """The wheel of the project at ``project``, built into ``out`` (in an isolated build environment, as pip or
    ``python -m build`` builds it)."""
    uv("build", "--quiet", "--wheel", "--python", sys.executable, "--out-dir", out, project, cwd=project)
    (wheel,) = out.glob("*.whl")
    return wheel


def wheel_requirement(wheel: Path, extras: Sequence[str] = ()) -> str:
    """The requirement that installs Headwater from ``wheel``, with ``extras``."""
    extra = f"[{','.join(extras)}]" if extras else ""
    return f"headwater{extra} @ {wheel.as_uri()}"


class Venvs:
    """Fresh venvs under ``root`` by name, each made on its first :meth:`get` (from any thread) and kept for the
    session."""

    def __init__(self, root: Path, distribution: Distribution) -> None:
        self.root = root
        self.distribution = distribution
        self._made: dict[str, Venv] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    def headwater(self, *extras: str) -> str:
        """The requirement that installs Headwater from the session's wheel, with ``extras``."""
        return wheel_requirement(self.distribution.wheel, extras)

    def get(self, name: str, requirements: Sequence[str]) -> Venv:
        """The venv ``name``, made with ``requirements`` (``uv pip install`` arguments) the first time."""
        with self._lock:
            lock = self._locks.setdefault(name, threading.Lock())
        with lock:
            if name not in self._made:
                self._made[name] = make_venv(self.root / name, requirements)
            return self._made[name]
