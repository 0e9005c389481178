"""Validating a connector config key by key, reported in Kafka Connect's ``ConfigInfos`` shape (what
``PUT /connector-plugins/{plugin}/config/validate`` answers):

.. code-block:: json

    {"name": "<connector.class>", "error_count": 0, "groups": [],
     "configs": [{"definition": {"name", "type", "required", "default_value", "importance", "documentation",
                                 "group", "order_in_group", "width", "display_name",
                                 "dependents"},
                  "value": {"name", "value", "recommended_values", "errors", "visible"}}]}

The keys are the runtime's common keys for the connector's kind followed by the connector's own; each error message
names its key. A connector that overrides ``validate`` is asked too, and what it raises is added to its key, unless
the config sets a client setting the worker does not let connectors set
(:mod:`~headwater.runtime.config.override_policy`):
a connector may make clients from its config to check it. A key Headwater does not implement yet, a refused client
setting, and a key nothing recognises (:mod:`~headwater.runtime.config.known_keys`), is reported without a definition,
with its error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from headwater.runtime.config import exactly_once_support, sink_topics, topic_creation
from headwater.runtime.config.connector import CONNECTOR_CONFIG, connector_config_def
from headwater.runtime.config.known_keys import UNKNOWN_KEYS, converter_errors, refused_keys, unknown_keys
from headwater.runtime.config.override_policy import client_refusals
from headwater.runtime.config.secrets import HIDDEN, hide, scrub, secret_values
from headwater.runtime.config.transform_keys import PREDICATES, TRANSFORMS
from headwater.runtime.config.worker import WORKER_CONFIG
from headwater.runtime.errors import InvalidConfigError
from headwater.runtime.plugins import ALLOWED_MODULES, resolve_connector_class
from headwater.runtime.transforms.stages import chain_definition, chain_errors
from headwater.sdk.config import ConfigDef, ConfigKey, Type
from headwater.sdk.connector import Connector, SinkConnector, SourceConnector
from headwater.sdk.errors import ConfigError

ConfigInfos = dict[str, Any]
"""Kafka Connect's ``ConfigInfos`` as JSON-ready data."""

NULL_VALUE = "Null value can not be supplied as the configuration value."
DEFAULT_WORKER_CONFIG = WORKER_CONFIG.parse({})


def validate_connector_config(
    props: Mapping[str, Any], worker_config: Mapping[str, Any] | None = None, distributed: bool = False
) -> ConfigInfos:
    """Every defined key of the connector's config with its value and errors, then every other key with errors.
    A missing or unknown ``connector.class`` is an error on that key, reported against the runtime's common keys
    only. ``worker_config`` is the worker's parsed config (its defaults when ``None``); ``distributed`` says whether
    the worker is a distributed one (some keys take effect there only)."""
    definition, errors, _ = _errors(props, worker_config, distributed)
    props = hide(props)
    orders = orders_in_group(definition)
    configs = [_config_info(key, props, errors.get(key.name, []), orders[key.name]) for key in definition]
    undefined = [name for name in errors if name not in definition.keys]
    configs += [_undefined_info(name, props, errors[name]) for name in undefined]
    groups = list(dict.fromkeys(key.group for key in definition if key.group))
    return {
        "name": str(props.get("connector.class") or ""),
        "error_count": sum(len(messages) for messages in errors.values()),
        "groups": groups,
        "configs": configs,
    }


def check_connector_config(
    props: Mapping[str, Any], worker_config: Mapping[str, Any], distributed: bool = False
) -> dict[str, str]:
    """Raise :class:`InvalidConfigError` naming every bad key when the config is not valid: a bad value, a key
    Headwater does not implement yet, a client setting the worker does not let connectors set
    (:mod:`~headwater.runtime.config.override_policy`, :mod:`~headwater.runtime.config.unsafe_settings`), or an unknown
    key when
    the worker's ``connector.unknown.keys`` is ``error``. Otherwise return the unknown keys' warnings by key, for
    the caller to log. ``worker_config`` is the worker's parsed config, ``distributed`` whether the worker is a
    distributed one. Every herder and the standalone worker's
    connector files are checked here."""
    _, errors, unknown = _errors(props, worker_config, distributed)
    if worker_config[UNKNOWN_KEYS] != "error":
        errors = {key: [m for m in found if m != unknown.get(key)] for key, found in errors.items()}
        errors = {key: found for key, found in errors.items() if found}
    if errors:
        raise InvalidConfigError(errors)
    return unknown


CHAIN_PREFIXES = (f"{TRANSFORMS}.", f"{PREDICATES}.")


def _errors(
    props: Mapping[str, Any], worker_config: Mapping[str, Any] | None, distributed: bool
) -> tuple[ConfigDef, dict[str, list[str]], dict[str, str]]:
    """The config's definition, its error messages by key (only keys with errors) and, among them, the message of
    each unknown key."""
    worker = DEFAULT_WORKER_CONFIG if worker_config is None else worker_config
    spec = props.get("connector.class")
    if not spec:
        errors = CONNECTOR_CONFIG.errors(props)
        return CONNECTOR_CONFIG, _scrubbed(_with_refusals(errors, props, None, worker), props), {}
    try:
        cls = resolve_connector_class(spec, allowed_modules=worker[ALLOWED_MODULES])
        probe = _made(cls, spec)
        chain = chain_definition(props, worker[ALLOWED_MODULES])
        definition = connector_config_def(probe, props).merge(chain)
    except ConfigError as error:
        errors = CONNECTOR_CONFIG.errors(props)
        errors["connector.class"] = [str(error)]
        return CONNECTOR_CONFIG, _scrubbed(_with_refusals(errors, props, None, worker), props), {}
    kind = "sink" if isinstance(probe, SinkConnector) else "source"
    errors = definition.errors(props)
    # a connector may make clients from its config to check it (the mirror does): never with a refused setting
    if type(probe).validate is not Connector.validate and not client_refusals(props, worker):
        try:
            probe.validate(props)
        except ConfigError as error:
            found = errors.setdefault(error.key, [])
            if str(error) not in found:
                found.append(str(error))
        except Exception as error:
            errors.setdefault("connector.class", []).append(f"Connector validation failed: {error}")
    if not any(key in (TRANSFORMS, PREDICATES) or key.startswith(CHAIN_PREFIXES) for key in errors):
        for key, messages in chain_errors(props, worker[ALLOWED_MODULES]).items():  # what only configuring them shows
            errors.setdefault(key, []).extend(messages)
    if kind == "source":
        for key, message in topic_creation.problems(props, bool(worker[topic_creation.ENABLE])).items():
            errors.setdefault(key, []).append(message)
        if isinstance(probe, SourceConnector):
            for key, messages in exactly_once_support.problems(props, probe, worker, errors, distributed).items():
                errors.setdefault(key, []).extend(messages)
    else:
        for key, messages in sink_topics.problems(props).items():
            errors.setdefault(key, []).extend(m for m in messages if m not in errors.get(key, []))
    unknown = unknown_connector_keys(props, probe, worker, chain)
    for key, message in unknown.items():
        errors.setdefault(key, []).append(message)
    return definition, _scrubbed(_with_refusals(errors, props, kind, worker), props), unknown


def unknown_connector_keys(
    props: Mapping[str, Any], connector: Connector, worker_config: Mapping[str, Any], chain: ConfigDef | None = None
) -> dict[str, str]:
    """The keys of ``props``, a config of ``connector``, that nothing recognises (the connector's keys, the runtime's
    and those of its transforms, ``chain`` when already made), each with its message
    (:func:`~headwater.runtime.config.known_keys.unknown_keys`)."""
    if chain is None:
        chain = chain_definition(props, worker_config.get(ALLOWED_MODULES))
    return unknown_keys(props, connector, connector_config_def(connector).merge(chain), worker_config)


def _scrubbed(errors: dict[str, list[str]], props: Mapping[str, Any]) -> dict[str, list[str]]:
    """The error messages with the config's secret values hidden (a ``ConfigError`` quotes the bad value)."""
    values = secret_values([props])
    return {key: [scrub(message, values) for message in found] for key, found in errors.items()}


def _made(cls: type[Connector], spec: Any) -> Connector:
    """An instance of the connector class, only to ask it for its definition; one that cannot be made (its
    constructor or ``config_def`` raises) is an error on ``connector.class``."""
    try:
        probe = cls()
        probe.config_def()
    except Exception as error:
        reason = f"Cannot create the connector: {type(error).__name__}: {error}"
        raise ConfigError("connector.class", spec, reason) from None
    return probe


def _with_refusals(
    errors: dict[str, list[str]], props: Mapping[str, Any], kind: str | None, worker_config: Mapping[str, Any]
) -> dict[str, list[str]]:
    """The errors with the keys refused whatever the connector: keys Headwater does not implement yet, converters
    that cannot be loaded or whose module the worker does not allow, client overrides the worker's policy does not
    allow, and client settings that load code or read local files."""
    for found in (refused_keys(props, kind), converter_errors(props, worker_config)):
        for key, message in found.items():
            errors.setdefault(key, []).append(message)
    for key, messages in client_refusals(props, worker_config).items():
        errors.setdefault(key, []).extend(messages)
    return _with_nulls(errors, props)


def _with_nulls(errors: dict[str, list[str]], props: Mapping[str, Any]) -> dict[str, list[str]]:
    for name, value in props.items():
        if value is None and NULL_VALUE not in errors.get(name, []):
            errors.setdefault(name, []).append(NULL_VALUE)
    return errors


def orders_in_group(keys: Iterable[ConfigKey]) -> dict[str, int]:
    """Each key's place in its group, from 1 in definition order, as Kafka Connect's definitions number them; -1
    for a key in no group (Kafka's default)."""
    counts: dict[str, int] = {}
    found: dict[str, int] = {}
    for key in keys:
        if key.group:
            counts[key.group] = counts.get(key.group, 0) + 1
        found[key.name] = counts[key.group] if key.group else -1
    return found


def config_key_info(key: ConfigKey, order_in_group: int = -1) -> dict[str, Any]:
    """A key's definition in Kafka Connect's ``ConfigKeyInfo`` shape."""
    return {
        "name": key.name,
        "type": key.type.value,
        "required": key.required,
        "default_value": None if key.required or key.default is None else config_string(key.default),
        "importance": key.importance.value,
        "documentation": key.documentation,
        "group": key.group,
        "order_in_group": order_in_group,
        "width": "NONE",
        "display_name": key.display_name or key.name,
        "dependents": [],
    }


def _config_info(key: ConfigKey, props: Mapping[str, Any], errors: list[str], order: int) -> dict[str, Any]:
    definition = config_key_info(key, order)
    raw = props.get(key.name)
    shown = None if raw is None else HIDDEN if key.type is Type.PASSWORD else config_string(raw)
    return {"definition": definition, "value": _value_info(key.name, shown, errors)}


def _undefined_info(name: str, props: Mapping[str, Any], errors: list[str]) -> dict[str, Any]:
    """A key the connector does not define that has errors (a null value): Connect reports it without a
    definition."""
    raw = props.get(name)
    return {"definition": None, "value": _value_info(name, None if raw is None else config_string(raw), errors)}


def _value_info(name: str, value: str | None, errors: list[str]) -> dict[str, Any]:
    return {"name": name, "value": value, "recommended_values": [], "errors": list(errors), "visible": True}


def config_string(value: Any) -> str:
    """A config value as Kafka Connect writes it in a string map: lists comma-separated, booleans lower-case."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(config_string(item) for item in value)
    return str(value)
