"""A change-data-capture source in under 30 lines: the rows a database's change log captures, and heartbeats that
keep the committed offset moving while nothing captured changes.

``CHANGE_LOG`` stands for the change log (a PostgreSQL WAL, a MySQL binlog): entry ``n - 1`` is log position
``n``. Every write to the database moves the position; writes to tables the connector does not capture are
``None``. A real database keeps its log until the connector's committed position has passed it, so a connector
whose tables are quiet must still report how far it has read: that is what its heartbeat records do. A heartbeat
reports only the position of data already handed over (rows ``poll`` has returned), never further, or a restart
would resume past rows that were never sent.
"""

from collections.abc import Mapping
from typing import Any

from headwater.sdk import ConfigDef, Importance, SourceConnector, SourceRecord, SourceTask, Type, hookimpl

CHANGE_LOG: list[dict[str, Any] | None] = []
LOG = {"log": "inventory"}


class ChangeLogSource(SourceConnector):
    def config_def(self) -> ConfigDef:
        return ConfigDef().define("topic", Type.STRING, importance=Importance.HIGH, documentation="Topic for rows.")

    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)

    def task_class(self) -> type[SourceTask]:
        return ChangeLogTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [self.config]


class ChangeLogTask(SourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        self.topic = config["topic"]
        stored = self.context.offset_storage_reader.offset(LOG)
        self.position: int = stored["position"] if stored else 0  # resume after the committed position

    def poll(self) -> list[SourceRecord]:
        new = enumerate(CHANGE_LOG[self.position :], start=self.position + 1)
        self.position = len(CHANGE_LOG)
        return [SourceRecord(LOG, {"position": n}, self.topic, row) for n, row in new if row is not None]

    @hookimpl
    def produce_heartbeat_records(self, topic: str) -> list[SourceRecord]:
        # Called before poll and only when nothing is waiting to be sent: every row up to here is handed over, so
        # the position reports only data already handed over. Keyed: the heartbeat topic is compacted.
        return [SourceRecord(LOG, {"position": self.position}, topic, {"position": self.position}, key=LOG)]
