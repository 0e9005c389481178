"""What every request must look like before a route sees it, as Kafka Connect's Jersey resources take it: a path
with a trailing slash is the same resource as without it (``/connectors/`` is ``/connectors``, never a redirect),
and a request with a body must send it as JSON (``@Consumes(MediaType.APPLICATION_JSON)``), else 415."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from headwater.runtime.rest.errors import error_response

JSON = "application/json"


def route_path(path: str) -> str:
    """``path`` without its trailing slashes (``/`` stays ``/``)."""
    return path.rstrip("/") or "/"


def has_body(headers: dict[str, str]) -> bool:
    length = headers.get("content-length")
    if length is not None:
        return length.strip() not in ("", "0")
    return "transfer-encoding" in headers


def media_type(content_type: str) -> str:
    """The media type of a ``Content-Type`` header, without parameters, in lower case."""
    return content_type.partition(";")[0].strip().lower()


class RequestShape:
    """ASGI middleware: strips a trailing slash from the path; answers 415 for a body that is not JSON."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = route_path(scope["path"])
        if path != scope["path"]:
            scope = {**scope, "path": path, "raw_path": path.encode("latin-1", "replace")}
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
        if has_body(headers):
            given = headers.get("content-type")
            if given is None or media_type(given) != JSON:
                shown = "no Content-Type" if given is None else f"Content-Type {given!r}"
                message = f"Unsupported media type: a request body must be {JSON}, got {shown}"
                await error_response(415, message)(scope, receive, send)
                return
        await self.app(scope, receive, send)
