"""A source that polls a paged HTTP API by an ``updated_at``/id cursor, and a sink that posts to it: the worked example
of docs/testing.md, tested by ``tests/examples/test_paged_api.py``.

The API keeps feeds of items in ``(updated_at, id)`` order: ``GET {url}?after=<cursor>&limit=<n>`` returns
``{"items": [...]}``, the next ``n`` items of the feed at ``url`` after ``cursor`` (all from the first when it is
empty), each ``{"id", "updated_at", "type", "data"}``; ``POST {url}`` adds items. An item's cursor is
``"<updated_at>/<id>"``.

``PagedApiSource`` copies a feed to a topic, one record per item of a type it captures (``types``), with one
task. Its source partition is ``{"url": url}`` and each record's offset ``{"cursor": <the item's cursor>}``; a task
resumes after its committed cursor. It fetches a page of ``page.size`` items into a buffer and hands over at most
``batch.size`` of them per ``poll``. Items of other types move its position without data: its heartbeats commit
that position, and only that of items already handed over (returned by ``poll``, or skipped before one), never the
position of the last item fetched, which may still wait in the buffer. While the connector exists it is registered
as a client of its feed (``PUT {url}/clients/{name}``), as an API key or a webhook would be; deleting the connector
removes it.

``PagedApiSink`` posts the values of its records to a feed as items of type ``record``: ``put`` buffers, and each
commit posts what is buffered and commits only what was posted.
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from collections import deque
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from headwater.sdk import (
    ConfigDef,
    ExactlyOnceSupport,
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
    non_empty_string,
)

Item = dict[str, Any]

SOURCE_CONFIG = (
    ConfigDef()
    .define("url", Type.STRING, importance=Importance.HIGH, documentation="The feed.", validator=non_empty_string)
    .define("topic", Type.STRING, importance=Importance.HIGH, documentation="The topic to write its items to.")
    .define("types", Type.LIST, "order", Importance.MEDIUM, "The item types to copy; others are skipped.")
    .define("page.size", Type.INT, 100, Importance.LOW, "Items fetched per API call.", at_least(1))
    .define("batch.size", Type.INT, 100, Importance.LOW, "Records handed over per poll.", at_least(1))
    .define("poll.interval.ms", Type.LONG, 1_000, Importance.LOW, "Wait after a page that is not full.", at_least(0))
)
SINK_CONFIG = ConfigDef().define(
    "url", Type.STRING, importance=Importance.HIGH, documentation="The feed.", validator=non_empty_string
)


def call(method: str, url: str, body: Any = None) -> Any:
    """One call to the API: JSON in, JSON out."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data, {"Content-Type": "application/json"}, method=method)
    with urllib.request.urlopen(request, timeout=10) as response:
        answer = response.read()
    return json.loads(answer) if answer else None


def fetch_page(url: str, after: str, limit: int) -> list[Item]:
    """The next ``limit`` items of the feed at ``url`` after cursor ``after`` (``""``: from the first)."""
    query = urllib.parse.urlencode({"after": after, "limit": limit})
    items: list[Item] = call("GET", f"{url}?{query}")["items"]
    return items


def cursor(item: Item) -> str:
    return f"{item['updated_at']}/{item['id']}"


def cursor_order(offset: Mapping[str, Any]) -> tuple[str, int]:
    """This source's offsets in the API's order: by ``updated_at``, then by id as a number (``".../9"`` before
    ``".../10"``, which the strings alone would put the other way round)."""
    updated_at, _, id = offset["cursor"].rpartition("/")
    return updated_at, int(id)


class PagedApiSource(SourceConnector):
    """Copies the feed at ``url`` to ``topic``."""

    def config_def(self) -> ConfigDef:
        return SOURCE_CONFIG

    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)
        self.client = f"{config['url']}/clients/{config['name']}"
        call("PUT", self.client)  # kept through stops and restarts; removed when the connector is deleted

    def task_class(self) -> type[SourceTask]:
        return PagedApiTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [self.config]  # one feed, one cursor: one task

    def exactly_once_support(self, config: Mapping[str, str]) -> ExactlyOnceSupport:
        return ExactlyOnceSupport.SUPPORTED  # a task resumes from its committed cursor and nothing else

    @hookimpl(specname="stop")
    def on_stop(self, connector_deleted: bool) -> None:
        if connector_deleted:
            call("DELETE", self.client)


class PagedApiTask(SourceTask):
    """Source partition ``{"url": url}``; each record's offset is ``{"cursor": <its item's cursor>}``."""

    def start(self, config: Mapping[str, str]) -> None:
        settings = SOURCE_CONFIG.parse(config)
        self.url, self.topic, self.types = settings["url"], settings["topic"], set(settings["types"])
        self.page_size, self.batch_size = settings["page.size"], settings["batch.size"]
        self.interval_ms = settings["poll.interval.ms"]
        self.partition = {"url": self.url}
        stored = self.context.offset_storage_reader.offset(self.partition)
        self.fetched: str = stored["cursor"] if stored else ""
        """The cursor of the last item fetched: the next page starts after it."""
        self.handed_over = self.fetched
        """The cursor of the last item handed over (returned by ``poll``, or skipped): what a heartbeat reports."""
        self.buffer: deque[Item] = deque()
        self.next_fetch_ms = 0

    def poll(self) -> list[SourceRecord]:
        now = self.context.clock.now_ms()
        if not self.buffer and now >= self.next_fetch_ms:
            page = fetch_page(self.url, self.fetched, self.page_size)
            self.buffer.extend(page)
            if page:
                self.fetched = cursor(page[-1])
            self.next_fetch_ms = now if len(page) == self.page_size else now + self.interval_ms
        records: list[SourceRecord] = []
        while self.buffer and len(records) < self.batch_size:
            item = self.buffer.popleft()
            self.handed_over = cursor(item)
            if item["type"] in self.types:
                offset = {"cursor": self.handed_over}  # a map of its own: never changed once handed over
                records.append(SourceRecord(self.partition, offset, self.topic, item, key=str(item["id"])))
        return records

    @hookimpl
    def produce_heartbeat_records(self, topic: str) -> list[SourceRecord]:
        """Commit the position past skipped items while no record is sent. Keyed: the heartbeat topic is compacted."""
        if not self.handed_over:
            return []
        offset = {"cursor": self.handed_over}
        return [SourceRecord(self.partition, offset, topic, offset, key=self.partition)]


class PagedApiSink(SinkConnector):
    """Posts the values of its records to the feed at ``url``."""

    def config_def(self) -> ConfigDef:
        return SINK_CONFIG

    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)

    def task_class(self) -> type[SinkTask]:
        return PagedApiSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.config) for _ in range(max_tasks)]  # the runtime spreads the partitions over the tasks


class PagedApiSinkTask(SinkTask):
    def start(self, config: Mapping[str, str]) -> None:
        self.url = SINK_CONFIG.parse(config)["url"]
        self.buffer: list[SinkRecord] = []
        self.posted: dict[TopicPartition, int] = {}
        """Per partition, the offset after the last record posted: what is safe to commit."""

    def put(self, records: Sequence[SinkRecord]) -> None:
        self.buffer.extend(records)

    @hookimpl
    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        if self.buffer:
            call("POST", self.url, [{"type": "record", "data": record.value} for record in self.buffer])
            for record in self.buffer:
                self.posted[record.topic_partition] = record.offset + 1
            self.buffer.clear()
        return {tp: offset for tp, offset in self.posted.items() if tp in current_offsets}

    def close(self, partitions: Collection[TopicPartition]) -> None:
        self.buffer = [record for record in self.buffer if record.topic_partition not in partitions]
        for tp in partitions:
            self.posted.pop(tp, None)
