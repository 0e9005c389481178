"""``/connectors``: Kafka Connect's ``ConnectorsResource`` over a herder, with its paths, bodies and
status codes. Handlers are plain functions, so the server runs them on worker threads and a slow herder call
(stopping tasks, say) never blocks the event loop."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Body, Query, Request
from fastapi.responses import JSONResponse, Response

from headwater.runtime.errors import BadRequestError, NotFoundError
from headwater.runtime.herder.base import Herder
from headwater.runtime.rest import schemas
from headwater.runtime.rest.errors import RestError, responses
from headwater.runtime.rest.views import connector_info, connector_status, string_config, task_infos, task_status
from headwater.runtime.tasks.base import TaskId

TRACKING_DISABLED = "Topic tracking is disabled."
RESET_DISABLED = "Topic tracking reset is disabled."


def _named(name: str, config: dict[str, str | None]) -> dict[str, str | None]:
    """The config with ``name`` set; a different ``name`` in the body is refused as Connect does."""
    included = config.get("name")
    if included is not None and included != name:
        raise BadRequestError(
            f"Connector name configuration ({included}) doesn't match connector name in the URL ({name})"
        )
    return {**config, "name": name}


def location(request: Request, name: str) -> dict[str, str]:
    """The ``Location`` header of a created connector: its absolute URI, as Jersey resolves Connect's
    ``/connectors/<name>`` against the request's base URI."""
    return {"Location": f"{str(request.base_url).rstrip('/')}/connectors/{quote(name, safe='')}"}


def connectors_router(herder: Herder, tracking: bool, allow_reset: bool) -> APIRouter:
    """The routes of ``/connectors``; ``tracking`` and ``allow_reset`` are the worker's ``topic.tracking.*``."""
    router = APIRouter(prefix="/connectors", tags=["connectors"])

    @router.get("", responses=responses(list[str] | dict[str, schemas.ConnectorExpansion]))
    def list_connectors(expand: Annotated[list[str] | None, Query()] = None) -> Response:
        """The connector names, or with ``?expand=status`` and/or ``?expand=info`` each one's status and info."""
        names = herder.connectors()
        if not expand:
            return JSONResponse(names)
        expanded: dict[str, dict[str, Any]] = {}
        for name in names:
            try:
                found: dict[str, Any] = {}
                if "status" in expand:
                    found["status"] = connector_status(herder, name)
                if "info" in expand:
                    found["info"] = connector_info(herder, name)
            except NotFoundError:  # deleted meanwhile, or no status yet: left out, as Connect does
                continue
            expanded[name] = found
        return JSONResponse(expanded)

    @router.post("", status_code=201, responses=responses(schemas.ConnectorInfo, 201, 400, 409))
    def create_connector(body: schemas.CreateConnectorRequest, request: Request) -> Response:
        """Create a connector; 409 when one of that name exists, 400 naming every bad key of an invalid config."""
        name = (body.name or "").strip()
        config = _named(name, string_config(body.config or {}))
        herder.put_connector_config(name, config, allow_replace=False, initial_state=body.initial_state or "RUNNING")
        return JSONResponse(connector_info(herder, name), status_code=201, headers=location(request, name))

    @router.get("/{connector}", responses=responses(schemas.ConnectorInfo, 200, 404))
    def get_connector(connector: str) -> Response:
        return JSONResponse(connector_info(herder, connector))

    @router.delete("/{connector}", status_code=204, responses=responses(None, 204, 404))
    def delete_connector(connector: str) -> Response:
        """Stop the tasks, then the connector (``connector_deleted=True``), reset its active topics and forget it;
        its offsets stay."""
        herder.delete_connector(connector)
        return Response(status_code=204)

    @router.get("/{connector}/config", responses=responses(dict[str, str], 200, 404))
    def get_config(connector: str) -> Response:
        return JSONResponse(connector_info(herder, connector)["config"])

    @router.put("/{connector}/config", responses=responses(schemas.ConnectorInfo, 200, 400) | responses(None, 201))
    def put_config(connector: str, config: Annotated[schemas.ConfigMap, Body()], request: Request) -> Response:
        """Create (201) or replace (200) the connector's config."""
        created = herder.put_connector_config(connector, _named(connector, string_config(config)))
        if not created:
            return JSONResponse(connector_info(herder, connector))
        return JSONResponse(connector_info(herder, connector), status_code=201, headers=location(request, connector))

    @router.patch("/{connector}/config", responses=responses(schemas.ConnectorInfo, 200, 400, 404))
    def patch_config(connector: str, patch: Annotated[schemas.ConfigMap, Body()]) -> Response:
        """Change some keys of the connector's config; a ``null`` value removes its key."""
        herder.patch_connector_config(connector, _named(connector, string_config(patch)))
        return JSONResponse(connector_info(herder, connector))

    @router.get("/{connector}/status", responses=responses(schemas.ConnectorStateInfo, 200, 404))
    def get_status(connector: str) -> Response:
        return JSONResponse(connector_status(herder, connector))

    @router.get("/{connector}/tasks", responses=responses(list[schemas.TaskInfo], 200, 404))
    def get_tasks(connector: str) -> Response:
        return JSONResponse(task_infos(herder, connector))

    @router.get("/{connector}/tasks/{task}/status", responses=responses(schemas.TaskState, 200, 404))
    def get_task_status(connector: str, task: int) -> Response:
        return JSONResponse(task_status(herder, connector, task))

    @router.post("/{connector}/tasks/{task}/restart", status_code=204, responses=responses(None, 204, 404))
    def restart_task(connector: str, task: int) -> Response:
        herder.restart_task(TaskId(connector, task))
        return Response(status_code=204)

    @router.post(
        "/{connector}/restart",
        status_code=204,
        responses=responses(None, 204, 404) | responses(schemas.ConnectorStateInfo, 202),
    )
    def restart_connector(
        connector: str,
        include_tasks: Annotated[bool, Query(alias="includeTasks")] = False,
        only_failed: Annotated[bool, Query(alias="onlyFailed")] = False,
    ) -> Response:
        """Both flags false: restart the connector instance only (204). Otherwise 202 with the status, in which
        whatever is restarted shows RESTARTING."""
        plan = herder.restart(connector, include_tasks, only_failed)
        if not include_tasks and not only_failed:
            return Response(status_code=204)
        return JSONResponse(connector_status(herder, connector, plan), status_code=202)

    @router.put("/{connector}/pause", status_code=202, responses=responses(None, 202, 404))
    def pause(connector: str) -> Response:
        herder.pause_connector(connector)
        return Response(status_code=202)

    @router.put("/{connector}/resume", status_code=202, responses=responses(None, 202, 404))
    def resume(connector: str) -> Response:
        herder.resume_connector(connector)
        return Response(status_code=202)

    @router.put("/{connector}/stop", status_code=204, responses=responses(None, 204, 404))
    def stop(connector: str) -> Response:
        herder.stop_connector(connector)
        return Response(status_code=204)

    @router.get("/{connector}/topics", responses=responses(dict[str, schemas.ActiveTopics], 200, 403))
    def get_topics(connector: str) -> Response:
        """The topics the connector used since it was created or its topics were reset (an empty list for an
        unknown connector)."""
        if not tracking:
            raise RestError(403, TRACKING_DISABLED)
        return JSONResponse({connector: {"topics": herder.active_topics.topics(connector)}})

    @router.put("/{connector}/topics/reset", status_code=202, responses=responses(None, 202, 403))
    def reset_topics(connector: str) -> Response:
        if not tracking:
            raise RestError(403, TRACKING_DISABLED)
        if not allow_reset:
            raise RestError(403, RESET_DISABLED)
        herder.reset_active_topics(connector)
        return Response(status_code=202)

    @router.get("/{connector}/offsets", responses=responses(schemas.ConnectorOffsets, 200, 404))
    def get_offsets(connector: str) -> Response:
        return JSONResponse({"offsets": herder.connector_offsets(connector)})

    @router.patch("/{connector}/offsets", responses=responses(schemas.Message, 200, 400, 404))
    def alter_offsets(connector: str, request: schemas.ConnectorOffsets) -> Response:
        """Alter the offsets of a STOPPED connector; a ``null`` offset deletes the partition's."""
        offsets = [entry.model_dump() for entry in request.offsets or []]
        return JSONResponse({"message": herder.alter_connector_offsets(connector, offsets)})

    @router.delete("/{connector}/offsets", responses=responses(schemas.Message, 200, 400, 404))
    def reset_offsets(connector: str) -> Response:
        """Delete every offset of a STOPPED connector."""
        return JSONResponse({"message": herder.reset_connector_offsets(connector)})

    return router
