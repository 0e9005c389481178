"""``/connector-plugins``: the installed connectors (entry-point group ``headwater.connectors``) and, with
``connectorsOnly=false``, the transformations, predicates and converters; each one's config keys, and validating a
config against a connector (Kafka Connect's ``ConnectorPluginsResource``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from fastapi import APIRouter, Body, Query
from fastapi.responses import JSONResponse, Response

from headwater.runtime.errors import BadRequestError, NotFoundError
from headwater.runtime.herder.validation import config_key_info, orders_in_group, validate_connector_config
from headwater.runtime.plugin_catalog import find_plugin, plugin_descs
from headwater.runtime.plugins import ALLOWED_MODULES, connector_type, installed_connectors, resolve_connector_class
from headwater.runtime.rest import schemas
from headwater.runtime.rest.errors import responses
from headwater.runtime.rest.views import string_config
from headwater.sdk.connector import Connector
from headwater.sdk.errors import ConfigError


def class_name(cls: type[Connector]) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def plugin_infos() -> list[dict[str, Any]]:
    """``[{"class", "type", "version"}]`` of every installed connector, by class name."""
    found = []
    for cls in {*installed_connectors().values()}:
        try:
            version = cls().version()
        except Exception:
            version = None
        info: dict[str, Any] = {"class": class_name(cls), "type": connector_type(cls)}
        if version is not None:
            info["version"] = version
        found.append(info)
    return sorted(found, key=lambda info: str(info["class"]))


def _same_plugin(included: str, plugin: str, allowed: list[str]) -> bool:
    """Whether two ``connector.class`` spellings (entry-point name, class name, import path) name one class;
    ``allowed`` is the worker's ``connector.class.allowed.modules``."""
    if included == plugin:
        return True
    try:
        found = resolve_connector_class(included, allowed_modules=allowed)
        return found is resolve_connector_class(plugin, allowed_modules=allowed)
    except ConfigError:
        return False


LATEST = "latest"


def _check_version(plugin: str, wanted: str, installed: str | None) -> None:
    """Kafka Connect 4 takes a plugin version (KIP-891); one version of each plugin is installed here, so anything
    but ``latest`` or that version is refused naming the installed one."""
    if wanted.strip() not in (LATEST, installed):
        raise BadRequestError(
            f"Plugin {plugin} has no version {wanted!r}: the installed version is {installed or 'unknown'} "
            f"(a version range is not supported)"
        )


def plugins_router(worker_config: Mapping[str, Any], distributed: bool = False) -> APIRouter:
    """The routes of ``/connector-plugins``; ``worker_config`` is the worker's parsed config (its converters are a
    connector's unless it names its own), ``distributed`` whether the worker is a distributed one."""
    router = APIRouter(prefix="/connector-plugins", tags=["connector-plugins"])
    allowed = list(worker_config[ALLOWED_MODULES])

    @router.get("", responses=responses(list[schemas.PluginInfo]))
    def list_plugins(connectors_only: Annotated[bool, Query(alias="connectorsOnly")] = True) -> Response:
        """The installed connectors; with ``connectorsOnly=false`` then the transformations, predicates,
        converters and header converters (types ``transformation``, ``predicate``, ``converter``,
        ``header_converter``)."""
        others = [] if connectors_only else [desc.info() for desc in plugin_descs()]
        return JSONResponse([*plugin_infos(), *others])

    @router.get("/{plugin}/config", responses=responses(list[schemas.ConfigKeyInfo], 200, 400, 404))
    def plugin_config(
        plugin: str,
        version: Annotated[str, Query(description="The installed version, or latest (one is installed)")] = LATEST,
    ) -> Response:
        """The plugin's own config keys: a connector's, or a transformation's, predicate's or converter's."""
        try:
            cls = resolve_connector_class(plugin, allowed_modules=allowed)
        except ConfigError as error:
            other = find_plugin(plugin, allowed)
            if other is None:
                raise NotFoundError(f"Unknown plugin {plugin}: {error.reason}") from None
            _check_version(plugin, version, other.version)
            keys = list(other.config_def())
            orders = orders_in_group(keys)
            return JSONResponse([config_key_info(key, orders[key.name]) for key in keys])
        connector = cls()
        _check_version(plugin, version, connector.version())
        infos = validate_connector_config({"connector.class": plugin}, worker_config, distributed)["configs"]
        own = connector.config_def().keys
        return JSONResponse([info["definition"] for info in infos if info["definition"]["name"] in own])

    @router.put("/{plugin}/config/validate", responses=responses(schemas.ConfigInfos, 200, 400))
    def validate(plugin: str, config: Annotated[schemas.ConfigMap, Body()]) -> Response:
        """Validate a connector config key by key; the body's ``connector.class`` (filled in from the path when
        missing) must name the path's plugin."""
        props = string_config(config)
        included = props.get("connector.class")
        if included is not None and not _same_plugin(included, plugin, allowed):
            raise BadRequestError(f"Included connector type {included} does not match request type {plugin}")
        config = {**props, "connector.class": included or plugin}
        return JSONResponse(validate_connector_config(config, worker_config, distributed))

    return router
