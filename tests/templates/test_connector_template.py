"""``cookiecutter templates/connector`` gives an installable project whose tests pass: rendered for a source and for
a sink, installed into a fresh virtual environment, linted, and its tests run in a subprocess, the way an author
would. Each run prints how long render + install + tests took (the author's first two minutes)."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import time
import venv
from pathlib import Path

import pytest
from cookiecutter.main import cookiecutter

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "templates" / "connector"


def run(*command: str | Path, cwd: Path | None = None, timeout: int = 600) -> str:
    """Run ``command``; fail with its output when it fails."""
    done = subprocess.run([str(part) for part in command], cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, (
        f"{' '.join(map(str, command))} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    )
    return done.stdout


def environment(path: Path) -> Path:
    """A fresh virtual environment that sees this one's packages (Headwater, pytest, Hypothesis, pip, setuptools)
    through a ``.pth`` file, so the generated project installs without the network; returns its python."""
    venv.EnvBuilder(with_pip=False).create(path)
    python = path / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    target = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip())
    parents = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    target.joinpath("_headwater_parent.pth").write_text(
        "".join(f"import site; site.addsitedir({parent!r})\n" for parent in parents)
    )
    return python


def render(kind: str, output: Path, transformation: str = "no") -> Path:
    project = cookiecutter(
        str(TEMPLATE),
        no_input=True,
        output_dir=str(output),
        extra_context={
            "connector_kind": kind,
            "connector_name": "Acme Orders",
            "include_transformation": transformation,
        },
        default_config={"replay_dir": str(output / ".replay"), "cookiecutters_dir": str(output / ".templates")},
    )
    return Path(project)


@pytest.mark.parametrize(("kind", "transformation"), [("source", "no"), ("sink", "no"), ("source", "yes")])
def test_rendered_project_installs_and_its_tests_pass(kind: str, transformation: str, tmp_path: Path) -> None:
    started = time.monotonic()
    project = render(kind, tmp_path, transformation)
    package = project / f"acme_orders_{kind}"
    assert project.name == f"acme-orders-{kind}"
    assert (package / f"{kind}.py").is_file() and not (
        package / f"{'sink' if kind == 'source' else 'source'}.py"
    ).exists()
    assert (project / "tests" / f"test_{kind}.py").is_file() and (project / "README.md").is_file()
    assert (
        f'acme-orders-{kind} = "acme_orders_{kind}:AcmeOrders{kind.title()}Connector"'
        in (project / "pyproject.toml").read_text()
    )

    transforms = package / "transforms.py", project / "tests" / "test_transforms.py"
    assert [path.is_file() for path in transforms] == [transformation == "yes"] * 2
    registered = f'acme-orders-{kind}-tag = "acme_orders_{kind}.transforms:AcmeOrdersTag"'
    assert (registered in (project / "pyproject.toml").read_text()) == (transformation == "yes")

    python = environment(tmp_path / "env")
    run(python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "-e", project)
    run(python, "-m", "ruff", "check", "--quiet", project)
    run(python, "-m", "ruff", "format", "--check", "--quiet", project)
    output = run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=project)

    elapsed = time.monotonic() - started
    summary = output.strip().splitlines()[-1]
    assert summary.endswith(" passed") or " passed in " in summary, output
    assert not any(word in summary for word in ("failed", "error", "skipped")), output
    assert int(summary.split(" passed")[0].split()[-1]) >= 9, f"every conformance check runs: {summary}"
    if transformation == "yes":
        alone = run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_transforms.py", cwd=project)
        assert alone.strip().splitlines()[-1].startswith("5 passed"), alone
    print(f"\n{kind} (transformation: {transformation}): rendered, installed and tested in {elapsed:.1f} s: {summary}")
