"""``/admin/loggers``: Kafka Connect's ``LoggingResource``, the levels of the worker's loggers read and changed at
run time (KIP-495), on this worker or on every worker of the cluster (``?scope=cluster``, KIP-976)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Query
from fastapi.responses import JSONResponse, Response

from headwater.runtime.errors import BadRequestError, NotFoundError
from headwater.runtime.herder.base import Herder
from headwater.runtime.logs.loggers import parse_level
from headwater.runtime.rest import schemas
from headwater.runtime.rest.errors import responses

WORKER_SCOPE = "worker"
CLUSTER_SCOPE = "cluster"


def loggers_router(herder: Herder) -> APIRouter:
    """The routes of ``/admin/loggers`` over ``herder``'s :class:`~headwater.runtime.logs.loggers.Loggers`."""
    router = APIRouter(prefix="/admin/loggers", tags=["admin"])

    @router.get("", responses=responses(dict[str, schemas.LoggerLevel]))
    def list_loggers() -> Response:
        """Every logger with a level of its own, and ``root``: ``{"<logger>": {"level", "last_modified"}}``."""
        return JSONResponse(herder.loggers.all_levels())

    @router.get("/{logger}", responses=responses(schemas.LoggerLevel, 200, 404))
    def get_logger(logger: str) -> Response:
        """The logger's level (its effective one when it has none of its own); 404 when there is no such logger."""
        found = herder.loggers.level(logger)
        if found is None:
            raise NotFoundError(f"Logger {logger} not found.")
        return JSONResponse(found)

    @router.put("/{logger}", responses=responses(list[str], 200, 400) | responses(None, 204))
    def set_level(
        logger: str,
        body: Annotated[dict[str, Any], Body()],
        scope: Annotated[str, Query(description="worker (default): this worker; cluster: every worker")] = "worker",
    ) -> Response:
        """Set the level (TRACE, DEBUG, INFO, WARN, ERROR, FATAL or OFF) of the logger and every logger below it.
        ``scope=worker``: on this worker, 200 with the loggers it covers; ``scope=cluster``: on every worker, 204."""
        level = body.get("level")
        if level is None:
            raise BadRequestError("Desired 'level' parameter was not specified in request.")
        if not isinstance(level, str):
            raise BadRequestError(f"The 'level' parameter must be a string, got {level!r}")
        parse_level(level)
        chosen = scope.strip().lower()
        if chosen == WORKER_SCOPE:
            return JSONResponse(herder.loggers.set_level(logger, level))
        if chosen == CLUSTER_SCOPE:
            herder.set_cluster_logger_level(logger, level)
            return Response(status_code=204)
        raise BadRequestError(f"Unknown scope {scope!r}: expected {WORKER_SCOPE} or {CLUSTER_SCOPE}")

    return router
