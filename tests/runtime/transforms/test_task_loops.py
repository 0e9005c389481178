"""Transforms in the task loops, on the in-memory transport and on a real broker (``make_worker``): a source's
records are transformed before conversion, a sink's after it; a dropped record's offset is committed like any other;
a transformation that fails goes through the connector's ``errors.*`` handling at stage TRANSFORMATION, named by
its class and alias; every transformation is closed when its task stops."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar

import pytest

from headwater.harness import SimulatedWorker
from headwater.runtime.tasks.base import State
from headwater.sdk import (
    RetriableError,
    SinkConnector,
    SinkRecord,
    SinkTask,
    SourceBatch,
    SourceConnector,
    SourceRecord,
    SourceTask,
    TopicPartition,
    Transformation,
)

Make = Callable[..., SimulatedWorker]
T = "org.apache.kafka.connect.transforms."
CHAIN = {
    "transforms": "origin,route,skip",
    "transforms.origin.type": T + "InsertField$Value",
    "transforms.origin.static.field": "origin",
    "transforms.origin.static.value": "hw",
    "transforms.route.type": T + "RegexRouter",
    "transforms.route.regex": "(.*)-in",
    "transforms.route.replacement": "$1-out",
    "transforms.skip.type": T + "Filter",
    "transforms.skip.predicate": "marked",
    "predicates": "marked",
    "predicates.marked.type": T + "predicates.HasHeaderKey",
    "predicates.marked.name": "skip",
}
"""Three transformations, one guarded by a predicate, written with Kafka Connect's class names."""


class ListSource(SourceConnector):
    """Emits ``count`` records ``{"n": i}`` to ``<topic>``, every third with a ``skip`` header, in one poll (as a
    :class:`SourceBatch` when ``batch`` is set)."""

    def start(self, config: Mapping[str, Any]) -> None:
        self.config = {key: str(value) for key, value in config.items()}

    def task_class(self) -> type[SourceTask]:
        return ListSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [self.config]


class ListSourceTask(SourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        self.topic, self.count, self.batch = config["topic"], int(config.get("count", "6")), "batch" in config
        self.done = False

    def poll(self) -> Sequence[SourceRecord] | None:
        if self.done:
            return None
        self.done = True
        partition = {"list": "l"}
        if self.batch:
            values = [json.dumps({"n": i}).encode() for i in range(self.count)]
            offsets = [{"i": i} for i in range(self.count)]
            return SourceBatch(partition, self.topic, values, offsets)
        return [
            SourceRecord(partition, {"i": i}, self.topic, {"n": i}, headers=[("skip", b"1")] if i % 3 == 2 else [])
            for i in range(self.count)
        ]


RECEIVED: dict[str, list[SinkRecord]] = {}


class RecordingSink(SinkConnector):
    """Keeps every record it is given in :data:`RECEIVED` by connector name."""

    def start(self, config: Mapping[str, Any]) -> None:
        self.config = {key: str(value) for key, value in config.items()}

    def task_class(self) -> type[SinkTask]:
        return RecordingSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [self.config]


class RecordingSinkTask(SinkTask):
    def start(self, config: Mapping[str, str]) -> None:
        self.name = config["name"]

    def put(self, records: Sequence[SinkRecord]) -> None:
        RECEIVED.setdefault(self.name, []).extend(records)


class FlakyTransformation(Transformation[Any]):
    """Raises RetriableError for its first ``failures`` records (counted over every instance), then tags values."""

    calls: ClassVar[list[int]] = []
    closed: ClassVar[int] = 0

    def configure(self, config: Mapping[str, Any]) -> None:
        self.failures = 2

    def apply(self, record: Any) -> Any:
        FlakyTransformation.calls.append(1)
        if len(FlakyTransformation.calls) <= self.failures:
            raise RetriableError("not yet")
        return replace(record, value={**record.value, "flaky": True})

    def close(self) -> None:
        FlakyTransformation.closed += 1


@pytest.fixture
def names(request: pytest.FixtureRequest) -> dict[str, str]:
    suffix = str(abs(hash(request.node.nodeid)) % 10**8)
    return {"in": f"t{suffix}-in", "out": f"t{suffix}-out", "dlq": f"dlq-{suffix}", "c": f"c-{suffix}"}


def test_a_source_chain_transforms_routes_and_drops_and_every_offset_is_committed(
    make_worker: Make, names: dict[str, str]
) -> None:
    worker = make_worker({"offset.flush.interval.ms": 1000})
    worker.create_topic(names["out"], 1)
    worker.add_connector(names["c"], ListSource, {"topic": names["in"], **CHAIN})
    worker.run_until(lambda: len(worker.values(names["out"])) >= 4, what="the transformed records")
    worker.advance(2000)
    assert worker.values(names["out"]) == [{"n": n, "origin": "hw"} for n in (0, 1, 3, 4)]
    assert worker.messages(names["in"]) == [], "every record was routed"
    worker.assert_source_offset(names["c"], {"list": "l"}, {"i": 5})  # record 5 was dropped, its offset committed


def test_a_source_batch_goes_through_the_chain_record_by_record(make_worker: Make, names: dict[str, str]) -> None:
    worker = make_worker({"offset.flush.interval.ms": 1000, "value.converter": "bytes"})
    worker.create_topic(names["out"], 1)
    chain = {key: value for key, value in CHAIN.items() if key.startswith("transforms.route.")}
    chain["transforms"] = "route"
    worker.add_connector(names["c"], ListSource, {"topic": names["in"], "batch": "yes", **chain})
    worker.run_until(lambda: len(worker.messages(names["out"])) >= 6, what="the routed batch")
    assert [json.loads(m.value) for m in worker.messages(names["out"])] == [{"n": n} for n in range(6)]


def test_a_sink_chain_transforms_after_conversion_and_commits_what_it_drops(
    make_worker: Make, names: dict[str, str]
) -> None:
    worker = make_worker({"offset.flush.interval.ms": 1000})
    worker.create_topic(names["in"], 1)
    for n in range(6):
        worker.produce(names["in"], {"n": n}, partition=0, headers=[("skip", b"1")] if n % 3 == 2 else None)
    worker.add_connector(names["c"], RecordingSink, {"topics": names["in"], **CHAIN})
    worker.run_until(lambda: len(RECEIVED.get(names["c"], [])) >= 4, what="the transformed records")
    worker.advance(2000)
    got = RECEIVED[names["c"]]
    assert [(r.topic, r.value) for r in got] == [(names["out"], {"n": n, "origin": "hw"}) for n in (0, 1, 3, 4)]
    assert [r.offset for r in got] == [0, 1, 3, 4], "each record keeps where it was read"
    worker.assert_group_offset(names["c"], TopicPartition(names["in"], 0), 6)


def test_a_failing_transformation_fails_the_task_naming_its_alias(make_worker: Make, names: dict[str, str]) -> None:
    worker = make_worker()
    worker.create_topic(names["in"], 1)
    worker.produce(names["in"], {"n": 0}, partition=0)
    worker.produce(names["in"], "not a map", partition=0)
    extract = {"transforms": "pick", "transforms.pick.type": T + "ExtractField$Value", "transforms.pick.field": "n"}
    worker.add_connector(names["c"], RecordingSink, {"topics": names["in"], **extract})
    worker.run_until(lambda: worker.task_state(names["c"]) is State.FAILED, what="the task to fail")
    failure = str(worker.sink_task(names["c"]).failure)
    assert "TRANSFORMATION" in failure and "alias pick" in failure and "offset 1" in failure
    assert [r.value for r in RECEIVED.get(names["c"], [])] in ([], [0]), "nothing past the failed record was put"


def test_a_tolerated_transformation_failure_goes_to_the_dead_letter_queue(
    make_worker: Make, names: dict[str, str]
) -> None:
    worker = make_worker({"offset.flush.interval.ms": 1000})
    worker.create_topic(names["in"], 1)
    for value in ({"n": 0}, "not a map", {"n": 2}):
        worker.produce(names["in"], value, partition=0)
    config = {
        "topics": names["in"],
        "transforms": "pick",
        "transforms.pick.type": T + "ExtractField$Value",
        "transforms.pick.field": "n",
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": names["dlq"],
        "errors.deadletterqueue.topic.replication.factor": "1",
        "errors.deadletterqueue.context.headers.enable": "true",
    }
    worker.add_connector(names["c"], RecordingSink, config)
    worker.run_until(lambda: len(worker.messages(names["dlq"])) == 1, what="the dead letter")
    worker.advance(2000)
    assert [r.value for r in RECEIVED[names["c"]]] == [0, 2]
    (letter,) = worker.messages(names["dlq"])
    assert json.loads(letter.value) == "not a map", "the record's bytes as they arrived"
    headers = {key: value for key, value in letter.headers or ()}
    assert headers["__connect.errors.stage"] == b"TRANSFORMATION"
    assert b"alias pick" in headers["__connect.errors.class.name"]
    worker.assert_group_offset(names["c"], TopicPartition(names["in"], 0), 3)


def test_a_retriable_transformation_failure_is_retried_and_the_chain_is_closed_at_stop(
    make_worker: Make, names: dict[str, str]
) -> None:
    FlakyTransformation.calls.clear()
    FlakyTransformation.closed = 0
    worker = make_worker({"offset.flush.interval.ms": 1000})
    worker.create_topic(names["out"], 1)
    flaky = f"{FlakyTransformation.__module__}:{FlakyTransformation.__qualname__}"
    config = {
        "topic": names["out"],
        "count": "2",
        "transforms": "flaky",
        "transforms.flaky.type": flaky,
        "errors.retry.timeout": "60000",
    }
    worker.add_connector(names["c"], ListSource, config)
    worker.run_until(lambda: len(worker.values(names["out"])) >= 2, what="the records after the retries")
    assert worker.values(names["out"]) == [{"n": 0, "flaky": True}, {"n": 1, "flaky": True}]
    assert len(FlakyTransformation.calls) == 4, "the first record failed twice, then both went through"
    closed = FlakyTransformation.closed  # validating the config made, configured and closed one too
    worker.delete_connector(names["c"])
    assert FlakyTransformation.closed == closed + 1, "the task's transformation is closed when the task stops"
