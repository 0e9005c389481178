"""Request limits and the start-up warning: a body over ``rest.request.body.max.bytes`` is refused with 413, and
a listener reachable from other machines without TLS and authentication is logged as a warning."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.types import Message, Receive, Scope, Send

from headwater.runtime.rest.guard import RequestGuard
from support.secure_server import Certificates, serving

WARNING = "reachable from other machines"


def test_a_body_over_the_limit_is_refused_with_413() -> None:
    with serving(rest_request_body_max_bytes=200) as server:
        url = f"{server.url}/connectors"
        small = httpx.post(url, json={"name": "a", "config": {}})
        assert small.status_code not in (413, 500), small.text
        large = httpx.post(url, json={"name": "a", "config": {"x": "y" * 300}})
        assert large.status_code == 413, large.text
        assert "rest.request.body.max.bytes" in large.json()["message"]

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted while it arrives
            yield b'{"name": "a", "config": {"x": "'
            for _ in range(100):
                yield b"y" * 10
            yield b'"}}'

        chunked = httpx.post(url, content=chunks(), headers={"Content-Type": "application/json"})
        assert chunked.status_code == 413, chunked.text


def test_a_body_announced_over_the_limit_is_answered_before_it_is_sent_and_the_connection_closed() -> None:
    """A 20 MB ``Content-Length``: 413 at once, before a byte of the body is sent, and the server closes the
    connection instead of waiting to read the 20 MB."""
    with serving(rest_request_body_max_bytes=1000) as server:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as client:
            client.sendall(
                b"POST /connectors HTTP/1.1\r\nHost: worker\r\nContent-Type: application/json\r\n"
                b"Content-Length: 20000000\r\n\r\n"
            )
            answer = b""
            while chunk := client.recv(65536):  # ends (b"") only when the server closes the connection
                answer += chunk
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 413 "), answer
        assert b"connection: close" in head.lower()
        assert b"rest.request.body.max.bytes (1000)" in body


def test_a_chunked_body_is_read_only_up_to_the_limit() -> None:
    """An endless chunked body: the guard stops asking for more once the limit is passed and never calls the app."""
    limit, chunk = 10_000, b"x" * 1000
    received = 0
    sent: list[Message] = []

    async def endless() -> Message:
        nonlocal received
        received += 1
        return {"type": "http.request", "body": chunk, "more_body": True}

    async def record(message: Message) -> None:
        sent.append(message)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        raise AssertionError("the application was called")

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/connectors",
        "headers": [(b"content-type", b"application/json"), (b"transfer-encoding", b"chunked")],
    }
    asyncio.run(RequestGuard(app, None, limit)(scope, endless, record))
    assert received == limit // len(chunk) + 1
    assert sent[0]["status"] == 413
    assert (b"connection", b"close") in sent[0]["headers"]


def test_all_interfaces_without_tls_and_authentication_is_a_warning(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    with caplog.at_level(logging.WARNING, "headwater.runtime.rest"):
        with serving("127.0.0.1"):
            pass
        assert WARNING not in caplog.text
        with serving("0.0.0.0"):
            pass
        assert WARNING in caplog.text
        assert "without TLS or authentication" in caplog.text
        caplog.clear()
        certificates = Certificates(tmp_path)
        credentials = tmp_path / "credentials.properties"
        credentials.write_text("admin: s3cret\n", encoding="utf-8")
        props = certificates.https_props(
            listeners="https://0.0.0.0:0", rest_auth_basic_credentials_file=str(credentials)
        )
        with serving("0.0.0.0", **props):
            pass
        assert WARNING not in caplog.text
        with serving("0.0.0.0", **{**props, "rest.auth.basic.credentials.file": None}):
            pass
        assert "without authentication" in caplog.text
