"""The pytest plugin itself, run in a nested pytest through ``pytester``.

The plugin is loaded through the installed ``pytest11`` entry point, so the nested runs get it without ``-p``.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import headwater.harness.cluster as cluster_module
from headwater.harness.cluster import SECOND_BOOTSTRAP_ENV
from headwater.harness.maven import BrokerUnavailable
from headwater.harness.plugin import REQUIRE_ENV

pytest_plugins = ["pytester"]


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """A nested in-process run. Hypothesis's plugin is left out: importing it again in every run costs seconds."""
    return pytester.runpytest("-p", "no:hypothesispytest", *args)


def test_plugin_is_loaded_from_its_entry_point(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfigure()
    assert config.pluginmanager.has_plugin("headwater")


def test_simulated_worker_fixture_runs_a_source(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_three_values(simulated_worker):
            simulated_worker.add_connector(
                "src",
                "headwater.harness.monitorable:MonitorableSourceConnector",
                {"topic": "t", "max.messages": 3},
            )
            simulated_worker.advance(100)
            assert simulated_worker.values("t") == [{"task": 0, "seq": n} for n in range(3)]
        """
    )
    result = run(pytester)
    result.assert_outcomes(passed=1)


def test_assert_source_offset_failure_shows_connector_expectation_and_worker(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_offset(simulated_worker):
            simulated_worker.add_connector(
                "src-under-test",
                "headwater.harness.monitorable:MonitorableSourceConnector",
                {"topic": "t", "max.messages": 3},
            )
            simulated_worker.advance(100)
            simulated_worker.assert_source_offset("src-under-test", {"task.id": "src-under-test-0"}, {"saved": 42})
        """
    )
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*committed offset of src-under-test * is None, expected {'saved': 42}*",
            "*SimulatedWorker(now_ms=*",
        ]
    )


def test_kafka_marker_is_registered(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.kafka
        def test_needs_a_broker():
            pass
        """
    )
    result = run(pytester, "--strict-markers")
    result.assert_outcomes(passed=1)


def test_unregistered_marker_fails_strict_collection(pytester: pytest.Pytester) -> None:
    """The control for the test above: ``--strict-markers`` does reject a marker nobody registered."""
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.kafkaa
        def test_typo():
            pass
        """
    )
    result = run(pytester, "--strict-markers")
    result.assert_outcomes(errors=1)


def test_make_simulated_worker_closes_every_worker_at_teardown(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        made = []

        def test_make_two(make_simulated_worker):
            made.append(make_simulated_worker())
            made.append(make_simulated_worker(tick_ms=5))
            assert not any(worker.closed for worker in made)

        def test_make_one_and_fail(make_simulated_worker):
            made.append(make_simulated_worker())
            raise AssertionError("deliberately failing")

        def test_all_closed_afterwards():
            assert len(made) == 3
            assert [worker.closed for worker in made] == [True, True, True]
        """
    )
    result = run(pytester, "-p", "no:randomly")  # the tests depend on their order
    result.assert_outcomes(passed=2, failed=1)


SECOND_CLUSTER_TEST = """
    def test_second(second_kafka_bootstrap):
        assert second_kafka_bootstrap == "10.0.0.9:9092"
"""


def test_second_kafka_cluster_takes_given_servers(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cluster_module, "docker_answers", lambda: pytest.fail("docker must not be asked"))
    monkeypatch.setenv(SECOND_BOOTSTRAP_ENV, "10.0.0.9:9092")
    pytester.makepyfile(SECOND_CLUSTER_TEST)
    run(pytester).assert_outcomes(passed=1)
    monkeypatch.delenv(SECOND_BOOTSTRAP_ENV)
    run(pytester, "--second-kafka-bootstrap", "10.0.0.9:9092").assert_outcomes(passed=1)


def test_second_kafka_cluster_skips_or_fails_like_the_first(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SECOND_BOOTSTRAP_ENV, raising=False)
    monkeypatch.delenv(REQUIRE_ENV, raising=False)
    monkeypatch.setattr(cluster_module, "docker_answers", lambda: False)

    def no_java() -> cluster_module.Cluster:
        raise BrokerUnavailable("java not found")

    monkeypatch.setattr(cluster_module, "_local_jars", no_java)
    pytester.makepyfile(SECOND_CLUSTER_TEST)
    skipped = run(pytester, "-rs")
    skipped.assert_outcomes(skipped=1)
    skipped.stdout.fnmatch_lines(["*java not found*--second-kafka-bootstrap or HEADWATER_SECOND_KAFKA_BOOTSTRAP*"])
    run(pytester, "--require-kafka").assert_outcomes(errors=1)


DATABASE_FIXTURES = ["postgres_server", "mariadb_server", "postgres_database", "mariadb_database"]


@pytest.mark.parametrize("fixture", DATABASE_FIXTURES)
def test_the_installed_plugin_offers_no_database_fixtures(pytester: pytest.Pytester, fixture: str) -> None:
    """Database servers (which may run ``apt-get install``) are Headwater's own test infrastructure, registered by
    its test suite (``tests/support/fixtures.py``), not by the plugin every installing project loads."""
    pytester.makepyfile(f"def test_needs_a_database({fixture}):\n    pass\n")
    result = run(pytester)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*fixture '{fixture}' not found*"])
    assert run(pytester, "--require-databases").ret == pytest.ExitCode.USAGE_ERROR


HEAVY_MODULES = [
    "confluent_kafka",
    "fastapi",
    "headwater.runtime",
    "httpx",
    "hypothesis",
    "psycopg2",
    "pymysql",
    "pyspark",
    "sqlalchemy",
    "testcontainers",
    "uvicorn",
]


def test_importing_the_plugin_imports_nothing_heavy_until_a_fixture_needs_it() -> None:
    """Every project that installs Headwater loads the plugin; the runtime, the Kafka client and the database,
    Spark and HTTP libraries come in only with the fixtures that use them (the worker fixtures, here)."""
    script = (
        "import json, sys\n"
        "import headwater.harness.plugin\n"
        f"heavy = {HEAVY_MODULES!r}\n"
        "before = [name for name in heavy if name in sys.modules]\n"
        "from headwater.harness import SimulatedWorker  # what make_simulated_worker imports\n"
        "after = [name for name in heavy if name in sys.modules]\n"
        "print(json.dumps([before, after]))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    before, after = json.loads(done.stdout)
    assert before == []
    assert {"confluent_kafka", "headwater.runtime"} <= set(after)  # the control: the check sees a heavy import
