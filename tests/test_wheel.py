"""The wheel holds the whole tree: every module and data file under each folder ``pyproject.toml`` maps into
``headwater``, nothing stale, and entry points that resolve in it (:mod:`support.wheel_contents`); the sdist builds
the same wheel as the tree; both pass ``twine check``."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from support.distribution import Distribution, build_wheel_from_tree
from support.wheel_contents import entry_points, wheel_differences, wheel_problems


def test_the_wheel_holds_every_module_and_data_file_of_the_tree(headwater_distribution: Distribution) -> None:
    assert wheel_problems(headwater_distribution.wheel) == []


def test_the_wheels_entry_points_are_checked(headwater_distribution: Distribution) -> None:
    declared = {(group, name) for group, name, _ in entry_points(headwater_distribution.wheel)}
    assert {("console_scripts", "headwater"), ("pytest11", "headwater"), ("headwater.connectors", "jdbc-cdc")} <= (
        declared
    )


def test_the_sdist_builds_the_wheel_the_tree_builds(headwater_distribution: Distribution, tmp_path: Path) -> None:
    from_tree = build_wheel_from_tree(tmp_path)
    assert wheel_differences(from_tree, headwater_distribution.wheel) == []


def test_twine_check_passes_on_the_wheel_and_the_sdist(headwater_distribution: Distribution) -> None:
    artifacts = [str(headwater_distribution.wheel), str(headwater_distribution.sdist)]
    done = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *artifacts],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2, done.stdout


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


def test_two_wheels_differing_in_a_file_or_its_contents_are_told_apart(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = write_wheel(tmp_path / "a" / "x.whl", {"headwater/__init__.py": "", "x-0.dist-info/METADATA": "Version: 1"})
    second = write_wheel(tmp_path / "b" / "x.whl", {"headwater/cli.py": "", "x-0.dist-info/METADATA": "Version: 2"})
    assert wheel_differences(first, second) == [
        "only in x.whl from a: headwater/__init__.py",
        "only in x.whl from b: headwater/cli.py",
        "different: x-0.dist-info/METADATA",
    ]
