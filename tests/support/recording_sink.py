"""A sink that keeps every record it is given, in :data:`RECEIVED` by connector name, for tests that run a worker
in the test process (its REST API on a thread) and look at exactly what the task was handed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from headwater.sdk import SinkConnector, SinkRecord, SinkTask

RECEIVED: dict[str, list[SinkRecord]] = {}


class RecordingSink(SinkConnector):
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
