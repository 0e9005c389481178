"""The connector's configuration: every key it reads, with its type, default, validator and documentation.

The worker adds its common keys (``name``, ``tasks.max``, ``topics`` for a sink, ``heartbeat.interval.ms``...) and
rejects a config that does not parse, naming each bad key, before the connector starts.
"""

from __future__ import annotations

from headwater.sdk import ConfigDef, Importance, Type, at_least, non_empty_string

{% if cookiecutter.connector_kind == "source" -%}
FILE = "file"
TOPIC = "topic"
BATCH_SIZE = "batch.size"


def config_def() -> ConfigDef:
    return (
        ConfigDef()
        .define(
            FILE,
            Type.STRING,
            importance=Importance.HIGH,
            documentation="The JSON-lines file to read. Blank lines and lines starting with '#' are skipped.",
            validator=non_empty_string,
        )
        .define(TOPIC, Type.STRING, importance=Importance.HIGH, documentation="The topic to write records to.")
        .define(BATCH_SIZE, Type.INT, 100, Importance.LOW, "The most records one poll returns.", at_least(1))
    )
{%- else -%}
DIRECTORY = "directory"
BATCH_SIZE = "batch.size"


def config_def() -> ConfigDef:
    return (
        ConfigDef()
        .define(
            DIRECTORY,
            Type.STRING,
            importance=Importance.HIGH,
            documentation="Where to write: one JSON-lines file per topic partition, <topic>-<partition>.jsonl.",
            validator=non_empty_string,
        )
        .define(
            BATCH_SIZE,
            Type.INT,
            100,
            Importance.MEDIUM,
            "Records buffered before a write; the rest is written at each offset commit.",
            at_least(1),
        )
    )
{%- endif %}
