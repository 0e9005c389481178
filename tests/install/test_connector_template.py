"""The template depends on exactly what it declares: ``cookiecutter templates/connector`` rendered as a source and as
a sink, each with and without the transformation, installed the way its README says (``pip install -e '.[test]'``)
into a fresh venv that holds Headwater from the session's wheel and nothing but what the project declares, is
lint-clean and passes its own tests (the conformance suite, the stateful machine, the plain tests), and its
``.gitignore`` keeps out what that left behind (caches, the build's ``*.egg-info``). Each run
prints how long its install and its tests took (the author's first minutes).

The four projects' tests run two at a time, in threads, from the first test on (only those selected); each test
waits for its own."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.template import render
from support.venvs import SERVER_STACK, TEST_TOOLS, Venv, Venvs, run

CASES = [("source", "no"), ("source", "yes"), ("sink", "no"), ("sink", "yes")]
"""(kind, include_transformation) of each generated project."""

AT_ONCE = 2
"""How many projects' tests run at a time (the machines have two cores)."""

PYTEST = ("pytest", "-q", "-p", "no:cacheprovider")


@dataclass(frozen=True)
class ProjectRun:
    """A generated project, installed into its own venv, and what its tests printed."""

    project: Path
    venv: Venv
    install_s: float
    test_s: float
    output: str
    transforms_alone: str | None
    """What ``pytest tests/test_transforms.py`` printed, for a project with the transformation."""


def install_and_test(venvs: Venvs, project: Path, kind: str, transformation: str) -> ProjectRun:
    started = time.monotonic()
    venv = venvs.get(f"{kind}-{transformation}", [venvs.headwater(), "--editable", f"{project}[test]"])
    installed = time.monotonic()
    output = venv.run(PYTEST, cwd=project)
    tested = time.monotonic()
    alone = venv.run([*PYTEST, "tests/test_transforms.py"], cwd=project) if transformation == "yes" else None
    return ProjectRun(project, venv, installed - started, tested - installed, output, alone)


SOURCE_FILES = (".py", ".md", ".toml", "py.typed", ".gitignore")
"""How the files the template renders end: what a first commit of a generated project should hold, and all."""


def committed_and_ignored(project: Path) -> tuple[list[str], list[str]]:
    """Once installed, tested and linted: what a first ``git add`` of the project would take that is not one of
    its sources, and what its ``.gitignore`` keeps out (top-level folders and files)."""
    run(["git", "init", "--quiet"], cwd=project)
    taken = run(["git", "ls-files", "--others", "--exclude-standard"], cwd=project).split()
    litter = [path for path in taken if "__pycache__" in path or not path.endswith(SOURCE_FILES)]
    ignored = run(["git", "ls-files", "--others", "--ignored", "--exclude-standard", "--directory"], cwd=project)
    return litter, ignored.split()


@pytest.fixture(scope="module")
def project_runs(
    request: pytest.FixtureRequest, venvs: Venvs, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[tuple[str, str], Future[ProjectRun]]]:
    """Each selected case's run, started in the background (rendered first, here: cookiecutter changes the
    working directory while it renders)."""
    selected = [
        item.callspec.params["case"]
        for item in request.session.items
        if item.path == request.path and hasattr(item, "callspec") and "case" in item.callspec.params
    ]
    root = tmp_path_factory.mktemp("projects")
    projects = {case: render(case[0], root / "-".join(case), case[1]) for case in dict.fromkeys(selected)}
    with ThreadPoolExecutor(max_workers=AT_ONCE, thread_name_prefix="project") as pool:
        yield {case: pool.submit(install_and_test, venvs, project, *case) for case, project in projects.items()}
        pool.shutdown(cancel_futures=True)


@pytest.mark.slow(seconds=40)
@pytest.mark.parametrize("case", CASES, ids=["-".join(case) for case in CASES])
def test_a_generated_project_passes_its_own_tests_with_what_it_declares(
    case: tuple[str, str], project_runs: dict[tuple[str, str], Future[ProjectRun]]
) -> None:
    kind, transformation = case
    done = project_runs[case].result()
    project, package = done.project, done.project / f"acme_orders_{kind}"
    pyproject = (project / "pyproject.toml").read_text()

    assert project.name == f"acme-orders-{kind}"
    other = "sink" if kind == "source" else "source"
    assert (package / f"{kind}.py").is_file() and not (package / f"{other}.py").exists()
    assert (project / "tests" / f"test_{kind}.py").is_file() and (project / "README.md").is_file()
    assert f'acme-orders-{kind} = "acme_orders_{kind}:AcmeOrders{kind.title()}Connector"' in pyproject
    transforms = package / "transforms.py", project / "tests" / "test_transforms.py"
    assert [path.is_file() for path in transforms] == [transformation == "yes"] * 2
    registered = f'acme-orders-{kind}-tag = "acme_orders_{kind}.transforms:AcmeOrdersTag"'
    assert (registered in pyproject) == (transformation == "yes")

    installed = done.venv.distributions()
    assert installed >= TEST_TOOLS | {"headwater", f"acme-orders-{kind}"}, "the test extra: headwater[harness]"
    assert installed & SERVER_STACK == set(), "an author's tests never pull in the worker's server stack"

    run([sys.executable, "-m", "ruff", "check", "--quiet", project], cwd=project)
    run([sys.executable, "-m", "ruff", "format", "--check", "--quiet", project], cwd=project)
    litter, ignored = committed_and_ignored(project)
    assert litter == [], f"a first commit would take caches or builds its .gitignore should keep out: {litter}"
    assert {".hypothesis/", ".ruff_cache/"} <= set(ignored), f"its tests and lint ran, yet ignored only {ignored}"

    summary = done.output.strip().splitlines()[-1]
    assert " passed" in summary, done.output
    assert not any(word in summary for word in ("failed", "error", "skipped")), done.output
    assert int(summary.split(" passed")[0].split()[-1]) >= 9, f"every conformance check runs: {summary}"
    if done.transforms_alone is not None:
        assert done.transforms_alone.strip().splitlines()[-1].startswith("5 passed"), done.transforms_alone
    print(f"\n{kind} (transformation: {transformation}): installed in {done.install_s:.1f} s, {summary}")
