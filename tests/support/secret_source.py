"""For config provider tests: a source connector that declares a password, a port and a topic, keeps the config it
was started with (and each task the config it got) in :data:`STARTED` and passes its whole config to each task, as
many connectors do; and a third-party config provider, ``memory`` (an entry point of the test distribution)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from headwater.sdk import ConfigDef, Importance, SourceConnector, SourceRecord, SourceTask, Type

STARTED: dict[tuple[str, int | None], dict[str, str]] = {}
"""The config each connector (task ``None``) and task started with, by (connector, task)."""


class SecretSourceConnector(SourceConnector):
    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define("topic", Type.STRING, importance=Importance.HIGH, documentation="Topic written.")
            .define("password", Type.PASSWORD, "", Importance.HIGH, "A secret.")
            .define("port", Type.INT, 0, Importance.LOW, "A typed key.")
        )

    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)
        STARTED[config["name"], None] = dict(config)

    def task_class(self) -> type[SourceTask]:
        return SecretSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self.config, "task.number": str(i)} for i in range(max_tasks)]


class SecretSourceTask(SourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        STARTED[config["name"], int(config["task.number"])] = dict(config)

    def poll(self) -> Sequence[SourceRecord]:
        return []


class MemoryConfigProvider:
    """Values from :attr:`VALUES` by path, then key; it keeps the params it was configured with and whether it was
    closed."""

    VALUES: ClassVar[dict[str, dict[str, str]]] = {}
    made: ClassVar[list[MemoryConfigProvider]] = []

    def configure(self, params: Mapping[str, str]) -> None:
        self.params = dict(params)
        self.closed = False
        MemoryConfigProvider.made.append(self)

    def get(self, path: str, keys: set[str]) -> Mapping[str, str]:
        values = self.VALUES.get(path, {})
        return {key: values[key] for key in keys if key in values}

    def close(self) -> None:
        self.closed = True
