"""The conformance suite: one call in a connector's own test module gives a pytest class that checks the offset
contract on the connector (Meltano's ``get_tap_test_class`` pattern)::

    TestMySource = source_conformance(MySource, config={"topic": "orders"}, feed=add_rows,
                                      provisioned=replication_slots, bad_configs=[({"batch.size": "0"}, "batch.size")])

Every test runs on the simulated worker; with ``--conformance-kafka`` (or ``kafka=True``) each runs again on a real
broker (the ``kafka_bootstrap`` fixture's). A failure names the guarantee that broke and shows the records and
offsets involved. The checks per kind are in :mod:`headwater.harness.source_suite` and
:mod:`headwater.harness.sink_suite`; this module holds what both share.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import pytest

from headwater.harness import guarantees as g
from headwater.harness.driver import ConnectorDriver, WorkerFactory
from headwater.harness.kafka_worker import KafkaSteppedWorker
from headwater.harness.simulated import SimulatedWorker
from headwater.runtime.tasks.base import State
from headwater.sdk.connector import Connector
from headwater.sdk.errors import ConfigError

CLEANUP = "stop(connector_deleted=True) removes what the connector provisioned; nothing else does"

BadConfig = tuple[Mapping[str, Any], str]
"""Config values that must be rejected (merged over the good config; ``None`` removes a key) and the key the error
must name."""


@dataclass(frozen=True)
class ConformanceContext:
    """What a conformance test hands a config callable: a fresh directory, and names no other test uses."""

    tmp_path: Path
    name: str
    """The connector's name."""
    topic: str
    """A topic of this test alone: a source may write to it; a sink is given it as ``topics``."""
    heartbeat_topic: str

    @classmethod
    def named(cls, tmp_path: Path, suffix: str = "") -> ConformanceContext:
        """A context whose connector, topics and tasks cannot be taken for one another in a report: connector
        ``conformance``, its tasks ``conformance-0``, ``conformance-1``...; topic ``conformance-records``, whose
        partitions print as ``conformance-records-0``...; heartbeats in ``conformance-heartbeats``."""
        return cls(tmp_path, f"conformance{suffix}", f"conformance-records{suffix}", f"conformance-heartbeats{suffix}")


ConfigSpec = Mapping[str, Any] | Callable[[ConformanceContext], Mapping[str, Any]]


class Conformance:
    """What the source and sink suites share: fixtures, config validation, and cleanup on delete.

    Subclass :class:`~headwater.harness.source_suite.SourceConformance` or
    :class:`~headwater.harness.sink_suite.SinkConformance` (or call their factories) and override the probes.
    """

    connector: ClassVar[type[Connector] | str]
    config: ClassVar[ConfigSpec] = {}
    worker_config: ClassVar[Mapping[str, Any]] = {"offset.flush.interval.ms": 1_000}
    bad_configs: ClassVar[Sequence[BadConfig]] = ()
    kafka: ClassVar[bool] = False
    """Also run every test on a real broker (as ``--conformance-kafka`` does for every suite)."""
    run_ms: ClassVar[int] = 3_000
    """Virtual time each phase of a test runs for."""

    # ---- probes the author overrides -------------------------------------------------------------------------

    def connector_config(self, context: ConformanceContext) -> dict[str, Any]:
        spec = type(self).config
        return dict(spec(context) if callable(spec) else spec)

    def provisioned(self, config: Mapping[str, Any]) -> Any:
        """What the connector has provisioned in the outside system now (slots, tables, queues, files); anything
        truthy while it exists, falsy once removed. ``NotImplemented`` skips the cleanup check."""
        return NotImplemented

    # ---- fixtures --------------------------------------------------------------------------------------------

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if "conformance_backend" in metafunc.fixturenames:
            backends = [pytest.param("simulated", id="simulated")]
            if type(self).kafka or metafunc.config.getoption("conformance_kafka", False):
                backends.append(pytest.param("kafka", id="kafka", marks=pytest.mark.kafka))
            metafunc.parametrize("conformance_backend", backends)
        if "bad_config" in metafunc.fixturenames:
            bad = list(type(self).bad_configs)
            cases = [pytest.param(case, id=case[1]) for case in bad] or [
                pytest.param(None, marks=pytest.mark.skip(reason="no bad_configs given to the conformance suite"))
            ]
            metafunc.parametrize("bad_config", cases)

    @pytest.fixture
    def conformance_context(self, tmp_path: Path, conformance_backend: str) -> ConformanceContext:
        suffix = "" if conformance_backend == "simulated" else f"-{uuid.uuid4().hex[:8]}"
        return ConformanceContext.named(tmp_path, suffix)

    @pytest.fixture
    def make_driver(
        self, conformance_context: ConformanceContext, conformance_backend: str, request: pytest.FixtureRequest
    ) -> Iterator[Callable[..., ConnectorDriver]]:
        """Makes the connector under test, not started yet, on the backend of this run; keyword arguments override
        the worker config (``offset_flush_interval_ms=10``: ``_`` for ``.``). Each is closed after the test."""
        make: WorkerFactory = SimulatedWorker
        if conformance_backend == "kafka":
            bootstrap = request.getfixturevalue("kafka_bootstrap")

            def make(config: Mapping[str, Any], **options: Any) -> SimulatedWorker:
                return KafkaSteppedWorker(bootstrap, config, **options)

        made: list[ConnectorDriver] = []

        def driver(**worker_config: Any) -> ConnectorDriver:
            config = self.connector_config(conformance_context)
            overrides = {key.replace("_", "."): value for key, value in worker_config.items()}
            found = ConnectorDriver(
                self.connector,
                config,
                name=conformance_context.name,
                worker_config={**self.worker_config, **overrides},
                make=make,
            )
            made.append(found)
            return found

        yield driver
        for found in made:
            found.close()

    @pytest.fixture
    def driver(self, make_driver: Callable[..., ConnectorDriver]) -> ConnectorDriver:
        """The connector under test, not started yet, on the backend of this run, with :attr:`worker_config`."""
        return make_driver()

    # ---- shared tests ----------------------------------------------------------------------------------------

    def test_config_is_accepted_and_runs(self, driver: ConnectorDriver) -> None:
        self.start(driver)
        driver.advance(self.run_ms)
        assert_running(driver)

    def test_bad_config_is_rejected_naming_the_key(self, driver: ConnectorDriver, bad_config: BadConfig) -> None:
        bad, key = bad_config
        props = {k: v for k, v in {**driver.config, **bad}.items() if v is not None}
        guarantee = "config validation rejects a bad value with a message naming its key"
        try:
            driver.worker.herder.put_connector_config(driver.name, {**props, "connector.class": driver.connector})
        except ConfigError as error:
            named = getattr(error, "errors", {error.key: [str(error)]})
            if key not in named or key not in str(error):
                raise g.GuaranteeViolation(
                    guarantee, f"config {dict(bad)} was rejected, but not naming {key!r}:\n{error}"
                ) from error
        else:
            raise g.GuaranteeViolation(guarantee, f"config {dict(bad)} (key {key!r}) was accepted:\n{props}")
        assert driver.name not in driver.worker.herder.connectors(), "a rejected connector must not be created"

    def test_delete_cleans_up_and_nothing_else_does(self, driver: ConnectorDriver) -> None:
        """What the connector provisioned stays through a plain stop, a restart, a rebalance and a crash of its
        tasks, and goes when it is deleted, whether it was running, paused, stopped or failed."""
        if self.provisioned(driver.config) is NotImplemented:
            pytest.skip("no provisioned probe given to the conformance suite")
        self.start(driver)
        driver.advance(self.run_ms)
        running = self.provisioned(driver.config)
        if not running:
            raise g.GuaranteeViolation(CLEANUP, f"the probe reports nothing provisioned while it runs: {running!r}")
        events: tuple[tuple[str, Callable[[], None]], ...] = (
            ("a plain stop", lambda: driver.worker.stop_connector(driver.name)),
            ("a resume", lambda: driver.worker.resume_connector(driver.name)),
            ("a restart", driver.restart),
            ("a rebalance", driver.rebalance),
            ("a crash of the tasks", driver.crash_tasks),
        )
        for event, act in events:
            stops = len(driver.tap.stops)
            act()
            driver.advance(self.run_ms)
            kept = self.provisioned(driver.config)
            if not kept:
                raise g.GuaranteeViolation(CLEANUP, f"{event} removed it: {running!r} before, {kept!r} after")
            told = [flag for _, flag in driver.tap.stops[stops:] if flag]
            assert not told, f"{event} said connector_deleted=True: {driver.tap.stops[stops:]}"
        self.delete_and_check(driver, "running")

    @pytest.mark.parametrize("state", ["paused", "stopped", "failed"])
    def test_delete_cleans_up_in_any_state(self, driver: ConnectorDriver, state: str) -> None:
        """Deleting a paused or stopped connector, or one whose tasks failed, still tells it
        ``connector_deleted=True`` (KIP-901)."""
        if self.provisioned(driver.config) is NotImplemented:
            pytest.skip("no provisioned probe given to the conformance suite")
        self.start(driver)
        driver.advance(self.run_ms)
        if state == "paused":
            driver.worker.pause_connector(driver.name)
        elif state == "stopped":
            driver.worker.stop_connector(driver.name)
        else:
            driver.tap.fail_tasks()
            driver.run_until(lambda: not driver.tap.failing, what="the tasks to fail")
            herder = driver.worker.herder
            failed = [id for id in driver.worker.worker.task_ids(driver.name) if herder.task_state(id) is State.FAILED]
            assert failed, f"no task failed: {driver!r}"
        driver.advance(self.run_ms)
        self.delete_and_check(driver, state)

    def delete_and_check(self, driver: ConnectorDriver, state: str) -> None:
        """Delete the connector (in ``state``) and check that what it provisioned is gone."""
        stops = len(driver.tap.stops)
        driver.worker.delete_connector(driver.name)
        left = self.provisioned(driver.config)
        told = driver.tap.stops[stops:]
        if left:
            raise g.GuaranteeViolation(CLEANUP, f"deleting it while {state} left {left!r}; stop was called: {told}")
        assert told and all(flag for _, flag in told), f"delete must say connector_deleted=True: {told}"
        g.assert_stop_hooks_clean(driver.tap)

    # ---- for the suites --------------------------------------------------------------------------------------

    def start(self, driver: ConnectorDriver) -> None:
        driver.start()


def assert_running(driver: ConnectorDriver) -> None:
    """The connector and every task it should have are RUNNING; else fail with their failure traces."""
    herder = driver.worker.herder
    states = {key: found for key, found in herder.statuses.items() if key[0] == driver.name}
    if not states or any(state is not State.RUNNING for state, _ in states.values()):
        traces = "\n".join(f"{key}: {state.value}\n{trace or ''}" for key, (state, trace) in states.items())
        raise AssertionError(f"connector {driver.name} is not running with config {driver.config}:\n{traces}")
    g.assert_stop_hooks_clean(driver.tap)


def class_name(connector: type[Connector] | str) -> str:
    """The bare class name of a connector class or of its import path."""
    return connector.__name__ if isinstance(connector, type) else connector.replace(":", ".").rpartition(".")[2]


Suite = TypeVar("Suite", bound=Conformance)


def suite_class(
    base: type[Suite],
    connector: type[Connector] | str,
    config: ConfigSpec,
    probes: Mapping[str, Callable[..., Any] | None],
    bad_configs: Sequence[BadConfig],
    worker_config: Mapping[str, Any] | None,
    kafka: bool,
) -> type[Suite]:
    """A subclass of ``base`` checking ``connector``: each probe given becomes the method of its name."""
    attrs: dict[str, Any] = {
        "connector": connector,
        "config": config,
        "bad_configs": tuple(bad_configs),
        "kafka": kafka,
    }
    if worker_config is not None:
        attrs["worker_config"] = {**base.worker_config, **worker_config}
    attrs.update({name: staticmethod(probe) for name, probe in probes.items() if probe is not None})
    return type(f"Test{class_name(connector)}Conformance", (base,), attrs)
