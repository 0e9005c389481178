"""JDBC-CDC source connector: row changes of SQLite, PostgreSQL and MariaDB/MySQL tables as change events.

Install with ``pip install 'headwater[jdbc-cdc]'``; its entry point is ``jdbc-cdc`` (``connector.class=jdbc-cdc``).
Trigger mode (an audit table filled by row triggers) works on all three databases; log mode reads PostgreSQL's
logical replication stream (``pgoutput``). See ``docs/jdbc-cdc.md``.
"""

from headwater.reference_connectors.jdbc_cdc.config import CONFIG_DEF, CdcConfig, default_object_name
from headwater.reference_connectors.jdbc_cdc.connector import JdbcCdcSourceConnector
from headwater.reference_connectors.jdbc_cdc.envelope import Change, Envelope
from headwater.reference_connectors.jdbc_cdc.tables import CapturedTable, discover
from headwater.reference_connectors.jdbc_cdc.task import JdbcCdcSourceTask, source_partition
from headwater.reference_connectors.jdbc_cdc.trigger import TriggerProvisioner, TriggerStream
from headwater.reference_connectors.jdbc_cdc.watermark import Reading, Watermark

__all__ = [
    "CONFIG_DEF",
    "CapturedTable",
    "CdcConfig",
    "Change",
    "Envelope",
    "JdbcCdcSourceConnector",
    "JdbcCdcSourceTask",
    "Reading",
    "TriggerProvisioner",
    "TriggerStream",
    "Watermark",
    "default_object_name",
    "discover",
    "source_partition",
]
