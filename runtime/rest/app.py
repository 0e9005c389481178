"""The REST application: Kafka Connect's REST API over one herder (standalone or distributed), as an ASGI app
(FastAPI), with its OpenAPI spec served at ``/openapi.json`` and browsable at ``/docs``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response

from headwater import release
from headwater.runtime.config.listeners import ADMIN_LISTENERS
from headwater.runtime.herder.base import Herder
from headwater.runtime.herder.health import DEFAULT_TIMEOUT_S
from headwater.runtime.metrics import exposition, worker_registry
from headwater.runtime.rest.admin_loggers import loggers_router
from headwater.runtime.rest.connector_plugins import plugins_router
from headwater.runtime.rest.connectors import connectors_router
from headwater.runtime.rest.errors import install_error_handlers
from headwater.runtime.rest.requests import RequestShape
from headwater.runtime.rest.root import root_router


def create_app(
    herder: Herder, kafka_cluster_id: str | None = None, health_timeout_s: float = DEFAULT_TIMEOUT_S
) -> FastAPI:
    """The REST API of ``herder``'s worker; the worker's ``topic.tracking.enable`` and
    ``topic.tracking.allow.reset`` decide whether active topics may be listed and reset. ``GET /health`` waits up
    to ``health_timeout_s`` for the herder."""
    config: Mapping[str, Any] = herder.worker.config
    app = FastAPI(
        title="Headwater REST API",
        version=release.version(),
        description="Kafka Connect's REST API, served by a Headwater worker.",
        redirect_slashes=False,  # RequestShape strips trailing slashes: never a 307 that drops a body
    )
    install_error_handlers(app)
    app.add_middleware(RequestShape)
    app.include_router(root_router(herder, kafka_cluster_id, health_timeout_s))

    registry = worker_registry(herder.worker)

    @app.get("/metrics", tags=["metrics"], response_class=Response, responses={200: {"content": {"text/plain": {}}}})
    def metrics(request: Request) -> Response:
        """The worker's Prometheus metrics, in Prometheus's text format or OpenMetrics (see Metrics in the docs)."""
        body, content_type = exposition(registry, request.headers.get("accept"))
        return Response(body, media_type=content_type)

    tracking = bool(config["topic.tracking.enable"])
    app.include_router(connectors_router(herder, tracking, bool(config["topic.tracking.allow.reset"])))
    app.include_router(plugins_router(config, herder.worker.group_id is not None))
    if config.get(ADMIN_LISTENERS) != []:  # empty: the admin endpoints are disabled, as in Kafka Connect
        app.include_router(loggers_router(herder))
    return app
