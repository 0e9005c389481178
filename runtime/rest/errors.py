"""Every failed request is answered ``{"error_code": <status>, "message": "..."}`` with Kafka Connect's status
codes: unknown connector 404, duplicate 409, invalid config or request 400, anything else 500."""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from headwater.runtime.errors import AlreadyExistsError, BadRequestError, NotFoundError
from headwater.runtime.rest.schemas import ErrorMessage
from headwater.sdk.errors import ConfigError, ConnectError

log = logging.getLogger(__name__)


class RestError(Exception):
    """A request answered with ``status`` and ``message`` (a 403 for disabled topic tracking, say)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


STATUS_OF: list[tuple[type[Exception], int]] = [
    (NotFoundError, 404),
    (AlreadyExistsError, 409),
    (BadRequestError, 400),
    (ConfigError, 400),
]

ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorMessage, "description": HTTPStatus(code).phrase} for code in (400, 403, 404, 409, 500)
}


def responses(model: Any, code: int = 200, *errors: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI responses: ``model`` for ``code`` (no body when ``None``) and the error body for ``errors``."""
    documented: dict[int | str, dict[str, Any]] = {code: {"description": "Success"}}
    if model is not None:
        documented[code]["model"] = model
    documented.update({status: ERROR_RESPONSES[status] for status in errors})
    return documented


def error_response(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error_code": status, "message": message}, status_code=status)


def _status_line(status: int) -> str:
    """Jersey's message for a request no resource answers: ``HTTP 404 Not Found``."""
    try:
        return f"HTTP {status} {HTTPStatus(status).phrase}"
    except ValueError:
        return f"HTTP {status}"


def install_error_handlers(app: FastAPI) -> None:
    """Answer every error with the error body, including unknown paths, wrong methods and unparsable requests."""

    async def rest_error(request: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, RestError)
        return error_response(error.status, error.message)

    async def connect_error(request: Request, error: Exception) -> JSONResponse:
        for cls, status in STATUS_OF:
            if isinstance(error, cls):
                return error_response(status, str(error))
        log.error("request %s %s failed: %s", request.method, request.url.path, error, exc_info=error)
        return error_response(500, str(error) or type(error).__name__)

    async def http_error(request: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, HTTPException)
        return error_response(error.status_code, _status_line(error.status_code))

    async def invalid_request(request: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, RequestValidationError)
        problems = list(error.errors())
        if any(problem.get("loc", ("",))[0] == "path" for problem in problems):
            return error_response(404, _status_line(404))
        described = "; ".join(_describe(problem) for problem in problems)
        return error_response(400, f"Invalid request: {described}")

    app.add_exception_handler(RestError, rest_error)
    app.add_exception_handler(ConnectError, connect_error)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(RequestValidationError, invalid_request)
    app.add_middleware(CatchAll)


def _describe(problem: Any) -> str:
    where = ".".join(str(part) for part in problem.get("loc", ()) if part != "body")
    return f"{where or 'body'}: {problem.get('msg', 'invalid')}"


class CatchAll:
    """Answers an unexpected exception with a 500 error body (Connect's ``ConnectExceptionMapper``) instead of
    Starlette's plain-text page, and logs it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as error:
            log.error("request %s %s failed", scope.get("method"), scope.get("path"), exc_info=error)
            if started:
                raise
            await error_response(500, str(error) or type(error).__name__)(scope, receive, send)
