"""A source connector that reads a JSON-lines file into a topic, one record per line, and resumes where it left off.

Replace the file with your system; keep the shape:

- the source partition says *what* is read (the file), the source offset *how far* (the line number); the runtime
  commits an offset only once the record and every one before it is acknowledged, and ``start`` resumes after it;
- lines the connector skips (blank, ``#`` comments) are like changes a CDC source does not capture: its heartbeats
  (``heartbeat.interval.ms``) commit the position past them, so the committed offset keeps up while nothing is sent;
- with nothing new, ``poll`` says so with ``self.context.idle(ms)`` instead of sleeping: the worker polls again
  ``ms`` later, committing offsets and sending heartbeats meanwhile, a stop ends the wait at once, and in a simulated
  test the idle is virtual time;
- ``stop(connector_deleted=True)`` removes what the connector provisioned (here a "slot" file that registers the
  reader, like a replication slot); a plain stop keeps it;
- a task resumes from its committed offset and nothing else, so it delivers exactly once on workers with
  ``exactly.once.source.support=enabled``: ``exactly_once_support`` says so, and the conformance suite checks it.
  Keep a position anywhere but in the offsets (a file, a database, a connector attribute) and it would not.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from headwater.sdk import (
    ConfigDef,
    ConnectError,
    ExactlyOnceSupport,
    SourceConnector,
    SourceRecord,
    SourceTask,
    hookimpl,
)

from {{ cookiecutter.package_name }} import config as keys

IDLE_MS = 200
"""How long a task that found no new line waits before the worker polls it again."""


def slot_path(file: str, connector: str) -> Path:
    """The file that registers connector ``connector`` as a reader of ``file``."""
    path = Path(file)
    return path.with_name(f".{path.name}.{connector}.slot")


def slots(file: str) -> list[Path]:
    """Every reader registered on ``file``."""
    path = Path(file)
    return sorted(path.parent.glob(f".{path.name}.*.slot"))


class {{ cookiecutter.class_prefix }}SourceConnector(SourceConnector):
    """Reads one JSON-lines file with one task."""

    def version(self) -> str:
        return "0.1.0"

    def config_def(self) -> ConfigDef:
        return keys.config_def()

    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)
        self.slot = slot_path(config[keys.FILE], config["name"])
        self.slot.touch()

    def task_class(self) -> type[SourceTask]:
        return {{ cookiecutter.class_prefix }}SourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [self.config]  # one file, one task

    def exactly_once_support(self, config: Mapping[str, str]) -> ExactlyOnceSupport:
        """A task resumes from its committed offset alone (see ``start``), so it produces exactly the lines after
        it again: exactly once with transactions (KIP-618)."""
        return ExactlyOnceSupport.SUPPORTED

    @hookimpl(specname="stop")
    def on_stop(self, connector_deleted: bool) -> None:
        if connector_deleted:
            self.slot.unlink(missing_ok=True)


class {{ cookiecutter.class_prefix }}SourceTask(SourceTask):
    """Source partition ``{"file": <path>}``, offset ``{"line": n}`` (0-based number of the last line read)."""

    def start(self, config: Mapping[str, str]) -> None:
        self.path = Path(config[keys.FILE])
        self.topic = config[keys.TOPIC]
        self.batch_size = int(config.get(keys.BATCH_SIZE, "100"))
        self.partition = {"file": str(self.path)}
        stored = self.context.offset_storage_reader.offset(self.partition)
        self.position = int(stored["line"]) if stored else -1
        """The last line handed over (as a record, or skipped); the next poll starts after it."""
        self.file: IO[bytes] | None = None
        self.lines_read = -1
        self.partial = b""
        self.unread: deque[tuple[int, bytes]] = deque()

    def poll(self) -> list[SourceRecord]:
        self.read_new_lines()
        records: list[SourceRecord] = []
        while self.unread and len(records) < self.batch_size:
            number, line = self.unread.popleft()
            if number <= self.position:
                continue  # read before the restart: its offset is committed
            self.position = number
            text = line.decode("utf-8").strip()
            if text and not text.startswith("#"):
                records.append(SourceRecord(self.partition, {"line": number}, self.topic, self.parse(number, text)))
        if not records:
            self.context.idle(IDLE_MS)  # nothing new: poll again in IDLE_MS (virtual time in a simulated test)
        return records

    def read_new_lines(self) -> None:
        """Queue every complete line appended to the file since the last call."""
        if self.file is None:
            if not self.path.exists():
                return
            self.file = self.path.open("rb")
        *complete, self.partial = (self.partial + self.file.read()).split(b"\n")
        for line in complete:
            self.lines_read += 1
            self.unread.append((self.lines_read, line))

    def parse(self, number: int, text: str) -> Any:
        try:
            return json.loads(text)
        except ValueError as error:
            raise ConnectError(f"{self.path}:{number + 1} is not JSON: {error}") from None

    @hookimpl
    def produce_heartbeat_records(self, topic: str) -> list[SourceRecord]:
        """Commit the position past skipped lines while no record is sent. Keyed: the heartbeat topic is compacted."""
        if self.position < 0:
            return []
        value = {"file": str(self.path), "line": self.position}
        return [SourceRecord(self.partition, {"line": self.position}, topic, value, key=self.partition)]

    @hookimpl(specname="stop")
    def on_stop(self, connector_deleted: bool) -> None:
        if self.file is not None:
            self.file.close()
