"""Connector discovery and hook plumbing: entry points, class specs, hook validation, defaults and wrappers."""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any

import pluggy
import pytest

from headwater.demo import ParquetFileSink
from headwater.harness import MonitorableSinkConnector, MonitorableSourceConnector
from headwater.runtime import plugins
from headwater.runtime.plugins import implements_hook, installed_connectors, plugin_manager, resolve_connector_class
from headwater.runtime.worker import Worker
from headwater.sdk import (
    CONNECTOR_ENTRY_POINT_GROUP,
    ConfigError,
    Connector,
    SinkRecord,
    SinkTask,
    SourceRecord,
    SourceTask,
    TopicPartition,
    hookimpl,
)

TP = TopicPartition("in", 0)

# ---- connector discovery ---------------------------------------------------------------------------------------


def test_installed_connectors_come_from_the_entry_point_group() -> None:
    installed = installed_connectors()
    assert installed["monitorable-source"] is MonitorableSourceConnector
    assert installed["monitorable-sink"] is MonitorableSinkConnector


def test_an_entry_point_that_cannot_load_is_left_out_and_named_when_asked_for(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A reference connector whose extra is not installed (jdbc-cdc without SQLAlchemy) must not break the others."""
    real = entry_points(group=CONNECTOR_ENTRY_POINT_GROUP)
    broken = EntryPoint("needs-extra", "headwater_no_such_module:Connector", CONNECTOR_ENTRY_POINT_GROUP)
    monkeypatch.setattr(
        plugins,
        "installed_entry_points",
        lambda group: (*real, broken) if group == CONNECTOR_ENTRY_POINT_GROUP else (),
    )
    installed = installed_connectors()
    assert "needs-extra" not in installed and installed["monitorable-source"] is MonitorableSourceConnector
    assert "No module named 'headwater_no_such_module'" in caplog.text
    assert resolve_connector_class("monitorable-sink") is MonitorableSinkConnector
    with pytest.raises(ConfigError, match=r"No module named 'headwater_no_such_module'.*extra it needs installed"):
        resolve_connector_class("needs-extra")


def test_a_distribution_installed_while_the_process_runs_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Entry points are read once and again only when a ``sys.path`` directory changes, as an install changes it."""
    group = "headwater.test-entry-points"

    def install(name: str) -> None:
        info = tmp_path / f"{name}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text(f"[{group}]\n{name} = {name}:Thing\n")

    install("first")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert [entry.name for entry in plugins.installed_entry_points(group)] == ["first"]
    assert plugins.installed_entry_points(group) is plugins.installed_entry_points(group), "read once"
    install("second")
    assert sorted(entry.name for entry in plugins.installed_entry_points(group)) == ["first", "second"]
    monkeypatch.undo()
    assert plugins.installed_entry_points(group) == ()


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("monitorable-source", MonitorableSourceConnector),
        ("monitorable-sink", MonitorableSinkConnector),
        ("MonitorableSourceConnector", MonitorableSourceConnector),
        ("headwater.harness.monitorable:MonitorableSourceConnector", MonitorableSourceConnector),
        ("headwater.harness.monitorable.MonitorableSourceConnector", MonitorableSourceConnector),
        ("headwater.demo.sink:ParquetFileSink", ParquetFileSink),
        ("headwater.demo.sink.ParquetFileSink", ParquetFileSink),
        (MonitorableSinkConnector, MonitorableSinkConnector),
        (ParquetFileSink, ParquetFileSink),
    ],
)
def test_resolve_connector_class_accepts(spec: str | type[Connector], expected: type[Connector]) -> None:
    assert resolve_connector_class(spec) is expected


INSTALLED = "installed connectors: " + ", ".join(
    sorted(entry.name for entry in entry_points(group=CONNECTOR_ENTRY_POINT_GROUP))
)
"""What an unknown name's error lists: every connector installed through the entry-point group, sorted."""


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        (
            "no-such-connector",
            INSTALLED,
        ),
        (
            "OrderLogSourc",
            INSTALLED,
        ),
        ("headwater.runtime.worker:Worker", "not a Connector"),
        ("headwater.runtime.worker.Worker", "not a Connector"),
        (Worker, "not a Connector"),
        ("headwater.no_such_module:Thing", "No module named 'headwater.no_such_module'"),
        ("headwater.no_such_module.Thing", "No module named 'headwater.no_such_module'"),
        ("headwater.harness.monitorable:NoSuchConnector", "NoSuchConnector"),
    ],
)
def test_resolve_connector_class_rejects(spec: str | type[Any], reason: str) -> None:
    with pytest.raises(ConfigError) as raised:
        resolve_connector_class(spec)
    message = str(raised.value)
    assert raised.value.key == "connector.class"
    assert "connector.class" in message
    assert repr(spec) in message
    assert reason in message


# ---- hook validation -------------------------------------------------------------------------------------------


class RecordingSinkTask(SinkTask):
    """A sink task that records its ``flush`` and plain ``stop`` calls."""

    def __init__(self) -> None:
        self.flushed: list[dict[TopicPartition, int]] = []
        self.plain_stops = 0

    def start(self, config: Mapping[str, str]) -> None:
        pass

    def put(self, records: Sequence[SinkRecord]) -> None:
        pass

    def flush(self, current_offsets: Mapping[TopicPartition, int]) -> None:
        self.flushed.append(dict(current_offsets))

    def stop(self) -> None:
        self.plain_stops += 1


class MisspelledHookTask(RecordingSinkTask):
    @hookimpl
    def pre_comit(self) -> None:
        pass


class UnknownArgumentTask(RecordingSinkTask):
    @hookimpl
    def pre_commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        pass


def test_misspelled_hook_is_rejected_by_name() -> None:
    with pytest.raises(pluggy.PluginValidationError, match="pre_comit"):
        plugin_manager(MisspelledHookTask(), plugins=[])


def test_hook_asking_for_an_unknown_argument_is_rejected() -> None:
    with pytest.raises(pluggy.PluginValidationError, match="offsets") as raised:
        plugin_manager(UnknownArgumentTask(), plugins=[])
    assert "pre_commit" in str(raised.value)


def test_a_hook_put_on_a_class_after_an_instance_was_registered_counts_for_the_next_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What pluggy finds on a class is remembered per class attribute, so a method replaced later is looked at again."""

    class LateHookTask(RecordingSinkTask):
        def pre_commit(self, current_offsets: Mapping[TopicPartition, int]) -> None:
            """Not marked as a hook implementation: pluggy passes it over."""

    def own(manager: pluggy.PluginManager, task: object) -> list[str]:
        return [impl.function.__name__ for impl in manager.hook.pre_commit.get_hookimpls() if impl.plugin is task]

    first = LateHookTask()
    assert own(plugin_manager(first, plugins=[]), first) == []

    def pre_commit(self: SinkTask, current_offsets: Mapping[TopicPartition, int]) -> None:
        return None

    monkeypatch.setattr(LateHookTask, "pre_commit", hookimpl(pre_commit))
    second = LateHookTask()
    assert own(plugin_manager(second, plugins=[]), second) == ["pre_commit"]
    monkeypatch.undo()
    third = LateHookTask()
    assert own(plugin_manager(third, plugins=[]), third) == []


# ---- pre_commit ------------------------------------------------------------------------------------------------


class OwnPreCommitTask(RecordingSinkTask):
    """Commits whatever ``result`` says; ``None`` leaves the decision to the default."""

    def __init__(self, result: dict[TopicPartition, int] | None) -> None:
        super().__init__()
        self.result = result
        self.asked: list[dict[TopicPartition, int]] = []

    @hookimpl
    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int] | None:
        self.asked.append(dict(current_offsets))
        return self.result


def test_default_pre_commit_flushes_and_returns_the_offsets() -> None:
    task = RecordingSinkTask()
    hooks = plugin_manager(task, plugins=[]).hook
    assert hooks.pre_commit(task=task, current_offsets={TP: 7}) == {TP: 7}
    assert task.flushed == [{TP: 7}]


def test_own_pre_commit_wins_over_the_default() -> None:
    task = OwnPreCommitTask({TP: 3})
    hooks = plugin_manager(task, plugins=[]).hook
    assert hooks.pre_commit(task=task, current_offsets={TP: 7}) == {TP: 3}
    assert task.asked == [{TP: 7}]
    assert task.flushed == []


def test_own_pre_commit_returning_none_falls_back_to_the_default() -> None:
    task = OwnPreCommitTask(None)
    hooks = plugin_manager(task, plugins=[]).hook
    assert hooks.pre_commit(task=task, current_offsets={TP: 7}) == {TP: 7}
    assert task.asked == [{TP: 7}]
    assert task.flushed == [{TP: 7}]


class PreCommitSpy:
    """A cross-cutting plugin that wraps pre_commit and sees its result."""

    def __init__(self) -> None:
        self.seen: list[tuple[object, Mapping[TopicPartition, int] | None]] = []

    @hookimpl(wrapper=True)
    def pre_commit(
        self, task: SinkTask, current_offsets: Mapping[TopicPartition, int]
    ) -> Generator[None, Mapping[TopicPartition, int] | None, Mapping[TopicPartition, int] | None]:
        result = yield
        self.seen.append((task, result))
        return result


@pytest.mark.parametrize(("own", "expected"), [({TP: 3}, {TP: 3}), (None, {TP: 7})])
def test_wrapper_plugin_sees_the_pre_commit_result(
    own: dict[TopicPartition, int] | None, expected: dict[TopicPartition, int]
) -> None:
    task = OwnPreCommitTask(own)
    spy = PreCommitSpy()
    hooks = plugin_manager(task, plugins=[spy]).hook
    assert hooks.pre_commit(task=task, current_offsets={TP: 7}) == expected
    assert spy.seen == [(task, expected)]


# ---- stop ------------------------------------------------------------------------------------------------------


class StopHookTask(RecordingSinkTask):
    def __init__(self) -> None:
        super().__init__()
        self.hook_stops: list[bool] = []

    @hookimpl
    def stop(self, connector_deleted: bool) -> None:  # type: ignore[override]
        self.hook_stops.append(connector_deleted)


class OnStopTask(RecordingSinkTask):
    def __init__(self) -> None:
        super().__init__()
        self.hook_stops: list[bool] = []

    @hookimpl(specname="stop")
    def on_stop(self, connector_deleted: bool) -> None:
        self.hook_stops.append(connector_deleted)


class PollingTask(SourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        pass

    def poll(self) -> list[SourceRecord]:
        return []


@pytest.mark.parametrize(
    ("task", "hook", "expected"),
    [
        (StopHookTask(), "stop", True),
        (OnStopTask(), "stop", True),
        (RecordingSinkTask(), "stop", False),
        (OnStopTask(), "pre_commit", False),
        (OwnPreCommitTask(None), "pre_commit", True),
        (PollingTask(), "produce_heartbeat_records", False),
    ],
)
def test_implements_hook(task: object, hook: str, expected: bool) -> None:
    assert implements_hook(task, hook) is expected


def test_default_stop_calls_the_plain_stop_of_a_task_without_a_stop_hook() -> None:
    task = RecordingSinkTask()
    plugin_manager(task, plugins=[]).hook.stop(instance=task, connector_deleted=True)
    assert task.plain_stops == 1


@pytest.mark.parametrize("task_class", [StopHookTask, OnStopTask])
def test_default_stop_leaves_a_task_with_a_stop_hook_alone(task_class: type[StopHookTask | OnStopTask]) -> None:
    task = task_class()
    plugin_manager(task, plugins=[]).hook.stop(instance=task, connector_deleted=True)
    assert task.hook_stops == [True]
    assert task.plain_stops == 0
