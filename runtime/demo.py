"""The README's main job for now: an end-to-end pipeline on an embedded worker, with heartbeats and decoupled
sink commits, printing what happened.

The worker runs its tasks on threads with the real clock over the in-memory transport (a real broker comes with
the Kafka transport). The source replays a small order log and then goes idle, so its heartbeats keep moving its
committed offset; the sink writes JSON lines in batches and commits only what it flushed.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from headwater.runtime.herder import StandaloneHerder
from headwater.runtime.storage.offsets import FileOffsetStore
from headwater.runtime.tasks.sink import WorkerSinkTask
from headwater.runtime.tasks.source import WorkerSourceTask
from headwater.runtime.transport.memory import MemoryBroker, MemoryTransport
from headwater.runtime.worker import Worker
from headwater.sdk import (
    ConfigDef,
    Importance,
    SinkConnector,
    SinkRecord,
    SinkTask,
    SourceConnector,
    SourceRecord,
    SourceTask,
    TopicPartition,
    Type,
    at_least,
    hookimpl,
)

LOG = {"log": "orders"}


class OrderLogSource(SourceConnector):
    """Replays ``rows`` order events, then idles; the change log's position keeps moving while idle."""

    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define("topic", Type.STRING, "orders", Importance.HIGH, "Topic to write order events to.")
            .define("rows", Type.INT, 250, Importance.MEDIUM, "How many order events to replay.", at_least(0))
        )

    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)

    def task_class(self) -> type[SourceTask]:
        return OrderLogTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [self.config]


class OrderLogTask(SourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        self.topic = config.get("topic", "orders")
        self.rows = int(config.get("rows", "250"))
        stored = self.context.offset_storage_reader.offset(LOG)
        self.position = int(stored["position"]) if stored else 0

    def poll(self) -> list[SourceRecord]:
        if self.position >= self.rows:
            self.position += 1  # the log moves on: other tables change, nothing we capture
            return []
        batch = []
        for _ in range(min(25, self.rows - self.position)):
            self.position += 1
            order = {"order_id": self.position, "amount": round(self.position * 1.25, 2)}
            batch.append(SourceRecord(LOG, {"position": self.position}, self.topic, order, key=self.position))
        return batch

    @hookimpl
    def produce_heartbeat_records(self, topic: str) -> list[SourceRecord]:
        return [SourceRecord(LOG, {"position": self.position}, topic, {"position": self.position})]


class JsonLinesSink(SinkConnector):
    """Appends records to ``<directory>/<topic>.jsonl`` in batches of ``batch.size``; commits only what it wrote."""

    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define("directory", Type.STRING, importance=Importance.HIGH, documentation="Where the files go.")
            .define("batch.size", Type.INT, 100, Importance.MEDIUM, "Records per write.", at_least(1))
        )

    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)

    def task_class(self) -> type[SinkTask]:
        return JsonLinesTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [self.config]


class JsonLinesTask(SinkTask):
    def start(self, config: Mapping[str, str]) -> None:
        self.directory = Path(config["directory"])
        self.batch_size = int(config.get("batch.size", "100"))
        self.buffer: list[SinkRecord] = []
        self.written: dict[TopicPartition, int] = {}

    def put(self, records: Sequence[SinkRecord]) -> None:
        self.buffer.extend(records)
        if len(self.buffer) >= self.batch_size:
            self.write()
            self.context.request_commit()

    def write(self) -> None:
        for record in self.buffer:
            with (self.directory / f"{record.topic}.jsonl").open("a") as out:
                out.write(json.dumps(record.value) + "\n")
            self.written[record.topic_partition] = record.offset + 1
        self.buffer.clear()

    @hookimpl
    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Commit only what is written; a commit is also the liveness deadline for a partly filled batch."""
        self.write()
        return {tp: off for tp, off in self.written.items() if tp in current_offsets}

    def close(self, partitions: Collection[TopicPartition]) -> None:
        """Revoked partitions: drop what was never written (it was not committed, so it comes again)."""
        self.buffer = [r for r in self.buffer if r.topic_partition not in partitions]
        for tp in partitions:
            self.written.pop(tp, None)


def run(seconds: float = 4.0, rows: int = 250, directory: str | None = None) -> dict[str, Any]:
    """Run the pipeline for ``seconds`` and return what happened."""
    out = Path(directory or tempfile.mkdtemp(prefix="headwater-demo-"))
    out.mkdir(parents=True, exist_ok=True)
    broker = MemoryBroker()
    store = FileOffsetStore(out / "offsets.json")
    store.start()
    worker = Worker(
        {
            "offset.flush.interval.ms": 1000,
            "heartbeat.interval.ms": 500,
            "key.converter": "json",
            "value.converter": "json",
            "value.converter.schemas.enable": "false",
        },
        MemoryTransport(broker),
        store,
    )
    herder = StandaloneHerder(worker)
    herder.put_connector_config("orders-source", {"connector.class": f"{__name__}:OrderLogSource", "rows": rows})
    herder.put_connector_config(
        "orders-sink",
        {"connector.class": f"{__name__}:JsonLinesSink", "topics": "orders", "directory": str(out), "batch.size": 100},
    )
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        herder.tick()
        time.sleep(0.05)
    source = next(t for t in worker.tasks.values() if isinstance(t, WorkerSourceTask))
    sink = next(t for t in worker.tasks.values() if isinstance(t, WorkerSinkTask))
    herder.stop()
    lines = (out / "orders.jsonl").read_text().splitlines() if (out / "orders.jsonl").exists() else []
    topics = broker.topics()
    return {
        "records_produced": len(broker.messages("orders")) if "orders" in topics else 0,
        "heartbeat_records": len(broker.messages("connect-heartbeats")) if "connect-heartbeats" in topics else 0,
        "committed_source_offset": store.get("orders-source", [LOG])[0][1],
        "sink_rows_written": len(lines),
        "sink_committed_offsets": {str(tp): off for tp, off in broker.committed("connect-orders-sink").items()},
        "active_topics": {"orders-source": sorted(source.active_topics), "orders-sink": sorted(sink.active_topics)},
        "output": str(out),
    }


def main(seconds: float = 4.0) -> int:
    print(f"headwater demo: order log -> topic 'orders' -> JSON lines, for {seconds:.0f} s ...", flush=True)
    summary = run(seconds)
    print(f"records produced to 'orders'      {summary['records_produced']}")
    print(f"heartbeat records                 {summary['heartbeat_records']}")
    print(f"committed source offset           {summary['committed_source_offset']}")
    print(f"rows written by the sink          {summary['sink_rows_written']}")
    print(f"sink committed offsets            {summary['sink_committed_offsets']}")
    print(f"active topics                     {summary['active_topics']}")
    print(f"output                            {summary['output']}")
    return 0
