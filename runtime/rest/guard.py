"""The REST server's gate, in front of the application: every request is authenticated (when an authenticator is
configured) and its body bounded (``rest.request.body.max.bytes``) before the application sees it."""

from __future__ import annotations

import logging
from collections.abc import Collection

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from headwater.runtime.rest.auth import CLIENT_CERTIFICATE, Authenticator, takes_client_certificate
from headwater.runtime.rest.client_certificate import ClientCertificate
from headwater.runtime.rest.errors import error_response
from headwater.runtime.rest.requests import route_path
from headwater.runtime.rest.root import HEALTH_PATH

log = logging.getLogger(__name__)

UNAUTHENTICATED_PATHS: frozenset[str] = frozenset({HEALTH_PATH})
"""Paths served without authentication (with or without a trailing slash): the health check, which a load balancer
or an orchestrator's probe calls (KIP-1017)."""

CLOSE = [(b"connection", b"close")]
"""Sent with a 413: the server closes the connection (RFC 9110, 15.5.14: it "MAY close the connection") instead of
reading the rest of the body to keep the connection alive, so a body sent anyway is cut off, never read to its end."""


class RequestGuard:
    """ASGI middleware: HTTP 401 for a request ``authenticator`` refuses, HTTP 413 for a body over ``max_body_bytes``
    (told by its ``Content-Length``, or counted while a chunked body arrives, never holding more than the limit),
    and the connection closed after a 413 so that the rest of the body is never read."""

    def __init__(
        self,
        app: ASGIApp,
        authenticator: Authenticator | None,
        max_body_bytes: int,
        unauthenticated_paths: Collection[str] = UNAUTHENTICATED_PATHS,
    ) -> None:
        self.app = app
        self.authenticator = authenticator
        self.max_body_bytes = max_body_bytes
        self.unauthenticated_paths = unauthenticated_paths
        self._pass_certificate = authenticator is not None and takes_client_certificate(authenticator)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
        if self.authenticator is not None and self._refuses(self.authenticator, scope, headers):
            # debug, as Kafka Connect logs it: a mistyped password must not fill the log
            log.debug("REST request %s %s refused: not authenticated", scope["method"], scope["path"])
            challenge = [(b"www-authenticate", self.authenticator.challenge().encode("latin-1"))]
            await _error(scope, send, 401, "User cannot access the resource.", challenge)
            return
        length = headers.get("content-length")
        if length is not None and length.isdecimal() and int(length) > self.max_body_bytes:
            await _error(scope, send, 413, self._too_large(), CLOSE)
            return
        if length is None and headers.get("transfer-encoding", "").lower() == "chunked":
            body = await self._bounded_body(receive)
            if body is None:
                await _error(scope, send, 413, self._too_large(), CLOSE)
                return
            receive = _replay(body, receive)
        await self.app(scope, receive, send)

    def _refuses(self, authenticator: Authenticator, scope: Scope, headers: dict[str, str]) -> bool:
        if route_path(scope["path"]) in self.unauthenticated_paths:
            return False
        extra = {CLIENT_CERTIFICATE: ClientCertificate.from_scope(scope)} if self._pass_certificate else {}
        return authenticator.authenticate(scope["method"], scope["path"], headers, **extra) is None

    def _too_large(self) -> str:
        return f"Request body larger than rest.request.body.max.bytes ({self.max_body_bytes})"

    async def _bounded_body(self, receive: Receive) -> bytes | None:
        """The whole body, or None as soon as it passes the limit."""
        parts: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return b"".join(parts)
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                return None
            parts.append(chunk)
            if not message.get("more_body", False):
                return b"".join(parts)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


async def _error(
    scope: Scope, send: Send, status: int, message: str, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    """A response in the REST API's error shape, ``{"error_code": ..., "message": ...}``."""
    response = error_response(status, message)
    response.raw_headers.extend(headers or [])
    await response(scope, _no_body, send)


async def _no_body() -> Message:
    return {"type": "http.disconnect"}
