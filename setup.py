"""Package discovery that follows the tree.

``pyproject.toml`` maps each top-level folder to a subpackage of ``headwater`` (``sdk/`` -> ``headwater.sdk``); this
finds every package below those folders and every file in them that is not Python source (``py.typed``, the Spark
sink's ``ivysettings.xml``, ...), so that a new module or data file cannot be left out of the wheel.
``tests/test_wheel.py`` checks the built wheel against the tree.

A build from a git checkout records the commit checked out in ``headwater/commit.txt`` of the wheel, and of the sdist
so that the wheel built from the sdist has it too (``headwater/release.py`` reads it); a build from anything else
records none. The wheel is built from a fresh copy of the import root, so that a module deleted from the tree cannot
linger in it from an earlier build.
"""

from __future__ import annotations

import runpy
import shutil
import tomllib
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = Path(__file__).parent
SKIPPED = {"__pycache__"}
RELEASE = runpy.run_path(str(HERE / "headwater" / "release.py"))
"""``headwater/release.py``, run on its own: where the commit is recorded and how it is read from git."""


def package_dirs() -> dict[str, str]:
    """The import root's packages and their folders, as ``pyproject.toml`` maps them."""
    config = tomllib.loads((HERE / "pyproject.toml").read_text())
    mapped: dict[str, str] = config["tool"]["setuptools"]["package-dir"]
    return mapped


def packages() -> list[str]:
    """Every package below each mapped folder, under its import name."""
    found: list[str] = []
    for name, folder in package_dirs().items():
        found.append(name)
        found += [f"{name}.{sub}" for sub in find_packages(where=str(HERE / folder))]
    return sorted(found)


def package_data() -> dict[str, list[str]]:
    """Each package's files that are not Python source nor bytecode."""
    data: dict[str, list[str]] = {}
    mapped = package_dirs()
    for package in packages():
        root = next(
            name for name in sorted(mapped, key=len, reverse=True) if package == name or package.startswith(name + ".")
        )
        folder = HERE / mapped[root] / Path(*package[len(root) :].lstrip(".").split(".") if package != root else [])
        files = [
            path.name
            for path in sorted(folder.iterdir())
            if path.is_file() and path.suffix not in {".py", ".pyc"} and path.parent.name not in SKIPPED
        ]
        if files:
            data[package] = files
    return data


def record_commit(package_folder: Path) -> None:
    """Write the commit checked out here into ``package_folder`` (the ``headwater`` package of a build or of an
    sdist's tree), when this is a git checkout."""
    commit = RELEASE["git_commit"](HERE)
    if commit is None:
        return
    recorded = package_folder / RELEASE["COMMIT_FILE"]
    recorded.unlink(missing_ok=True)  # never write through a hard link into the tree (sdist's release tree)
    recorded.write_text(commit + "\n")


class BuildPy(build_py):
    """Builds the import root from scratch and records the commit in it."""

    def run(self) -> None:
        if not self.editable_mode:
            shutil.rmtree(Path(self.build_lib) / "headwater", ignore_errors=True)
        super().run()
        if not self.editable_mode:
            record_commit(Path(self.build_lib) / "headwater")


class Sdist(sdist):
    """Records the commit in the sdist, where the wheel built from it finds it as package data."""

    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        record_commit(Path(base_dir) / "headwater")


setup(packages=packages(), package_data=package_data(), cmdclass={"build_py": BuildPy, "sdist": Sdist})
