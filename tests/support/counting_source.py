"""A source connector for cluster tests in one process: each task counts on its own source partition
``{"connector": <name>, "task": <n>}`` with offset ``{"seq": n}``, a few records per poll, resuming after its
committed offset. Records are keyed ``<connector>-<task>`` and carry ``{"connector", "task", "seq"}``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from headwater.sdk import ConfigDef, Importance, SourceConnector, SourceRecord, SourceTask, Type


class CountingSourceConnector(SourceConnector):
    def config_def(self) -> ConfigDef:
        return ConfigDef().define("topic", Type.STRING, importance=Importance.HIGH, documentation="Topic written.")

    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)

    def task_class(self) -> type[SourceTask]:
        return CountingSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self.config, "task.number": str(i)} for i in range(max_tasks)]


class CountingSourceTask(SourceTask):
    BATCH = 3

    def start(self, config: Mapping[str, str]) -> None:
        self.topic = config["topic"]
        self.partition = {"connector": config["name"], "task": int(config["task.number"])}
        stored = self.context.offset_storage_reader.offset(self.partition)
        self.next = int(stored["seq"]) + 1 if stored else 0

    def poll(self) -> Sequence[SourceRecord]:
        first, self.next = self.next, self.next + self.BATCH
        key = f"{self.partition['connector']}-{self.partition['task']}"
        return [
            SourceRecord(self.partition, {"seq": n}, self.topic, value={**self.partition, "seq": n}, key=key)
            for n in range(first, self.next)
        ]
