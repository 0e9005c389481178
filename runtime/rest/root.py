"""``/`` and ``/health``: Kafka Connect's ``RootResource``, the worker's version and its health check (KIP-1017)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response

from headwater import release
from headwater.runtime.herder.base import Herder
from headwater.runtime.rest import schemas
from headwater.runtime.rest.errors import responses

HEALTH_PATH = "/health"
HEALTH_ERRORS = {
    503: "The worker is still starting",
    500: "The worker's herder does not answer, or its Kafka cluster has not answered for too long",
}
UNKNOWN_COMMIT = "unknown"
"""``commit`` where the installed Headwater does not tell its commit, as Kafka says when its own is not known."""


def root_router(herder: Herder, kafka_cluster_id: str | None, health_timeout_s: float) -> APIRouter:
    """The routes of ``/``; a health check waits up to ``health_timeout_s`` for the herder."""
    router = APIRouter(tags=["root"])

    @router.get("/", responses=responses(schemas.ServerInfo))
    def server_info() -> Response:
        """The worker's version and the commit it was built from, and the Kafka cluster it works with."""
        return JSONResponse(
            {
                "version": release.version(),
                "commit": release.commit() or UNKNOWN_COMMIT,
                "kafka_cluster_id": kafka_cluster_id,
            }
        )

    @router.get(
        HEALTH_PATH,
        responses=responses(schemas.WorkerStatus)
        | {code: {"model": schemas.WorkerStatus, "description": what} for code, what in HEALTH_ERRORS.items()},
    )
    def health() -> Response:
        """200 ``healthy`` once the worker has started and its herder answers; 503 ``starting`` while it starts;
        500 ``unhealthy`` when its herder does not answer within the deadline, or its Kafka cluster has not
        answered for longer than ``health.broker.unreachable.ms``. Served without authentication."""
        found = herder.health.check(herder.lock, health_timeout_s, herder.worker.reachability)
        return JSONResponse(found.body(), status_code=found.code)

    return router
