"""Which Headwater this is (:mod:`headwater.release`): the version from the installed distribution, the commit the
build recorded from its git checkout, or, for the development install, the commit checked out; ``headwater
--version`` prints both."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import headwater
from headwater import release
from support.distribution import SOURCE_ROOT, Distribution

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"]


def test_the_version_is_the_installed_distributions() -> None:
    assert release.version() == importlib.metadata.version("headwater") == headwater.__version__


def test_the_wheel_and_the_sdist_record_the_commit_they_were_built_from(headwater_distribution: Distribution) -> None:
    checked_out = release.git_commit(SOURCE_ROOT)
    recorded = f"headwater/{release.COMMIT_FILE}"
    with zipfile.ZipFile(headwater_distribution.wheel) as wheel:
        in_wheel = wheel.read(recorded).decode().strip() if recorded in wheel.namelist() else None
    with tarfile.open(headwater_distribution.sdist) as sdist:
        member = next((name for name in sdist.getnames() if name.endswith(f"/{recorded}")), None)
        in_sdist = sdist.extractfile(member).read().decode().strip() if member else None
    assert in_wheel == in_sdist == checked_out


def test_the_installed_wheel_reports_its_recorded_commit(headwater_distribution: Distribution, tmp_path: Path) -> None:
    with zipfile.ZipFile(headwater_distribution.wheel) as wheel:
        wheel.extractall(tmp_path)
    done = subprocess.run(
        [sys.executable, "-S", "-c", "from headwater import release; print(release.version(), release.commit())"],
        env={"PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [headwater.__version__, str(release.git_commit(SOURCE_ROOT))]


@pytest.mark.parametrize(
    "command", [[sys.executable, "-m", "headwater"], [str(Path(sys.executable).parent / "headwater")]]
)
def test_headwater_dash_dash_version_prints_the_version_and_the_commit(command: list[str]) -> None:
    done = subprocess.run([*command, "--version"], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    commit = release.git_commit(SOURCE_ROOT)
    version = importlib.metadata.version("headwater")
    assert done.stdout == (f"headwater {version} (commit {commit})\n" if commit else f"headwater {version}\n")


def test_the_development_install_reports_the_commit_checked_out() -> None:
    assert release.commit() == release.git_commit(SOURCE_ROOT)


def test_only_the_top_of_a_git_work_tree_gives_a_commit(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    (repo / "sub" / "file").write_text("x")
    for args in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "one"]):
        subprocess.run([*GIT, *args], cwd=repo, check=True, capture_output=True, timeout=60)
    head = subprocess.run([*GIT, "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True).stdout
    (tmp_path / "plain").mkdir()
    assert release.git_commit(repo) == head.strip()[: release.COMMIT_LENGTH]
    assert release.git_commit(repo / "sub") is None
    assert release.git_commit(tmp_path / "plain") is None
