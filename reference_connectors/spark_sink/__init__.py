"""Spark sink connector (KIP-89): writes topics into Parquet or Delta tables through one SparkSession per
worker process, exactly once, with the offsets stored in the table.

Install with ``pip install 'headwater[spark-sink]'``; its entry point is ``spark-sink``
(``connector.class=spark-sink``). See ``docs/spark-sink.md``.
"""

from headwater.reference_connectors.spark_sink.buffer import PartitionBuffer, RecordBuffer
from headwater.reference_connectors.spark_sink.columns import ColumnBuilder, Rejected, SchemaMismatch, infer_schema
from headwater.reference_connectors.spark_sink.config import CONFIG_DEF, SPARK_DEFAULTS, SinkConfig
from headwater.reference_connectors.spark_sink.connector import SparkSinkConnector
from headwater.reference_connectors.spark_sink.delta_table import DeltaTable
from headwater.reference_connectors.spark_sink.hadoop_files import HadoopFiles
from headwater.reference_connectors.spark_sink.packages import delta_package, kafka_package, session_settings
from headwater.reference_connectors.spark_sink.parquet_table import ParquetTable
from headwater.reference_connectors.spark_sink.schema import parse_schema
from headwater.reference_connectors.spark_sink.session import spark_session
from headwater.reference_connectors.spark_sink.table import SinkTable
from headwater.reference_connectors.spark_sink.task import SparkSinkTask
from headwater.reference_connectors.spark_sink.writer import TableWriter

__all__ = [
    "CONFIG_DEF",
    "SPARK_DEFAULTS",
    "ColumnBuilder",
    "DeltaTable",
    "HadoopFiles",
    "ParquetTable",
    "PartitionBuffer",
    "RecordBuffer",
    "Rejected",
    "SchemaMismatch",
    "SinkConfig",
    "SinkTable",
    "SparkSinkConnector",
    "SparkSinkTask",
    "TableWriter",
    "delta_package",
    "infer_schema",
    "kafka_package",
    "parse_schema",
    "session_settings",
    "spark_session",
]
