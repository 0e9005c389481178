"""examples/paged_api.py keeps the offset contract: the conformance suites of its source and its sink, a stateful
test of the source through random writes, skipped items, crashes, restarts and failing commits, and a plain test of
its heartbeats, all on the simulated worker. docs/testing.md shows parts of this module and of the example verbatim
(``tests/docs/test_testing_guide.py`` checks that they are).

The API is :class:`FakeApi`: the feeds of the example's docstring, kept in memory and served over real HTTP by a
local server for the module's tests; each test reads and writes feeds of its own.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlsplit

import pytest
from hypothesis.stateful import rule

from headwater.harness import (
    ConformanceContext,
    SimulatedWorker,
    SinkConformance,
    SourceConformance,
    SourceMachine,
    machine_test,
)
from paged_api import PagedApiSink, PagedApiSource, call, cursor, cursor_order, fetch_page

Item = dict[str, Any]
START = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)


class FakeApi(ThreadingHTTPServer):
    """The paged API from memory, on a local port: ``GET``/``POST`` a feed's items at any path, ``PUT``/``DELETE``
    ``<feed>/clients/<name>`` and ``GET <feed>/clients``. Items get ids 1, 2, 3, ... per feed and three share each
    ``updated_at`` second, so a cursor is ordered by its id only where the seconds tie."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), ApiHandler)
        self.url = f"http://127.0.0.1:{self.server_port}"
        self.feeds: dict[str, list[Item]] = defaultdict(list)
        self.clients: dict[str, set[str]] = defaultdict(set)
        self.lock = threading.Lock()


class ApiHandler(BaseHTTPRequestHandler):
    server: FakeApi

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path.endswith("/clients"):
            return self.reply(sorted(self.server.clients[url.path.removesuffix("/clients")]))
        query = {key: values[0] for key, values in parse_qs(url.query).items()}
        after = cursor_order({"cursor": query["after"]}) if query.get("after") else ("", 0)
        with self.server.lock:
            items = [item for item in self.server.feeds[url.path] if cursor_order({"cursor": cursor(item)}) > after]
        self.reply({"items": items[: int(query["limit"])]})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.server.lock:
            feed = self.server.feeds[self.path]
            for new in body:
                id = len(feed) + 1
                updated_at = (START + timedelta(seconds=id // 3)).strftime("%Y-%m-%dT%H:%M:%SZ")
                feed.append({"id": id, "updated_at": updated_at, "type": new["type"], "data": new["data"]})
        self.reply(None)

    def do_PUT(self) -> None:
        feed, _, name = self.path.rpartition("/clients/")
        self.server.clients[feed].add(name)
        self.reply(None)

    def do_DELETE(self) -> None:
        feed, _, name = self.path.rpartition("/clients/")
        self.server.clients[feed].discard(name)
        self.reply(None)

    def reply(self, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # no line on stderr per request


API = FakeApi()
"""The API of this module's tests, served while they run (:func:`serve_api`)."""


@pytest.fixture(scope="module", autouse=True)
def serve_api() -> Iterator[None]:
    thread = threading.Thread(target=API.serve_forever, name="fake-api", daemon=True)
    thread.start()
    yield
    API.shutdown()
    API.server_close()
    thread.join()


def feed_url(name: str) -> str:
    """A feed of the API no other test uses."""
    return f"{API.url}/{name}/items"


# ---- the source ------------------------------------------------------------------------------------------------


def orders(*data: Any) -> list[Item]:
    """What ``POST`` takes to add orders carrying ``data``: items of a type the source copies."""
    return [{"type": "order", "data": value} for value in data]


REFUND = {"type": "refund", "data": {}}
"""An item of a type the source does not copy: it moves the source's position without data."""


def source_config(context: ConformanceContext) -> dict[str, Any]:
    return {"url": feed_url(context.tmp_path.name), "topic": context.topic, "poll.interval.ms": 100}


class TestPagedApiSource(SourceConformance):
    """The conformance suite as a subclass: ``read`` and ``offset_order`` are its to override, and the probes are
    methods."""

    connector = PagedApiSource
    config = staticmethod(source_config)
    offset_order = staticmethod(cursor_order)  # cursors compared as the API compares them
    batch_size_key = "batch.size"  # the crash test also runs with one and two records per poll
    bad_configs = (({"page.size": "0"}, "page.size"), ({"url": None}, "url"))

    def feed(self, config: Mapping[str, Any], count: int) -> list[Any]:
        values = [{"order": uuid.uuid4().hex} for _ in range(count)]
        call("POST", config["url"], orders(*values))
        return values  # what read() finds in the records

    def read(self, message: Any) -> Any:
        return json.loads(message.value)["data"]  # a record carries the whole item; the suite fed its data

    def advance_without_data(self, config: Mapping[str, Any]) -> None:
        call("POST", config["url"], [REFUND])

    def provisioned(self, config: Mapping[str, Any]) -> Any:
        return call("GET", f"{config['url']}/clients")  # the names registered on the feed


class PagedApiMachine(SourceMachine):
    """Random orders and refunds, time and faults; every order must arrive at least once."""

    connector = PagedApiSource
    offset_order = staticmethod(cursor_order)
    worker_config: ClassVar[Mapping[str, Any]] = {"offset.flush.interval.ms": 500, "heartbeat.interval.ms": 700}

    def setup(self) -> dict[str, Any]:
        self.url = feed_url(f"machine-{uuid.uuid4().hex}")
        return {"url": self.url, "topic": "items", "page.size": 3, "batch.size": 2, "poll.interval.ms": 100}

    def write(self, value: Any) -> None:
        call("POST", self.url, orders(value))

    def read(self, message: Any) -> Any:
        return json.loads(message.value)["data"]

    @rule()
    def refund(self) -> None:
        call("POST", self.url, [REFUND])


TestPagedApiMachine = machine_test(PagedApiMachine, max_examples=50)


def test_a_heartbeat_reports_only_what_was_handed_over(
    make_simulated_worker: Callable[..., SimulatedWorker], unique_name: str
) -> None:
    url = feed_url(unique_name)
    call("POST", url, [*orders({"n": 1}), REFUND, *orders({"n": 2}, {"n": 3})])  # fetched as one page
    worker = make_simulated_worker({"offset.flush.interval.ms": 10, "heartbeat.interval.ms": 10})
    worker.add_connector("items", PagedApiSource, {"url": url, "topic": "items", "batch.size": 1})
    for _ in range(10):  # one record handed over per poll; the rest wait in the task's buffer
        worker.advance(10)
        handed_over = [cursor_order({"cursor": cursor(item)}) for item in worker.values("items")]
        beats = [cursor_order(beat) for beat in worker.values("connect-heartbeats")]
        assert all(handed_over and beat <= handed_over[-1] for beat in beats), (beats, handed_over)
    assert [item["data"] for item in worker.values("items")] == [{"n": 1}, {"n": 2}, {"n": 3}]

    call("POST", url, [REFUND])  # the feed moves on without an order: the heartbeats commit its position
    worker.advance(1_000)
    worker.assert_source_offset("items", {"url": url}, {"cursor": cursor(fetch_page(url, "", 5)[-1])})


# ---- the sink --------------------------------------------------------------------------------------------------


def posted(config: Mapping[str, Any]) -> list[Any]:
    """The values the sink posted, read back from the API page by page: written, not just given to ``put``."""
    values, after = [], ""
    while page := fetch_page(config["url"], after, 100):
        values += [item["data"] for item in page]
        after = cursor(page[-1])
    return values


class TestPagedApiSink(SinkConformance):
    connector = PagedApiSink
    config = staticmethod(lambda context: {"url": feed_url(context.tmp_path.name)})
    bad_configs = (({"url": " "}, "url"),)

    def written(self, config: Mapping[str, Any]) -> list[Any]:
        return posted(config)
