"""A source that publishes metrics of its own (KIP-877's plugin metrics) and reads its config parsed by its
``ConfigDef``: the tests of ``context.metrics`` and ``context.parsed_config`` run it on a simulated worker and on a
real one (``connector.class=support.metered:MeteredSource``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from headwater.sdk import ConfigDef, Importance, SourceConnector, SourceRecord, SourceTask, Type, at_least

SEEN: dict[str, Mapping[str, Any]] = {}
"""Each started task's ``context.parsed_config``, by connector name."""

CONFIG_DEF = (
    ConfigDef()
    .define("topic", Type.STRING, importance=Importance.HIGH, documentation="Where records go.")
    .define("batch.size", Type.INT, 2, validator=at_least(1), documentation="Records per poll.")
    .define("max.messages", Type.LONG, 6, documentation="Records in all.")
    .define("tables", Type.LIST, "", documentation="Names.")
    .define("uppercase", Type.BOOLEAN, False, documentation="Upper-case values.")
    .define("ratio", Type.DOUBLE, 0.5, documentation="A number.")
    .define("rows.kind", Type.STRING, "counter", documentation="What kind of metric the task makes `rows`.")
    .define("drop.topic", Type.BOOLEAN, False, documentation="Leave topic out of the task config.")
    .define_prefix("task.", "Put in the task config without the prefix.")
)


class MeteredSource(SourceConnector):
    """``task.*`` keys of its config reach its task config without the prefix (``task.batch.size=0`` hands the
    task a bad ``batch.size``); ``drop.topic=true`` leaves ``topic`` out of the task config. The connector
    publishes the gauge ``configured_tasks``."""

    def config_def(self) -> ConfigDef:
        return CONFIG_DEF

    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)
        self.configured = 0
        self.context.metrics.gauge("configured_tasks", "Task configs handed out.", read=lambda: self.configured)

    def task_class(self) -> type[SourceTask]:
        return MeteredTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        own = {k.removeprefix("task."): v for k, v in self.config.items() if k.startswith("task.")}
        config = {**self.config, **own, "assigned": "p0,p1"}
        if self.config.get("drop.topic") == "true":
            del config["topic"]
        self.configured = 1
        return [config]


class MeteredTask(SourceTask):
    """Returns ``batch.size`` records per poll up to ``max.messages``, counting them in the counter ``rows`` and
    each batch's size in the histogram ``batch_rows``."""

    def start(self, config: Mapping[str, str]) -> None:
        parsed = self.context.parsed_config
        SEEN[config["name"]] = parsed
        self.topic = str(parsed.get("topic", "unused"))
        self.batch_size: int = parsed["batch.size"]
        self.max_messages: int = parsed["max.messages"]
        self.sent = 0
        metrics = self.context.metrics
        if parsed["rows.kind"] == "gauge":
            metrics.gauge("rows", "Records returned by poll.")
        else:
            self.rows = metrics.counter("rows", "Records returned by poll.")
        self.batches = metrics.histogram("batch_rows", "Records per poll.", buckets=(1, 2, 5))

    def poll(self) -> Sequence[SourceRecord]:
        count = min(self.batch_size, self.max_messages - self.sent)
        if count <= 0:
            return []
        records = [self._record(self.sent + i) for i in range(count)]
        self.sent += count
        self.rows.inc(count)
        self.batches.observe(count)
        return records

    def _record(self, n: int) -> SourceRecord:
        return SourceRecord({"task": "metered"}, {"n": n}, self.topic, n)
