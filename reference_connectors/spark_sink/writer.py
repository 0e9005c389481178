"""One flush: buffered records into Arrow tables, records that do not fit reported to the runtime's
ErrantRecordReporter (which sends them to the dead-letter queue, logs them or fails the task, as ``errors.*`` say),
then, once every report is done, one write of the table that stores the offsets with the rows."""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import Future

import pyarrow as pa
from pyspark.sql import SparkSession

from headwater.reference_connectors.spark_sink.buffer import PartitionBuffer
from headwater.reference_connectors.spark_sink.columns import ColumnBuilder, Rejected, infer_schema
from headwater.reference_connectors.spark_sink.config import PARTITION_BY, VALUE_SCHEMA, SinkConfig
from headwater.reference_connectors.spark_sink.delta_table import DeltaTable, dynamodb_coordinator
from headwater.reference_connectors.spark_sink.parquet_table import ParquetTable
from headwater.reference_connectors.spark_sink.schema import table_schema
from headwater.reference_connectors.spark_sink.session import spark_session
from headwater.reference_connectors.spark_sink.table import SinkTable
from headwater.sdk import ConfigError, ConnectError, ErrantRecordReporter, TopicPartition

log = logging.getLogger(__name__)

REPORT_WAIT_S = 30.0
"""How long a flush waits for a report before it logs that it is still waiting (it waits on: a dead-letter write
that fails ends the wait with its error)."""


def make_table(config: SinkConfig, session: SparkSession) -> SinkTable:
    args = (session, config.table_path, config.app_id, config.partition_by, config.write_max_files)
    if config.table_format != "delta":
        return ParquetTable(*args)
    table = DeltaTable(*args)
    if config.commit_coordinator == "dynamodb":
        table.coordinate(dynamodb_coordinator(config.dynamodb_table, config.dynamodb_endpoint), config.creator)
    return table


class TableWriter:
    """Writes flushes of one task into its table, starting the worker's SparkSession on first use."""

    def __init__(self, config: SinkConfig, reporter: ErrantRecordReporter | None = None) -> None:
        """``reporter``: the task context's, where records that do not fit go; without one such a record fails the
        flush."""
        self.config = config
        self.table: SinkTable | None = None
        """Made with the worker's SparkSession by :meth:`start_session`."""
        self.reporter = reporter
        self.builder: ColumnBuilder | None = None
        self.rows = 0
        self.rejected = 0
        self.writes = 0

    def start_session(self) -> SinkTable:
        if self.table is None:
            config = self.config
            delta, coordinated = config.table_format == "delta", bool(config.commit_coordinator)
            session = spark_session(config.spark_conf, delta=delta, s3a=config.s3a, dynamodb=coordinated)
            self.table = make_table(config, session)
            if isinstance(self.table, DeltaTable):
                self.table.prepare(self._schema() if config.value_schema is not None else None)
            if config.scheme == "file" and not config.local_master:
                self._require_shared(self.table)
        return self.table

    def _require_shared(self, table: SinkTable) -> None:
        """Refuse a ``file:`` table on a cluster whose executors do not see the driver's directory: their files would
        land on their own hosts (a Parquet write would fail; a Delta commit would name files the driver's host has
        not got)."""
        master = self.config.spark_conf.get("spark.master")
        hosts = table.unshared_hosts()
        if hosts:
            raise ConnectError(
                f"{table.path} is on the local file system and spark.master is {master}, but the executors on "
                f"{', '.join(hosts)} do not see the driver's files in it: put the table on a directory every host of "
                "the cluster mounts, or on HDFS or an object store (s3a://, abfs://, gs://)"
            )
        log.info("%s: the executors of %s see the driver's directory", table, master)

    def recover(self, partitions: Collection[TopicPartition]) -> dict[TopicPartition, int]:
        """The last offset in the table of each of ``partitions`` that has one (a crashed write finished or undone)."""
        return self.start_session().recover(partitions)

    def write(self, parts: Mapping[TopicPartition, PartitionBuffer]) -> dict[TopicPartition, int]:
        """Write ``parts``; return the next offset to consume of each partition, durable in the table. The table
        write, which moves each partition's offset past its records that do not fit, comes only once their reports
        are done (their dead-letter writes acknowledged); a crash in between reports them again."""
        if not parts:
            return {}
        table = self.start_session()
        builder = self.builder or self._builder(parts)
        tables: dict[TopicPartition, pa.Table] = {}
        rejected: list[Rejected] = []
        for tp, buffer in parts.items():
            tables[tp], misfits = builder.build(tp, buffer)
            rejected += misfits
        reports = self._report(rejected) if rejected else []
        last = {tp: buffer.last_offset for tp, buffer in parts.items()}
        self._await(reports)
        table.write(tables, last)
        self.rows += sum(table.num_rows for table in tables.values())
        self.writes += 1
        return {tp: offset + 1 for tp, offset in last.items()}

    def _builder(self, parts: Mapping[TopicPartition, PartitionBuffer]) -> ColumnBuilder:
        """The columns: the configured value schema, else the existing table's, else one inferred from ``parts``."""
        config = self.config
        metadata = {field: config.metadata_name(field) for field in config.metadata_columns}
        value_schema = config.value_schema
        if value_schema is None:
            existing = self.start_session().schema()
            if existing is not None:
                names = set(metadata.values())
                value_schema = pa.schema([f for f in existing if f.name not in names])
            else:
                values = [v for buffer in parts.values() for v in buffer.values]
                value_schema = infer_schema(values)
                if value_schema is None:
                    raise ConnectError(
                        f"cannot infer the table's columns: no value of the first {len(values)} records is a JSON "
                        f"object; set {VALUE_SCHEMA}"
                    )
                log.info("inferred the value columns of %s: %s", self.table, value_schema.to_string())
        self.builder = ColumnBuilder(value_schema, self._schema(value_schema), metadata, config.key_type)
        return self.builder

    def _schema(self, value_schema: pa.Schema | None = None) -> pa.Schema:
        """The table's columns for ``value_schema`` (default: the configured one): values, then metadata."""
        config = self.config
        values = value_schema if value_schema is not None else config.value_schema
        assert values is not None
        schema = table_schema(values, config.metadata_columns, config.metadata_prefix, config.key_type)
        missing = [name for name in config.partition_by if name not in schema.names]
        if missing:
            raise ConfigError(PARTITION_BY, ",".join(config.partition_by), f"No column {missing[0]} in {schema.names}")
        return schema

    def _report(self, rejected: Sequence[Rejected]) -> list[tuple[Rejected, Future[None]]]:
        """Report each of ``rejected`` to the reporter, which raises, naming the first, when errors are not
        tolerated."""
        reporter = self.reporter
        if reporter is None:
            first = rejected[0]
            raise ConnectError(
                f"the record at {first.where()} does not fit the table's schema: {first.reason} ({len(rejected)} "
                "records of this flush do not fit, and the task's context offers no errant record reporter)"
            )
        reports = [(record, reporter.report(record.record, record.error())) for record in rejected]
        self.rejected += len(rejected)
        log.info("reported %d records that do not fit the schema, the first at %s", len(rejected), rejected[0].where())
        return reports

    def _await(self, reports: Sequence[tuple[Rejected, Future[None]]]) -> None:
        """Wait until every report is done; raises the error of a failed one (its dead-letter write)."""
        for record, report in reports:
            while True:
                try:
                    report.result(REPORT_WAIT_S)
                    break
                except TimeoutError:
                    if report.done():  # the report's own error
                        raise
                    log.warning(
                        "the report of the record at %s is not done after %.0f s; the table write waits for it",
                        record.where(),
                        REPORT_WAIT_S,
                    )
