"""One flush: the table's columns made to follow the records' schemas (when they have one and ``value.schema`` is
empty), buffered records into Arrow tables, records that do not fit reported to the runtime's ErrantRecordReporter
(which sends them to the dead-letter queue, logs them or fails the task, as ``errors.*`` say), then, once every
report is done, one write of the table that stores the offsets, and any change of its columns, with the rows."""

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
from headwater.reference_connectors.spark_sink.record_schema import (
    IncompatibleSchema,
    SchemaChange,
    UnsupportedSchema,
    evolve,
    schema_text,
)
from headwater.reference_connectors.spark_sink.record_values import RecordSchemas
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
        """The columns of the last write (``None`` until the first)."""
        self.schemas = RecordSchemas()
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
        are done (their dead-letter writes acknowledged); a crash in between reports them again.

        A change of the table's columns that records' schemas need (:meth:`_follow`) is part of the table write
        itself, never a step of its own before it: Delta adds the columns in the commit that holds the rows and
        their offsets (``mergeSchema``), and a Parquet table's manifest, its commit, records the new columns with
        the files. So a crash before that commit leaves the table's columns as they were, with the records read
        again and the change made again with them; a crash after it leaves the change and the rows, and the records
        are read from after them. The one step that may come first, enabling Delta's type widening on the table, is
        a table property that changes no column and is set again, or found set, when the write is replayed."""
        if not parts:
            return {}
        table = self.start_session()
        try:
            builder, change = self._follow(parts)
            tables: dict[TopicPartition, pa.Table] = {}
            rejected: list[Rejected] = []
            for tp, buffer in parts.items():
                tables[tp], misfits = builder.build(tp, buffer)
                rejected += misfits
            reports = self._report(rejected) if rejected else []
            last = {tp: buffer.last_offset for tp, buffer in parts.items()}
            self._await(reports)
            if change:
                log.info("%s: the records' schemas change the table's columns: %s", table, change)
            table.write(tables, last, change)
        finally:
            self.schemas.forget()
        self.builder = builder
        self.rows += sum(table.num_rows for table in tables.values())
        self.writes += 1
        return {tp: offset + 1 for tp, offset in last.items()}

    def _follow(self, parts: Mapping[TopicPartition, PartitionBuffer]) -> tuple[ColumnBuilder, SchemaChange]:
        """The columns of this write. Without ``value.schema``, the table's columns follow the schemas of the
        records that have one, in partition and offset order: the first one makes a new table's columns, a later
        one adds its new optional fields and widens what it widens (see :func:`.evolve`); a change the table cannot
        follow raises :class:`.IncompatibleSchema` naming the field, the record and both schemas."""
        builder = self.builder
        if self.config.value_schema is not None or not any(buffer.typed for buffer in parts.values()):
            return builder or self._builder(parts), SchemaChange()
        metadata = self._metadata()
        if builder is not None:
            columns: pa.Schema | None = builder.table_schema
        else:
            existing = self.start_session().schema()
            values = None if existing is None else pa.schema([f for f in existing if f.name not in metadata.values()])
            columns = None if values is None else self._schema(values)
        change, seen = SchemaChange(), set()
        for tp in sorted(parts):
            for record in parts[tp].records:
                schema = record.value_schema
                if schema is None or (key := self.schemas.key(schema)) in seen:
                    continue
                seen.add(key)
                try:
                    built = self.schemas.get(schema)
                    if built is None:
                        continue  # not a struct: its records do not fit
                    if columns is None:
                        columns = self._schema(built.arrow)
                        log.info("%s: the table's columns from the record schema: %s", self.table, columns.to_string())
                        continue
                    columns, found = evolve(columns, built.arrow, set(metadata.values()))
                except (UnsupportedSchema, IncompatibleSchema) as error:
                    raise type(error)(
                        f"the value schema of the record at topic {record.topic!r} partition {record.partition} "
                        f"offset {record.offset} cannot be written to {self.table}: {error}. The table's columns: "
                        f"{schema_text(columns) if columns is not None else 'none yet'}. The record's schema: "
                        f"{schema_text(schema)}"
                    ) from None
                change += found
        if columns is None:  # no struct schema: the records do not fit whatever the columns
            return builder or self._builder(parts), SchemaChange()
        if builder is not None and not change:
            return builder, change
        values = pa.schema([f for f in columns if f.name not in metadata.values()])
        made = ColumnBuilder(values, columns, metadata, self.config.key_type, schemas=self.schemas)
        return made, change

    def _metadata(self) -> dict[str, str]:
        return {field: self.config.metadata_name(field) for field in self.config.metadata_columns}

    def _builder(self, parts: Mapping[TopicPartition, PartitionBuffer]) -> ColumnBuilder:
        """The columns: the configured value schema, else the existing table's, else one inferred from ``parts``."""
        config = self.config
        metadata = self._metadata()
        value_schema = config.value_schema
        if value_schema is None:
            existing = self.start_session().schema()
            if existing is not None:
                names = set(metadata.values())
                value_schema = pa.schema([f for f in existing if f.name not in names])
            else:
                values = [v for buffer in parts.values() for v in buffer.values if type(v) is bytes]
                value_schema = infer_schema(values)
                if value_schema is None:
                    raise ConnectError(
                        f"cannot infer the table's columns: no value of the first {len(values)} records is a JSON "
                        f"object; set {VALUE_SCHEMA}"
                    )
                log.info("inferred the value columns of %s: %s", self.table, value_schema.to_string())
        configured = config.value_schema is not None
        return ColumnBuilder(
            value_schema, self._schema(value_schema), metadata, config.key_type, configured, self.schemas
        )

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
