"""A sink for the error-handling tests: it writes each record's value, reports those it cannot write through the
ErrantRecordReporter (KIP-610), and can fail its ``put`` with retriable errors for a while.

- A record whose value is a mapping with ``"reject"`` set is reported, not written.
- ``retriable.for.ms``: every ``put`` raises :class:`RetriableError` until that long (on the worker's clock) after
  the first ``put`` that had records.
- ``written.file``: the values written are appended there as JSON lines, each ``put`` fsynced before it returns (a
  worker process's writes survive a SIGKILL); without it they are kept in :data:`WRITTEN` by connector name.

Before its offsets are committed the task waits for its reports, as KIP-610 asks of a sink that reports.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from typing import Any

from headwater.sdk import (
    ConfigDef,
    Importance,
    RetriableError,
    SinkConnector,
    SinkRecord,
    SinkTask,
    TopicPartition,
    Type,
)

WRITTEN: dict[str, list[Any]] = {}
"""Values written, by connector name, when there is no ``written.file``."""


class RejectedRecord(ValueError):
    """Why the sink did not write a record."""


class ErrantSinkConnector(SinkConnector):
    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define("written.file", Type.STRING, "", Importance.LOW, "Append written values here (JSON lines).")
            .define("retriable.for.ms", Type.LONG, 0, Importance.LOW, "Fail put with retriable errors this long.")
        )

    def start(self, config: Mapping[str, Any]) -> None:
        self.config = {key: str(value) for key, value in config.items() if value is not None}

    def task_class(self) -> type[SinkTask]:
        return ErrantSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.config) for _ in range(max_tasks)]


class ErrantSinkTask(SinkTask):
    def start(self, config: Mapping[str, str]) -> None:
        self.name = config["name"]
        self.path = config.get("written.file") or ""
        self.retriable_for_ms = int(config.get("retriable.for.ms") or 0)
        self.failing_since: int | None = None
        self.reports: list[Future[None]] = []
        WRITTEN.setdefault(self.name, [])

    def put(self, records: Sequence[SinkRecord]) -> None:
        if not records:
            return
        now = self.context.clock.now_ms()
        if self.failing_since is None:
            self.failing_since = now
        if now < self.failing_since + self.retriable_for_ms:
            raise RetriableError(f"the store is unavailable for {self.retriable_for_ms} ms")
        written = []
        reporter = self.context.errant_record_reporter
        assert reporter is not None
        for record in records:
            if isinstance(record.value, Mapping) and record.value.get("reject"):
                self.reports.append(reporter.report(record, RejectedRecord(f"rejected {record.value}")))
            else:
                written.append(record.value)
        if self.path:
            with open(self.path, "a", encoding="utf-8") as file:
                file.writelines(json.dumps(value) + "\n" for value in written)
                file.flush()
                os.fsync(file.fileno())
        else:
            WRITTEN[self.name].extend(written)

    def flush(self, current_offsets: Mapping[TopicPartition, int]) -> None:
        for report in self.reports:
            report.result()
        self.reports.clear()


class FlakyConverter:
    """A bytes converter whose first ``fail.calls`` conversions (set on the converter, ``value.converter.fail.calls``)
    raise :class:`RetriableError`, counted per instance, both ways."""

    def configure(self, config: Mapping[str, Any], is_key: bool) -> None:
        self.failures_left = int(config.get("fail.calls", 0))

    def _maybe_fail(self) -> None:
        if self.failures_left > 0:
            self.failures_left -= 1
            raise RetriableError("the schema registry is unavailable")

    def from_connect(self, topic: str, schema: Mapping[str, Any] | None, value: Any) -> bytes | None:
        self._maybe_fail()
        return value if value is None else bytes(value)

    def to_connect(self, topic: str, data: bytes | None) -> Any:
        self._maybe_fail()
        return data
