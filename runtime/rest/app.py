"""The REST application: Kafka Connect's REST API over one herder (standalone or distributed), as an ASGI app
(FastAPI), with its OpenAPI spec served at ``/openapi.json`` and browsable at ``/docs``."""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from headwater.runtime.herder.base import Herder
from headwater.runtime.metrics import exposition, worker_registry
from headwater.runtime.rest import schemas
from headwater.runtime.rest.connectors import connectors_router
from headwater.runtime.rest.errors import install_error_handlers, responses
from headwater.runtime.rest.plugins import plugins_router


def headwater_version() -> str:
    try:
        return version("headwater")
    except PackageNotFoundError:
        return "unknown"


def create_app(herder: Herder, kafka_cluster_id: str | None = None) -> FastAPI:
    """The REST API of ``herder``'s worker; the worker's ``topic.tracking.enable`` and
    ``topic.tracking.allow.reset`` decide whether active topics may be listed and reset."""
    config: Mapping[str, Any] = herder.worker.config
    app = FastAPI(
        title="Headwater REST API",
        version=headwater_version(),
        description="Kafka Connect's REST API, served by a Headwater worker.",
    )
    install_error_handlers(app)

    @app.get("/", tags=["root"], responses=responses(schemas.ServerInfo))
    def server_info() -> Response:
        """The worker's version and the Kafka cluster it works with."""
        return JSONResponse({"version": headwater_version(), "commit": "unknown", "kafka_cluster_id": kafka_cluster_id})

    registry = worker_registry(herder.worker)

    @app.get("/metrics", tags=["metrics"], response_class=Response, responses={200: {"content": {"text/plain": {}}}})
    def metrics(request: Request) -> Response:
        """The worker's Prometheus metrics, in Prometheus's text format or OpenMetrics (see Metrics in the docs)."""
        body, content_type = exposition(registry, request.headers.get("accept"))
        return Response(body, media_type=content_type)

    tracking = bool(config["topic.tracking.enable"])
    app.include_router(connectors_router(herder, tracking, bool(config["topic.tracking.allow.reset"])))
    app.include_router(plugins_router(config))
    return app
