"""The wheel holds the whole tree: every module and data file under each folder ``pyproject.toml`` maps into
``headwater``, nothing stale, and entry points that resolve in it (:mod:`support.wheel_contents`)."""

from __future__ import annotations

import zipfile
from pathlib import Path

from support.distribution import Distribution
from support.wheel_contents import entry_points, wheel_problems


def test_the_wheel_holds_every_module_and_data_file_of_the_tree(headwater_distribution: Distribution) -> None:
    assert wheel_problems(headwater_distribution.wheel) == []


def test_the_wheels_entry_points_are_checked(headwater_distribution: Distribution) -> None:
    declared = {(group, name) for group, name, _ in entry_points(headwater_distribution.wheel)}
    assert {("console_scripts", "headwater"), ("pytest11", "headwater"), ("headwater.connectors", "jdbc-cdc")} <= (
        declared
    )


def write_tree(root: Path) -> None:
    (root / "pyproject.toml").write_text(
        '[tool.setuptools]\npackage-dir = { "headwater" = "headwater", "headwater.sdk" = "sdk" }\n'
    )
    for path, text in {
        "headwater/__init__.py": "",
        "sdk/__init__.py": "from headwater.sdk.task import Task\n",
        "sdk/task.py": "class Task: ...\n",
        "sdk/py.typed": "",
        "sdk/transforms/__init__.py": "",
        "sdk/__pycache__/task.cpython-311.pyc": "",
    }.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)


def write_wheel(wheel: Path, files: dict[str, str]) -> Path:
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return wheel


def test_a_wheel_missing_a_package_a_data_file_or_an_entry_points_module_is_named(tmp_path: Path) -> None:
    write_tree(tmp_path)
    wheel = write_wheel(
        tmp_path / "headwater-0-py3-none-any.whl",
        {
            "headwater/__init__.py": "",
            "headwater/sdk/__init__.py": "from headwater.sdk.task import Task\n",
            "headwater/sdk/task.py": "class Task: ...\n",
            "headwater/sdk/old.py": "",
            "headwater-0.dist-info/entry_points.txt": (
                "[console_scripts]\nheadwater = headwater.sdk.cli:main\n\n"
                "[headwater.connectors]\ntask = headwater.sdk:Task\nother = headwater.sdk:Other\n"
            ),
        },
    )
    assert wheel_problems(wheel, tmp_path) == [
        "missing data file headwater/sdk/py.typed (from sdk/py.typed)",
        "missing module headwater/sdk/transforms/__init__.py (from sdk/transforms/__init__.py)",
        "not in the tree: headwater/sdk/old.py",
        "entry point console_scripts:headwater = headwater.sdk.cli:main: module headwater.sdk.cli is not in the wheel",
        "entry point headwater.connectors:other = headwater.sdk:Other: headwater/sdk/__init__.py does not define Other",
    ]
