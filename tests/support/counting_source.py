"""A source connector for cluster tests in one process: each task counts on its own source partition
``{"connector": <name>, "task": <n>}`` with offset ``{"seq": n}``, a few records per poll, resuming after its
committed offset. Records are keyed ``<connector>-<task>`` and carry ``{"connector", "task", "seq"}``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from headwater.sdk import (
    ConfigDef,
    ConnectorTransactionBoundaries,
    Importance,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Type,
    hookimpl,
)


class CountingSourceConnector(SourceConnector):
    def config_def(self) -> ConfigDef:
        return ConfigDef().define("topic", Type.STRING, importance=Importance.HIGH, documentation="Topic written.")

    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)

    def task_class(self) -> type[SourceTask]:
        return CountingSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self.config, "task.number": str(i)} for i in range(max_tasks)]


class CountingSourceTask(SourceTask):
    BATCH = 3

    def start(self, config: Mapping[str, str]) -> None:
        self.topic = config["topic"]
        self.partition = {"connector": config["name"], "task": int(config["task.number"])}
        stored = self.context.offset_storage_reader.offset(self.partition)
        self.next = int(stored["seq"]) + 1 if stored else 0

    def poll(self) -> Sequence[SourceRecord]:
        first, self.next = self.next, self.next + self.BATCH
        key = f"{self.partition['connector']}-{self.partition['task']}"
        return [
            SourceRecord(self.partition, {"seq": n}, self.topic, value={**self.partition, "seq": n}, key=key)
            for n in range(first, self.next)
        ]


class BoundarySourceConnector(CountingSourceConnector):
    """Counts like :class:`CountingSourceConnector`, and defines its own transactions: it asks to commit right
    after each record whose number is a multiple of ``commit.every``, and to abort the transaction of each
    record whose number is a multiple of ``abort.every`` (records it never sends again)."""

    def config_def(self) -> ConfigDef:
        return (
            super()
            .config_def()
            .define("commit.every", Type.INT, 10, Importance.LOW, "Commit right after each multiple of it.")
            .define("abort.every", Type.INT, 0, Importance.LOW, "Abort the transaction of each multiple (0: none).")
            .define("records", Type.INT, -1, Importance.LOW, "Records before the task has no more data (-1: never).")
        )

    def task_class(self) -> type[SourceTask]:
        return BoundarySourceTask

    def can_define_transaction_boundaries(self, config: Mapping[str, str]) -> ConnectorTransactionBoundaries:
        return ConnectorTransactionBoundaries.SUPPORTED


class BoundarySourceTask(CountingSourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        super().start(config)
        self.commit_every = int(config.get("commit.every", "10"))
        self.abort_every = int(config.get("abort.every", "0"))
        self.records = int(config.get("records", "-1"))

    def poll(self) -> Sequence[SourceRecord]:
        if 0 <= self.records <= self.next:
            return []
        records = super().poll()
        transactions = self.context.transaction_context
        assert transactions is not None, "connector-defined boundaries give the task a transaction context"
        for record in records:
            seq = record.source_offset["seq"]  # type: ignore[index]
            if self.abort_every and seq % self.abort_every == 0:
                transactions.abort_transaction(record)
            elif seq % self.commit_every == 0:
                transactions.commit_transaction(record)
        return records

    @hookimpl
    def produce_heartbeat_records(self, topic: str) -> list[SourceRecord]:
        """A heartbeat at the last record handed over (KIP-910)."""
        last = {"seq": self.next - 1}
        return [SourceRecord(self.partition, last, topic, value={**self.partition, "heartbeat": self.next - 1})]
