"""Request limits and the start-up warning: a body over ``rest.request.body.max.bytes`` is refused with 413, and
a listener reachable from other machines without TLS and authentication is logged as a warning."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

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
