"""Services shared by pytest-xdist's workers (:mod:`headwater.harness.shared_services`), shown on a stand-in service
(a sleeping process) in nested runs over two workers: started once by the first worker that needs it, reused by the
other, stopped once by the controller when the run ends, also when a test failed or the run was interrupted; a start
that fails is tried once and every worker skips with its reason; without xdist the fixture starts and stops its own.
The plugin's ``kafka_cluster`` shares one broker this way (``test_the_workers_of_a_run_share_one_broker``)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from headwater.harness.cluster import BOOTSTRAP_ENV, docker_answers
from headwater.harness.maven import cache_root
from headwater.harness.shared_services import WORKERINPUT_KEY, SharedServices, Started
from support.spark_services import pid_alive

pytest.importorskip("xdist", reason="the shared services are pytest-xdist's")

pytestmark = pytest.mark.services  # nested pytest-xdist runs, one of them interrupted with SIGINT


@pytest.fixture(autouse=True)
def outside_any_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """The nested runs start as a run of their own, also when this test runs on a pytest-xdist worker, whose
    variables they would otherwise inherit (the stand-in names its process by ``PYTEST_XDIST_WORKER``)."""
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)


SERVICE = """
import json, os, signal, subprocess, sys
from pathlib import Path

from headwater.harness.shared_services import Started

LOG = Path(os.environ["SERVICE_LOG"])


def note(**fields):
    with LOG.open("a") as log:
        log.write(json.dumps({"process": os.environ.get("PYTEST_XDIST_WORKER", "controller"), **fields}) + "\\n")


def start():
    note(event="start")
    if os.environ.get("SERVICE_UNAVAILABLE"):
        raise RuntimeError("no stand-in service here: " + os.environ["SERVICE_UNAVAILABLE"])
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    return Started({"pid": process.pid}, stop, holds=process)


def stop(state):
    note(event="stop", pid=state["pid"])
    os.kill(state["pid"], signal.SIGKILL)
"""

CONFTEST = """
import pytest

from headwater.harness.shared_services import SharedServices
import service


@pytest.fixture(scope="session")
def stand_in(pytestconfig):
    shared = SharedServices.of(pytestconfig)
    if shared is None:
        started = service.start()
        yield started.state["pid"]
        service.stop(started.state)
        return
    try:
        state = shared.get("stand-in", service.start, RuntimeError)
    except RuntimeError as error:
        pytest.skip(str(error))
    service.note(event="directory", path=str(shared.directory))
    yield state["pid"]
"""

TESTS = """
import os, threading
from pathlib import Path

import service


def check(stand_in):
    os.kill(stand_in, 0)
    service.note(event="used", pid=stand_in)


def test_one(stand_in):
    check(stand_in)


def test_two(stand_in):
    check(stand_in)


def test_three(stand_in):
    check(stand_in)


def test_four(stand_in):
    check(stand_in)
    if os.environ.get("SERVICE_FAIL"):
        assert False, "a failing test"
    if os.environ.get("SERVICE_BLOCK"):
        service.note(event="blocking")
        threading.Event().wait(120)  # a test still running when the run is interrupted
"""


def events(log: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.fixture
def nested(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project of four tests that use the stand-in service; the service's log, which each process appends to."""
    pytester.makepyfile(service=SERVICE, conftest=CONFTEST, test_stand_in=TESTS)
    log = pytester.path / "service.log"
    monkeypatch.setenv("SERVICE_LOG", str(log))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(pytester.path), os.environ.get("PYTHONPATH", "")]))
    return log


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args, timeout=300)


def assert_started_once_shared_and_stopped_by_the_controller(log: Path) -> int:
    found = events(log)
    starts = [event for event in found if event["event"] == "start"]
    used = [event for event in found if event["event"] == "used"]
    stops = [event for event in found if event["event"] == "stop"]
    assert len(starts) == 1, found
    pid = used[0]["pid"]
    assert {event["pid"] for event in used} == {pid}, found
    assert {event["process"] for event in used} == {"gw0", "gw1"}, "both workers used it"
    assert [(event["process"], event["pid"]) for event in stops] == [("controller", pid)], found
    assert isinstance(pid, int) and not pid_alive(pid)
    directories = {event["path"] for event in found if event["event"] == "directory"}
    assert len(directories) == 1 and not any(Path(str(path)).exists() for path in directories), "removed at the end"
    return pid


def test_the_first_worker_starts_the_service_the_other_reuses_it_and_the_controller_stops_it_after_a_failure(
    pytester: pytest.Pytester, nested: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SERVICE_FAIL", "1")
    run(pytester, "-n", "2").assert_outcomes(passed=3, failed=1)
    assert_started_once_shared_and_stopped_by_the_controller(nested)


def test_the_service_is_stopped_when_the_run_is_interrupted(
    pytester: pytest.Pytester, nested: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SERVICE_BLOCK", "1")
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2"]
    with subprocess.Popen(
        command, cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    ) as run_:
        deadline = time.monotonic() + 120
        while not any(event["event"] == "blocking" for event in events(nested)):
            assert run_.poll() is None, run_.stdout.read() if run_.stdout else ""
            assert time.monotonic() < deadline, events(nested)
            time.sleep(0.1)
        os.killpg(run_.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the run's whole process group
        output, _ = run_.communicate(timeout=120)
    assert "KeyboardInterrupt" in output.decode(errors="replace"), output[-2000:]
    assert_started_once_shared_and_stopped_by_the_controller(nested)


def test_a_failed_start_is_tried_once_and_every_worker_skips_with_its_reason(
    pytester: pytest.Pytester, nested: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SERVICE_UNAVAILABLE", "no sleeping allowed")
    result = run(pytester, "-n", "2", "-rs")
    result.assert_outcomes(skipped=4)
    assert result.stdout.str().count("no stand-in service here: no sleeping allowed") >= 1
    found = events(nested)
    assert [event["event"] for event in found if event["event"] in ("start", "stop")] == ["start"], found


@pytest.mark.parametrize("no_xdist", [["-p", "no:xdist"], ["-n", "0"]])
def test_without_workers_the_fixture_starts_and_stops_its_own(
    pytester: pytest.Pytester, nested: Path, no_xdist: list[str]
) -> None:
    run(pytester, *no_xdist).assert_outcomes(passed=4)
    found = events(nested)
    assert [event["event"] for event in found] == ["start", "used", "used", "used", "used", "stop"], found
    assert {event["process"] for event in found} == {"controller"}, "one process, no worker"


def test_a_worker_waits_for_the_start_in_progress_and_a_record_is_written_whole(tmp_path: Path) -> None:
    shared = SharedServices(tmp_path)
    calls: list[str] = []

    def start() -> Started:
        calls.append("start")
        assert not (tmp_path / "s.json").exists(), "no record before the service has started"
        return Started({"port": 1}, test_a_worker_waits_for_the_start_in_progress_and_a_record_is_written_whole)

    assert shared.get("s", start, RuntimeError) == {"port": 1}
    assert shared.get("s", start, RuntimeError) == {"port": 1}
    assert calls == ["start"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["s.json", "s.lock"]
    assert repr(shared) == f"SharedServices({str(tmp_path)!r}, recorded=['s'])"


def test_a_worker_finds_the_runs_directory_in_its_workerinput_and_a_process_of_its_own_has_none(
    tmp_path: Path,
) -> None:
    worker = SimpleNamespace(workerinput={"workerid": "gw0", WORKERINPUT_KEY: str(tmp_path)})
    found = SharedServices.of(worker)  # type: ignore[arg-type]
    assert found is not None and found.directory == tmp_path
    assert SharedServices.of(SimpleNamespace()) is None  # type: ignore[arg-type]
    assert SharedServices.of(SimpleNamespace(workerinput={"workerid": "gw0"})) is None  # type: ignore[arg-type]


BROKER_TESTS = """
import json, os


def note(bootstrap):
    with open(os.environ["SERVICE_LOG"], "a") as log:
        log.write(json.dumps({"process": os.environ["PYTEST_XDIST_WORKER"], "bootstrap": bootstrap}) + "\\n")


def test_one(kafka_bootstrap):
    note(kafka_bootstrap)


def test_two(kafka_bootstrap):
    note(kafka_bootstrap)
"""


@pytest.mark.kafka
def test_the_workers_of_a_run_share_one_broker(
    pytestconfig: pytest.Config, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plugin's ``kafka_cluster`` over two workers: one local broker, stopped once the run ends."""
    for env in (BOOTSTRAP_ENV, "HEADWATER_KAFKA_IMAGE"):
        monkeypatch.delenv(env, raising=False)
    monkeypatch.setenv("HEADWATER_CACHE", str(cache_root()))  # the jars fetched already (pytester moves HOME)
    if docker_answers():
        pytest.skip("with a Docker engine each worker has a container broker of its own")
    log = pytester.path / "brokers.log"
    monkeypatch.setenv("SERVICE_LOG", str(log))
    pytester.makepyfile(test_brokers=BROKER_TESTS)
    require = ["--require-kafka"] if pytestconfig.getoption("require_kafka") else []
    result = run(pytester, "-n", "2", *require)
    if result.parseoutcomes().get("skipped"):
        pytest.skip(f"no broker: {result.stdout.str()[-1000:]}")
    result.assert_outcomes(passed=2)
    found = [json.loads(line) for line in log.read_text().splitlines()]
    assert {entry["process"] for entry in found} == {"gw0", "gw1"}
    bootstraps = {entry["bootstrap"] for entry in found}
    assert len(bootstraps) == 1, found
    host, port = bootstraps.pop().split(":")
    with pytest.raises(OSError):  # stopped when the run ended
        socket.create_connection((host, int(port)), timeout=5).close()
