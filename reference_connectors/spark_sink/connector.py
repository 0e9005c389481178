"""The Spark sink connector: writes the records of its topics into a Parquet or Delta table through the worker's
SparkSession, exactly once (KIP-89; the offsets live in the table).

Run it with ``value.converter=bytes`` (and ``key.converter=bytes``), so the task parses the JSON values itself in
Arrow and a value that is not JSON is a record that does not fit the schema, which the task reports to the runtime
(to the dead-letter queue under ``errors.tolerance=all``); with the JSON converter the runtime handles an
unparseable value itself, before the task sees it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from headwater.reference_connectors import headwater_version
from headwater.reference_connectors.spark_sink.config import CONFIG_DEF, TABLE_CREATOR, SinkConfig
from headwater.reference_connectors.spark_sink.task import SparkSinkTask
from headwater.sdk import ConfigDef, ConfigError, SinkConnector, SinkTask


def parse_connector_config(config: Mapping[str, Any]) -> SinkConfig:
    """Parse a connector's config, which must not hold the key the connector sets in its task configs."""
    if TABLE_CREATOR in config:
        raise ConfigError(TABLE_CREATOR, config[TABLE_CREATOR], "Set by the connector in its task configs")
    return SinkConfig.parse(config)


class SparkSinkConnector(SinkConnector):
    """Gives every task the connector's config (the consumer group spreads the partitions over them), the first
    task marked as the one that creates a missing table when a commit coordinator is used."""

    def version(self) -> str:
        """The installed headwater distribution's version (the connector ships in it); its tasks report it too."""
        return headwater_version()

    def config_def(self) -> ConfigDef:
        return CONFIG_DEF

    def validate(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """Parse the connector's own keys and check how they combine; only those keys are returned, so the
        worker's parsing of its common keys (``topics``) stands."""
        parsed = super().validate(config)
        parse_connector_config(config)
        return {key: value for key, value in parsed.items() if key in CONFIG_DEF.keys}

    def start(self, config: Mapping[str, str]) -> None:
        parse_connector_config(config)
        self.config = dict(config)

    def task_class(self) -> type[SinkTask]:
        return SparkSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self.config, TABLE_CREATOR: str(n == 0).lower()} for n in range(max_tasks)]
