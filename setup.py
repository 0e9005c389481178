"""Package discovery that follows the tree.

``pyproject.toml`` maps each top-level folder to a subpackage of ``headwater`` (``sdk/`` -> ``headwater.sdk``); this
finds every package below those folders and every file in them that is not Python source (``py.typed``, the Spark
sink's ``ivysettings.xml``, ...), so that a new module or data file cannot be left out of the wheel.
``tests/test_wheel.py`` checks the built wheel against the tree.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).parent
SKIPPED = {"__pycache__"}


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


setup(packages=packages(), package_data=package_data())
