"""The stateful test: a correct source and a correct sink hold every guarantee through 200 random fault schedules
each, and a source that commits offsets it never sent, or a sink that commits records it never wrote, is caught."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import Phase
from hypothesis.stateful import run_state_machine_as_test

from headwater.harness import GuaranteeViolation, SinkMachine, SourceMachine, machine_settings, machine_test
from headwater.sdk import (
    SinkConnector,
    SinkRecord,
    SinkTask,
    SourceConnector,
    SourceRecord,
    SourceTask,
    TopicPartition,
    hookimpl,
)

LOGS: dict[str, list[Any]] = {}
"""The source system: append-only logs by name."""
TABLES: dict[str, list[Any]] = {}
"""The sink system: tables of written values by name."""
NAMES = itertools.count()


class ListSource(SourceConnector):
    """Reads the log ``log``: the record at index ``i`` has offset ``{"index": i}``; resumes after the stored one."""

    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)

    def task_class(self) -> type[SourceTask]:
        return ListTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [self.config]


class ListTask(SourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        self.log, self.topic = LOGS[config["log"]], config["topic"]
        stored = self.context.offset_storage_reader.offset({"log": config["log"]})
        self.partition = {"log": config["log"]}
        self.next = stored["index"] + 1 if stored else 0

    def offset(self, index: int) -> dict[str, int]:
        return {"index": index}

    def poll(self) -> list[SourceRecord]:
        found = self.log[self.next : self.next + 3]
        records = [SourceRecord(self.partition, self.offset(self.next + i), self.topic, v) for i, v in enumerate(found)]
        self.next += len(found)
        return records


class SkippingListSource(ListSource):
    def task_class(self) -> type[SourceTask]:
        return SkippingListTask


class SkippingListTask(ListTask):
    """The bug: each record carries the offset of the record after it, which it never sent."""

    def offset(self, index: int) -> dict[str, int]:
        return {"index": index + 1}


class TableSink(SinkConnector):
    """Writes records to the table ``table`` two at a time, and what is left at each commit; commits only what it
    wrote."""

    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)

    def task_class(self) -> type[SinkTask]:
        return TableTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [self.config]


class TableTask(SinkTask):
    def start(self, config: Mapping[str, str]) -> None:
        self.table = TABLES[config["table"]]
        self.buffer: list[SinkRecord] = []
        self.written: dict[TopicPartition, int] = {}

    def put(self, records: Sequence[SinkRecord]) -> None:
        self.buffer.extend(records)
        if len(self.buffer) >= 2:
            self.write()
            self.context.request_commit()

    def write(self) -> None:
        self.table.extend(r.value for r in self.buffer)
        self.written.update({r.topic_partition: r.offset + 1 for r in self.buffer})
        self.buffer.clear()

    @hookimpl
    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        self.write()
        return {tp: offset for tp, offset in self.written.items() if tp in current_offsets}

    def close(self, partitions: Any) -> None:
        self.buffer = [r for r in self.buffer if r.topic_partition not in partitions]
        for tp in partitions:
            self.written.pop(tp, None)


class EagerTableSink(TableSink):
    def task_class(self) -> type[SinkTask]:
        return EagerTableTask


class EagerTableTask(TableTask):
    """The bug: commits everything it was given, buffered or not."""

    @hookimpl
    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        return dict(current_offsets)


class ListSourceMachine(SourceMachine):
    connector = ListSource

    def setup(self) -> dict[str, str]:
        self.log = f"log-{next(NAMES)}"
        LOGS[self.log] = []
        return {"log": self.log, "topic": "data"}

    def write(self, value: Any) -> None:
        LOGS[self.log].append(value)

    def cleanup(self) -> None:
        LOGS.pop(self.log, None)


class SkippingSourceMachine(ListSourceMachine):
    connector = SkippingListSource


class TableSinkMachine(SinkMachine):
    connector = TableSink

    def setup(self) -> dict[str, str]:
        self.table = f"table-{next(NAMES)}"
        TABLES[self.table] = []
        return {"table": self.table}

    def written_values(self) -> list[Any]:
        return list(TABLES[self.table])

    def cleanup(self) -> None:
        TABLES.pop(self.table, None)


class EagerSinkMachine(TableSinkMachine):
    connector = EagerTableSink


TestListSourceMachine = machine_test(ListSourceMachine, max_examples=200)
TestTableSinkMachine = machine_test(TableSinkMachine, max_examples=200)


def test_the_ci_runs_at_least_200_examples_of_each_machine() -> None:
    assert TestListSourceMachine.settings.max_examples >= 200  # type: ignore[attr-defined]
    assert TestTableSinkMachine.settings.max_examples >= 200  # type: ignore[attr-defined]


def search(machine: type[SourceMachine | SinkMachine]) -> None:
    """Run ``machine`` as CI runs it, minus shrinking (minutes of runs that only make the report shorter)."""
    phases = [Phase.explicit, Phase.reuse, Phase.generate]
    run_state_machine_as_test(machine, settings=machine_settings(200, database=None, derandomize=True, phases=phases))


def test_finds_a_source_that_commits_offsets_it_never_sent() -> None:
    with pytest.raises(GuaranteeViolation) as caught:
        search(SkippingSourceMachine)
    message = str(caught.value)
    assert caught.value.guarantee == "every record is delivered at least once (source to Kafka)", message
    assert "never arrived" in message and "commits:" in message and "handed over:" in message


def test_finds_a_sink_that_commits_records_it_never_wrote() -> None:
    with pytest.raises(GuaranteeViolation) as caught:
        search(EagerSinkMachine)
    message = str(caught.value)
    assert caught.value.guarantee == "a committed sink offset covers only records the sink has written", message
    assert "but the sink never wrote" in message
