"""The JDBC-CDC source connector: provisions what its capture mode needs when it starts, runs one task, and removes
what it provisioned only when it is deleted (``stop(connector_deleted=True)``, KIP-901), never on a plain stop,
restart or reconfiguration. The runtime delivers that stop whatever state the connector is deleted in, to an
instance whose ``start`` may have raised part way (a FAILED connector, or the instance a worker starts to tell a
STOPPED one), so the cleanup needs only the config: it finds what to drop by name.

Exactly once (KIP-618): see :meth:`JdbcCdcSourceConnector.exactly_once_support` for the configs that deliver
exactly once on a worker with exactly-once source support, and
:meth:`JdbcCdcSourceConnector.can_define_transaction_boundaries` for ``transaction.boundary=connector``."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Engine

from headwater.reference_connectors import headwater_version
from headwater.reference_connectors.jdbc_cdc.config import (
    CAPTURE_MODE,
    CONFIG_DEF,
    LOG,
    NEVER,
    SNAPSHOT_MODE,
    CdcConfig,
)
from headwater.reference_connectors.jdbc_cdc.connection_url import CONNECTION_URL, check_database_exists
from headwater.reference_connectors.jdbc_cdc.database import make_engine
from headwater.reference_connectors.jdbc_cdc.tables import discover
from headwater.reference_connectors.jdbc_cdc.task import JdbcCdcSourceTask, record_schemas
from headwater.reference_connectors.jdbc_cdc.trigger import TriggerProvisioner
from headwater.sdk import (
    ConfigDef,
    ConnectorTransactionBoundaries,
    ExactlyOnceSupport,
    SourceConnector,
    SourceTask,
    hookimpl,
)
from headwater.sdk.providers import has_reference

log = logging.getLogger(__name__)

TRANSACTION_BOUNDARY = "transaction.boundary"


def _value(config: Mapping[str, str], key: str, default: str) -> str:
    value = config.get(key)
    return default if value is None or str(value).strip() == "" else str(value).strip().lower()


class JdbcCdcSourceConnector(SourceConnector):
    """Captures row changes of the tables ``table.include.list`` selects, in ``capture.mode``."""

    engine: Engine | None = None

    def version(self) -> str:
        return headwater_version()

    def config_def(self) -> ConfigDef:
        return CONFIG_DEF

    def validate(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """Also refuses a SQLite database file that does not exist (:mod:`.connection_url`), unless the URL is a
        config provider reference, checked when the connector starts."""
        parsed = super().validate(config)
        CdcConfig.parse(config)
        if not has_reference(config.get(CONNECTION_URL)):
            check_database_exists(CONNECTION_URL, config.get(CONNECTION_URL))
        return parsed

    def start(self, config: Mapping[str, str]) -> None:
        """Check the database and create the audit table and triggers (trigger mode) or the publication (log mode);
        raises :class:`~headwater.sdk.ConnectError` for a missing table, missing privileges or ``wal_level``."""
        self.config = dict(config)
        self.cdc = CdcConfig.parse(config)
        self.engine = make_engine(self.cdc.url)  # before anything that can fail: a failed start still cleans up
        tables = discover(self.engine, self.cdc.include, self.cdc.exclude, internal=[self.cdc.audit_table])
        record_schemas(self.cdc, tables)  # a column no record schema can hold fails before anything is provisioned
        if self.cdc.mode == LOG:
            from headwater.reference_connectors.jdbc_cdc.logical import LogProvisioner

            LogProvisioner(self.engine, self.cdc).provision(tables)
        else:
            TriggerProvisioner(self.engine, self.cdc.audit_table, self.cdc.decimal_handling).provision(tables)

    def exactly_once_support(self, config: Mapping[str, str]) -> ExactlyOnceSupport:
        """Whether a task that resumes from the offset of its last committed transaction emits exactly the changes
        after it:

        - ``SUPPORTED`` with ``snapshot.mode=never``, in both capture modes. Trigger mode resumes after the committed
          audit id, and its watermark hands audit ids on in order, passing an id only once it is visible or can no
          longer commit, so nothing after the offset is skipped and nothing before it comes again. Log mode
          resumes the slot at the committed ``flush`` position and skips the events up to the committed
          ``(lsn, seq)``. Neither lets the database forget anything (audit purge, slot confirmation) before the
          ``offsets_committed`` hook, which comes after the transaction committed.
        - ``SUPPORTED`` in log mode with ``snapshot.mode=initial`` and ``transaction.boundary=connector``: the task
          sends the whole snapshot in one transaction, so it is committed whole or read again whole.
        - ``UNSUPPORTED`` otherwise: a snapshot cannot resume part way. A task that stops before the snapshot's last
          row is committed snapshots again from the first row, so the rows of its transactions committed so far
          would be delivered twice."""
        if _value(config, SNAPSHOT_MODE, "initial") == NEVER:
            return ExactlyOnceSupport.SUPPORTED
        whole_snapshot = _value(config, TRANSACTION_BOUNDARY, "poll") == "connector"
        if _value(config, CAPTURE_MODE, "trigger") == LOG and whole_snapshot:
            return ExactlyOnceSupport.SUPPORTED
        return ExactlyOnceSupport.UNSUPPORTED

    def can_define_transaction_boundaries(self, config: Mapping[str, str]) -> ConnectorTransactionBoundaries:
        """``SUPPORTED`` in log mode: pgoutput sends each database transaction whole, in commit order, so the task
        commits a Kafka transaction where a database transaction ends (each Kafka transaction holds whole database
        transactions, and the snapshot is one). ``UNSUPPORTED`` in trigger mode: the audit rows of concurrent
        database transactions interleave in id order, so no cheap point ends one transaction without splitting
        another."""
        if _value(config, CAPTURE_MODE, "trigger") == LOG:
            return ConnectorTransactionBoundaries.SUPPORTED
        return ConnectorTransactionBoundaries.UNSUPPORTED

    def task_class(self) -> type[SourceTask]:
        return JdbcCdcSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """One task: changes are read in one order from one audit table or one slot."""
        return [dict(self.config)]

    @hookimpl(specname="stop")
    def on_stop(self, connector_deleted: bool) -> None:
        """On delete, drop every trigger and the audit table, or the slot and the publication, by their names
        (also after a ``start`` that raised once the engine was made)."""
        engine = self.engine
        if engine is None:
            return
        try:
            if connector_deleted:
                log.info("connector %s deleted: removing what it provisioned", self.cdc.name)
                if self.cdc.mode == LOG:
                    from headwater.reference_connectors.jdbc_cdc.logical import LogProvisioner

                    LogProvisioner(engine, self.cdc).deprovision()
                else:
                    TriggerProvisioner(engine, self.cdc.audit_table).deprovision()
        finally:
            engine.dispose()
            self.engine = None
