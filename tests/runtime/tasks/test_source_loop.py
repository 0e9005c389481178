"""The source task loop on the simulated worker: offsets, commits, send failures, pause, converters, and (on a real
broker too) records a compacted topic refuses and heartbeats keyed for it.

Kafka Connect's ``WorkerSourceTaskTest`` checks, on the virtual clock.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from headwater.harness import MonitorableSourceConnector, RuntimeHandles, SimulatedWorker
from headwater.runtime.converters import infer_schema
from headwater.runtime.tasks.base import State
from headwater.sdk import SourceBatch, SourceRecord, SourceTask, Type, hookimpl
from headwater.sdk.errors import RetriableError

Make = Callable[..., SimulatedWorker]
P0 = {"task.id": "src-0"}
FAST = {"offset.flush.interval.ms": 1000}


def start_source(worker: SimulatedWorker, **props: Any) -> None:
    worker.add_connector("src", MonitorableSourceConnector, {"topic": "data", **props})


def test_periodic_commit_writes_acked_offsets_then_tells_the_task(
    make_simulated_worker: Make, runtime_handles: RuntimeHandles
) -> None:
    worker = make_simulated_worker(FAST)
    start_source(worker, **{"max.messages": 5})
    worker.advance(990)
    assert worker.source_offset("src", P0) is None, "nothing is committed before the first interval"
    assert len(worker.messages("data")) == 5
    worker.advance(10)
    worker.assert_source_offset("src", P0, {"saved": 4})
    assert runtime_handles.task("src").committed[-1] == [(P0, {"saved": 4})]
    assert [h for h, who, _ in worker.hook_calls if who == "src-0"].count("offsets_committed") == 1


def test_failed_offset_flush_keeps_offsets_for_the_next_attempt(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker(FAST)
    start_source(worker, **{"max.messages": 3})
    worker.offset_store.fail_next_sets(1)
    worker.advance(1000)
    assert worker.source_offset("src", P0) is None
    assert worker.source_task("src").commit_failures == 1
    worker.advance(1000)
    worker.assert_source_offset("src", P0, {"saved": 2})


def test_failed_flush_merges_with_newer_offsets(make_simulated_worker: Make, runtime_handles: RuntimeHandles) -> None:
    worker = make_simulated_worker(FAST)
    start_source(worker, **{"messages.per.poll": 0})
    runtime_handles.task("src").pending.extend(["a", "b"])
    worker.offset_store.fail_next_sets(1)
    worker.advance(1000)
    runtime_handles.task("src").pending.append("c")
    worker.advance(1000)
    worker.assert_source_offset("src", P0, {"saved": 2})


def test_retriable_send_error_resends_from_the_failed_record(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker(FAST)
    start_source(worker, **{"messages.per.poll": 3, "max.messages": 3})
    worker.broker.fail_next_sends(1, retriable=True)
    worker.step()
    assert worker.messages("data") == [] or len(worker.messages("data")) == 0
    worker.advance(50)
    assert len(worker.messages("data")) == 0, "the resend waits out the 100 ms back-off"
    worker.advance(60)
    assert [v["seq"] for v in worker.values("data")] == [0, 1, 2]
    worker.advance(1000)
    worker.assert_source_offset("src", P0, {"saved": 2})
    assert worker.task_state("src") is State.RUNNING


def test_asynchronous_send_failure_fails_the_task(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker(FAST)
    start_source(worker, **{"max.messages": 3})
    worker.broker.fail_next_deliveries(1)
    worker.advance(100)
    assert worker.task_state("src") is State.FAILED
    assert "failed to store a record" in str(worker.source_task("src").failure)


def test_non_retriable_synchronous_send_error_fails_the_task(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker(FAST)
    start_source(worker)
    worker.broker.fail_next_sends(1, retriable=False)
    worker.step()
    assert worker.task_state("src") is State.FAILED


def test_tolerated_send_failure_is_acknowledged_and_its_offset_moves(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker(FAST)
    start_source(worker, **{"max.messages": 2, "messages.per.poll": 2, "errors.tolerance": "all"})
    worker.broker.fail_next_deliveries(1)
    worker.advance(1000)
    assert worker.task_state("src") is State.RUNNING
    assert [v["seq"] for v in worker.values("data")] == [1]
    worker.assert_source_offset("src", P0, {"saved": 1})
    failure = worker.source_task("src").errors.last_failure
    assert failure is not None and failure.record is not None
    assert failure.record.source_offset == {"saved": 0}, "the failure names the record that failed, not its batch"


def test_poll_without_records_commits_nothing(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker(FAST)
    start_source(worker, **{"messages.per.poll": 0})
    worker.advance(3000)
    assert worker.messages("data") == []
    assert worker.source_offset("src", P0) is None
    assert worker.source_task("src").commits == 3, "commit() is still reported when there was nothing to flush"


class FlakyPollTask(SourceTask):
    polls = 0

    def start(self, config: Any) -> None:
        pass

    def poll(self) -> list[SourceRecord]:
        FlakyPollTask.polls += 1
        if FlakyPollTask.polls == 1:
            raise RetriableError("source busy")
        return [SourceRecord({"p": 1}, {"n": FlakyPollTask.polls}, "flaky", "v")] if FlakyPollTask.polls < 4 else []


class FlakyPollConnector(MonitorableSourceConnector):
    def task_class(self) -> type[SourceTask]:
        return FlakyPollTask

    def config_def(self) -> Any:
        return super().config_def().merge(type(super().config_def())())


def test_retriable_error_from_poll_is_treated_as_no_records(make_simulated_worker: Make) -> None:
    FlakyPollTask.polls = 0
    worker = make_simulated_worker(FAST)
    worker.add_connector("flaky", FlakyPollConnector, {"topic": "unused"})
    worker.advance(1000)
    assert worker.task_state("flaky") is State.RUNNING
    assert worker.values("flaky") == ["v", "v"]
    worker.assert_source_offset("flaky", {"p": 1}, {"n": 3})


def test_paused_task_is_not_polled_and_resumes(make_simulated_worker: Make, runtime_handles: RuntimeHandles) -> None:
    worker = make_simulated_worker(FAST)
    start_source(worker)
    worker.advance(100)
    sent = len(worker.messages("data"))
    worker.pause("src")
    polls = runtime_handles.task("src").names().count("poll")
    worker.advance(1000)
    assert runtime_handles.task("src").names().count("poll") == polls
    assert len(worker.messages("data")) == sent
    worker.resume("src")
    worker.advance(100)
    assert len(worker.messages("data")) > sent


def test_connector_created_paused_has_no_task_until_resumed(
    make_simulated_worker: Make, runtime_handles: RuntimeHandles
) -> None:
    """As Kafka Connect's herders, which ask only a STARTED connector for task configs (KIP-980)."""
    worker = make_simulated_worker(FAST)
    worker.herder.put_connector_config(
        "src", {"connector.class": "monitorable-source", "topic": "data"}, initial_state="PAUSED"
    )
    worker.advance(500)
    assert worker.herder.connector_state("src") is State.PAUSED
    assert worker.herder.tasks("src") == []
    assert worker.task_state("src") is None
    worker.resume_connector("src")
    worker.advance(500)
    assert worker.task_state("src") is State.RUNNING
    assert "poll" in runtime_handles.task("src").names()


def test_none_offset_deletes_the_stored_offset(make_simulated_worker: Make, runtime_handles: RuntimeHandles) -> None:
    worker = make_simulated_worker(FAST)
    worker.add_connector("gone", NoneOffsetConnector, {"topic": "t"})
    worker.advance(1000)
    worker.assert_source_offset("gone", {"p": 1}, {"n": 1})
    NoneOffsetTask.emit_none = True
    worker.advance(1000)
    worker.assert_source_offset("gone", {"p": 1}, None)
    assert worker.offset_store.connector_partitions("gone") == []


class NoneOffsetTask(SourceTask):
    emit_none = False
    sent = 0

    def start(self, config: Any) -> None:
        NoneOffsetTask.emit_none = False

    def poll(self) -> list[SourceRecord]:
        if NoneOffsetTask.emit_none:
            NoneOffsetTask.emit_none = False
            return [SourceRecord({"p": 1}, None, "t", "deleted")]
        if self.sent == 0:
            self.sent = 1
            return [SourceRecord({"p": 1}, {"n": 1}, "t", "first")]
        return []


class NoneOffsetConnector(MonitorableSourceConnector):
    def task_class(self) -> type[SourceTask]:
        return NoneOffsetTask


def test_stop_makes_a_final_commit(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker({"offset.flush.interval.ms": 60_000})
    start_source(worker, **{"max.messages": 4})
    worker.advance(100)
    assert worker.source_offset("src", P0) is None
    worker.stop_connector("src")
    worker.assert_source_offset("src", P0, {"saved": 3})


def test_final_commit_covers_only_acknowledged_records(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker(FAST)
    start_source(worker, **{"max.messages": 4})
    worker.advance(20)
    worker.broker.hold_acks("data")
    worker.advance(50)
    assert len(worker.messages("data")) == 4
    worker.stop_connector("src")
    worker.assert_source_offset("src", P0, {"saved": 0})


def test_restart_resumes_from_the_committed_offset(
    make_simulated_worker: Make, runtime_handles: RuntimeHandles
) -> None:
    worker = make_simulated_worker(FAST)
    start_source(worker, **{"max.messages": 3})
    worker.advance(1000)
    worker.restart_connector("src")
    worker.herder.put_connector_config(
        "src", {"connector.class": "monitorable-source", "topic": "data", "max.messages": 6}
    )
    worker.advance(1000)
    assert [v["seq"] for v in worker.values("data")] == [0, 1, 2, 3, 4, 5]
    worker.assert_source_offset("src", P0, {"saved": 5})


@pytest.mark.parametrize(
    ("converter", "extra", "expected"),
    [
        ("string", {}, b"{'task': 0, 'seq': 0}"),
        ("json", {"value.converter.schemas.enable": "false"}, b'{"task":0,"seq":0}'),
        (
            "org.apache.kafka.connect.json.JsonConverter",
            {"value.converter.schemas.enable": "true"},
            b'{"schema":{"type":"struct","fields":[{"type":"int64","optional":true,"field":"task"},'
            b'{"type":"int64","optional":true,"field":"seq"}],"optional":false},"payload":{"task":0,"seq":0}}',
        ),
    ],
)
def test_value_converter_is_applied_at_the_transport_boundary(
    make_simulated_worker: Make, converter: str, extra: dict[str, str], expected: bytes
) -> None:
    worker = make_simulated_worker(FAST)
    start_source(worker, **{"max.messages": 1, "value.converter": converter, **extra})
    worker.advance(20)
    assert worker.messages("data")[0].value == expected
    assert worker.messages("data")[0].key == b'{"task.id":"src-0"}'


def test_conversion_failure_names_the_topic_and_fails_the_task(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker(FAST)
    start_source(worker, **{"value.converter": "bytes"})
    worker.step()
    assert worker.task_state("src") is State.FAILED
    assert "'data'" in str(worker.source_task("src").failure)


def test_tolerated_conversion_failure_skips_the_record_and_commits_past_it(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker(FAST)
    start_source(worker, **{"max.messages": 3, "value.converter": "bytes", "errors.tolerance": "all"})
    worker.advance(1000)
    assert worker.task_state("src") is State.RUNNING
    assert worker.messages("data") == [], "no value of this task is bytes, so every record is skipped"
    worker.assert_source_offset("src", P0, {"saved": 2})


class ColumnsTask(SourceTask):
    """Hands over one SourceBatch of JSON-able values (not bytes), then nothing."""

    def start(self, config: Any) -> None:
        self.sent = False

    def poll(self) -> SourceBatch | None:
        if self.sent:
            return None
        self.sent = True
        return SourceBatch({"p": 1}, "cols", [{"n": 0}, {"n": 1}, {"n": 2}], [{"at": 0}, {"at": 1}, {"at": 2}])


class ColumnsConnector(FlakyPollConnector):
    def task_class(self) -> type[SourceTask]:
        return ColumnsTask


@pytest.mark.parametrize("converter", ["json", "bytes"])
def test_a_batch_the_converters_must_see_is_sent_record_by_record(make_simulated_worker: Make, converter: str) -> None:
    worker = make_simulated_worker({**FAST, "value.converter": converter, "errors.tolerance": "none"})
    worker.add_connector("cols", ColumnsConnector, {"topic": "unused"})
    worker.advance(1000)
    if converter == "json":
        assert worker.values("cols") == [{"n": 0}, {"n": 1}, {"n": 2}]
        worker.assert_source_offset("cols", {"p": 1}, {"at": 2})
    else:  # dicts are not bytes: the bytes converter refuses the first record, naming it
        assert worker.task_state("cols") is State.FAILED
        assert worker.messages("cols") == []
        assert worker.source_offset("cols", {"p": 1}) is None


RAW = {"key.converter": "bytes", "value.converter": "bytes", "header.converter": "bytes"}
HEADER_CASES: dict[str, list[Any]] = {
    "bytes": [[("trace", b"t0"), ("none", None)], None, [("trace", b"t2")]],
    "bytearray": [[("trace", bytearray(b"t0")), ("none", None)], None, [("trace", b"t2")]],
    "list pair": [[["trace", b"t0"], ("none", None)], None, [("trace", b"t2")]],
    "str": [[("trace", "t0"), ("none", None)], None, [("trace", b"t2")]],
}
"""Header columns of a batch of three records: only the first is all ``(str, bytes or None)`` tuples."""


class HeaderedColumnsTask(SourceTask):
    """Hands over one SourceBatch of bytes with the header column ``HEADER_CASES[case]``, then nothing."""

    def start(self, config: Any) -> None:
        self.headers, self.sent = HEADER_CASES[config["case"]], False

    def poll(self) -> SourceBatch | None:
        if self.sent:
            return None
        self.sent = True
        return SourceBatch({"p": 1}, "hdr", [b"v0", b"v1", b"v2"], [{"at": n} for n in range(3)], headers=self.headers)


class HeaderedColumnsConnector(FlakyPollConnector):
    def task_class(self) -> type[SourceTask]:
        return HeaderedColumnsTask

    def config_def(self) -> Any:
        return super().config_def().define("case", Type.STRING, "bytes", documentation="A key of HEADER_CASES.")


def sent_columns(worker: SimulatedWorker, connector: str) -> list[Any]:
    """The header column of every ``produce_all`` call the connector's task makes from now on."""
    producer = worker.source_task(connector).producer
    produce_all, columns = producer.produce_all, []

    def spy(*args: Any) -> int:
        columns.append(args[7] if len(args) > 7 else None)
        return produce_all(*args)

    producer.produce_all = spy  # type: ignore[method-assign]
    return columns


@pytest.mark.parametrize(
    ("case", "header_converter", "fast"),
    [
        ("bytes", "bytes", True),
        ("bytes", "simple", True),
        ("bytearray", "bytes", False),
        ("list pair", "bytes", False),
    ],
)
def test_a_batch_with_headers_is_sent_as_it_is_only_when_they_pass_through(
    make_simulated_worker: Make, case: str, header_converter: str, fast: bool
) -> None:
    worker = make_simulated_worker({**FAST, **RAW, "header.converter": header_converter})
    worker.add_connector("hdr", HeaderedColumnsConnector, {"topic": "unused", "case": case})
    columns = sent_columns(worker, "hdr")
    worker.advance(1000)
    messages = worker.messages("hdr")
    assert [m.value for m in messages] == [b"v0", b"v1", b"v2"]
    assert [list(m.headers) for m in messages] == [[("trace", b"t0"), ("none", None)], [], [("trace", b"t2")]]
    assert columns == ([HEADER_CASES[case]] if fast else []), "columns sent as they are, else record by record"
    worker.assert_source_offset("hdr", {"p": 1}, {"at": 2})


def test_a_header_the_header_converter_refuses_fails_the_batch_as_a_list_of_records_would(
    make_simulated_worker: Make,
) -> None:
    worker = make_simulated_worker({**FAST, **RAW, "errors.tolerance": "none"})
    worker.add_connector("hdr", HeaderedColumnsConnector, {"topic": "unused", "case": "str"})
    columns = sent_columns(worker, "hdr")
    worker.advance(1000)
    assert worker.task_state("hdr") is State.FAILED
    assert "ByteArrayConverter needs bytes" in str(worker.source_task("hdr").failure)
    assert (worker.messages("hdr"), columns) == ([], [])
    assert worker.source_offset("hdr", {"p": 1}) is None


# ---- records a compacted topic refuses, and heartbeats keyed for it (each on both backends) ----------------------

LOG = {"log": "main"}
OWN = {"log": "own-key"}


class UnkeyedTask(SourceTask):
    """Hands over ``count`` unkeyed records to ``topic``, then nothing; its heartbeats for ``LOG`` carry no key, and
    one for ``OWN`` carries a key of its own."""

    def start(self, config: Any) -> None:
        self.topic, self.count, self.sent = config["topic"], int(config.get("count", "0")), 0

    def poll(self) -> list[SourceRecord]:
        records = [SourceRecord(LOG, {"n": n}, self.topic, {"n": n}) for n in range(self.sent, self.count)]
        self.sent = self.count
        return records

    @hookimpl
    def produce_heartbeat_records(self, topic: str) -> list[SourceRecord]:
        return [
            SourceRecord(LOG, {"n": self.sent}, topic, {"beat": self.sent}),
            SourceRecord(OWN, {"n": 0}, topic, {"beat": 0}, key="mine"),
        ]


class UnkeyedSource(FlakyPollConnector):
    def task_class(self) -> type[SourceTask]:
        return UnkeyedTask

    def config_def(self) -> Any:
        return super().config_def().define("count", Type.INT, 0, documentation="Records the task hands over.")


def test_an_unkeyed_heartbeat_is_keyed_by_its_source_partition_through_the_key_converter(
    make_worker: Make, unique_name: str
) -> None:
    beats = f"beats-{unique_name}"
    config = {**FAST, "heartbeat.interval.ms": 1000, "key.converter.schemas.enable": "true"}
    worker = make_worker({**config, "heartbeat.records.topic": beats})
    worker.add_connector(unique_name, UnkeyedSource, {"topic": f"data-{unique_name}", "count": 2})
    worker.advance(1000)
    assert worker.topic_config(beats).get("cleanup.policy") == "compact", "Kafka refuses unkeyed records there"
    assert worker.task_state(unique_name) is State.RUNNING, worker.source_task(unique_name).failure
    assert [json.loads(m.key) for m in worker.messages(beats)] == [
        {"schema": infer_schema(LOG), "payload": LOG},  # the key converter wrote the source partition, with a schema
        {"schema": infer_schema("mine"), "payload": "mine"},  # a key of the task's own is left as it is
    ]
    assert worker.values(beats) == [{"beat": 2}, {"beat": 0}]
    worker.advance(1000)
    worker.assert_source_offset(unique_name, LOG, {"n": 2})
    worker.assert_source_offset(unique_name, OWN, {"n": 0})


def test_a_record_without_a_key_to_a_compacted_topic_fails_the_task_saying_it_needs_one(
    make_worker: Make, unique_name: str
) -> None:
    worker = make_worker(FAST)
    topic = f"compacted-{unique_name}"
    worker.broker.create_topic(topic, 1, {"cleanup.policy": "compact"})
    worker.add_connector(unique_name, UnkeyedSource, {"topic": topic, "count": 1})
    worker.run_until(lambda: worker.task_state(unique_name) is not State.RUNNING, timeout_ms=5000, what="a failure")
    assert worker.task_state(unique_name) is State.FAILED
    failure = str(worker.source_task(unique_name).failure)
    assert "the broker failed to store a record: INVALID_RECORD" in failure
    assert f"the record to topic {topic!r} needs a key: the topic is compacted (cleanup.policy=compact)" in failure
    assert worker.messages(topic) == []
    assert worker.source_offset(unique_name, LOG) is None
