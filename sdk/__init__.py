"""Headwater's connector SDK: everything a connector author imports."""

from headwater.sdk.config import (
    REQUIRED,
    ConfigDef,
    ConfigKey,
    Importance,
    TaskConfig,
    Type,
    at_least,
    in_range,
    non_empty_string,
    one_of,
    regex,
)
from headwater.sdk.connector import Connector, SinkConnector, SourceConnector
from headwater.sdk.context import (
    Clock,
    ConnectorContext,
    ErrantRecordReporter,
    OffsetStorageReader,
    SinkTaskContext,
    SourceTaskContext,
)
from headwater.sdk.errors import ConfigError, ConnectError, IllegalWorkerStateError, RetriableError
from headwater.sdk.hookspecs import hookimpl
from headwater.sdk.metrics import Counter, Gauge, Histogram, MetricKind, PluginMetrics
from headwater.sdk.providers import CONFIG_PROVIDER_ENTRY_POINT_GROUP, ConfigProvider
from headwater.sdk.records import (
    Header,
    SinkRecord,
    SourceBatch,
    SourceOffset,
    SourcePartition,
    SourceRecord,
    TopicPartition,
)
from headwater.sdk.schemas import AvroSchema, Schema
from headwater.sdk.task import SinkTask, SourceTask, Task
from headwater.sdk.transactions import ConnectorTransactionBoundaries, ExactlyOnceSupport, TransactionContext
from headwater.sdk.transforms import (
    PREDICATE_ENTRY_POINT_GROUP,
    TRANSFORMATION_ENTRY_POINT_GROUP,
    Predicate,
    Transformation,
)

CONNECTOR_ENTRY_POINT_GROUP = "headwater.connectors"
"""Installed connector plugins register their connector classes under this entry-point group."""

PLUGIN_ENTRY_POINT_GROUP = "headwater.plugins"
"""Cross-cutting plugins (metrics, tracing) that implement hooks for every task register here."""

__all__ = [
    "CONFIG_PROVIDER_ENTRY_POINT_GROUP",
    "CONNECTOR_ENTRY_POINT_GROUP",
    "PLUGIN_ENTRY_POINT_GROUP",
    "PREDICATE_ENTRY_POINT_GROUP",
    "REQUIRED",
    "TRANSFORMATION_ENTRY_POINT_GROUP",
    "AvroSchema",
    "Clock",
    "ConfigDef",
    "ConfigError",
    "ConfigKey",
    "ConfigProvider",
    "ConnectError",
    "Connector",
    "ConnectorContext",
    "ConnectorTransactionBoundaries",
    "Counter",
    "ErrantRecordReporter",
    "ExactlyOnceSupport",
    "Gauge",
    "Header",
    "Histogram",
    "IllegalWorkerStateError",
    "Importance",
    "MetricKind",
    "OffsetStorageReader",
    "PluginMetrics",
    "Predicate",
    "RetriableError",
    "Schema",
    "SinkConnector",
    "SinkRecord",
    "SinkTask",
    "SinkTaskContext",
    "SourceBatch",
    "SourceConnector",
    "SourceOffset",
    "SourcePartition",
    "SourceRecord",
    "SourceTask",
    "SourceTaskContext",
    "Task",
    "TaskConfig",
    "TopicPartition",
    "TransactionContext",
    "Transformation",
    "Type",
    "at_least",
    "hookimpl",
    "in_range",
    "non_empty_string",
    "one_of",
    "regex",
]
