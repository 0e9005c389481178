"""A source for the security tests: it has a ``PASSWORD`` key and passes its whole config, secrets and all, to its
task, and can fail in ``start`` or in ``poll`` with an error that quotes its config (as a careless connector
does), to check that no secret reaches a REST response, a status trace or a log line."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from headwater.sdk import ConfigDef, ConfigError, Importance, SourceConnector, SourceRecord, SourceTask, Type


class SecretSource(SourceConnector):
    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define("database.password", Type.PASSWORD, None, Importance.HIGH, "A secret of the connector's own.")
            .define("connection.string", Type.PASSWORD, None, Importance.LOW, "Secret by type, not by name.")
            .define("database.user", Type.STRING, "", Importance.LOW, "Not a secret.")
            .define("fail.in", Type.STRING, "", Importance.LOW, "validate, start or poll: fail there, quoting it.")
            .define_prefix("source.", "Settings of a client (sasl.jaas.config and the like).")
        )

    def validate(self, config: Mapping[str, Any]) -> dict[str, Any]:
        if config.get("fail.in") == "validate":
            raise ConfigError("database.password", config.get("database.password"), "the database refused it")
        return super().validate(config)

    def start(self, config: Mapping[str, Any]) -> None:
        self.config = {key: str(value) for key, value in config.items() if value is not None}
        logging.getLogger(__name__).info("starting with %s", self.config)  # careless, and not a headwater logger
        if self.config.get("fail.in") == "start":
            raise RuntimeError(f"cannot connect with {self.config}")

    def task_class(self) -> type[SourceTask]:
        return SecretTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.config)]


class SecretTask(SourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)

    def poll(self) -> list[SourceRecord]:
        if self.config.get("fail.in") == "poll":
            raise RuntimeError(f"lost the connection opened with {self.config}")
        return []


class UnmakeableSource(SecretSource):
    """A connector whose constructor raises: naming it is a bad ``connector.class``, not a worker failure."""

    def __init__(self) -> None:
        raise RuntimeError("no instance of me")
