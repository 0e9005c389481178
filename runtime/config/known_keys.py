"""No key of a connector config is ignored in silence: each is recognised, refused because Headwater does not
implement it yet, or reported as unknown (a typo, or a key of some other runtime).

A key is recognised when the connector's full definition (the runtime's keys for its kind and the connector's own)
defines it or a prefix declared there (:meth:`~headwater.sdk.ConfigDef.define_prefix`) covers it; when it is a
client override the worker gives the connector's tasks (:data:`~headwater.runtime.config.clients.CONNECTOR_CLIENTS`);
or when it is a setting of the connector's key, value or header converter (``value.converter.schemas.enable``)
that the converter's ``CONFIG`` defines (any setting, for a converter without a ``CONFIG``).

Kafka Connect's own connector keys that Headwater does not implement yet (:data:`NOT_IMPLEMENTED`) are refused
whatever the worker's ``connector.unknown.keys`` says; a blank value asks for nothing and is accepted.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from headwater.runtime.config.clients import CONNECTOR_CLIENTS, override_prefix
from headwater.runtime.config.connector import SINK_CONNECTOR_CONFIG, SOURCE_CONNECTOR_CONFIG
from headwater.runtime.config.worker import WORKER_CONFIG
from headwater.runtime.converters import converter_class, converter_settings
from headwater.runtime.plugins import ALLOWED_MODULES
from headwater.sdk.config import ConfigDef
from headwater.sdk.connector import Connector, SinkConnector
from headwater.sdk.errors import ConfigError

UNKNOWN_KEYS = "connector.unknown.keys"
"""The worker key that says what an unknown connector key does: ``warn`` or ``error``."""

CONVERTERS = ("key.converter", "value.converter", "header.converter")
CLIENTS = ("producer", "consumer", "admin")
SOURCE, SINK = ("source",), ("sink",)


@dataclass(frozen=True)
class Unimplemented:
    """A Kafka Connect connector key (or every key under a prefix) that Headwater does not implement yet."""

    key: str
    """The key, or the prefix when :attr:`prefix`."""
    reason: str
    """Why it is refused ("Headwater does not implement ... yet")."""
    advice: str
    """What to do instead."""
    prefix: bool = False
    kinds: tuple[str, ...] = ("source", "sink")
    """The connector kinds the refusal applies to (Kafka Connect defines some keys for one kind only)."""
    harmless: tuple[str, ...] = ()
    """Values (besides a blank one) that ask for what Headwater does anyway."""

    def matches(self, name: str, kind: str | None) -> bool:
        """Whether ``name`` is this key (or under this prefix) in a config of a connector of ``kind`` (``None``:
        not known, when only the keys of both kinds match)."""
        matched = name.startswith(self.key) if self.prefix else name == self.key
        return matched and (kind in self.kinds if kind is not None else self.kinds == ("source", "sink"))

    def refuses(self, name: str, value: Any, kind: str | None) -> bool:
        """Whether this refuses key ``name`` set to ``value``: a blank or harmless value is accepted."""
        text = "" if value is None else str(value).strip().lower()
        return self.matches(name, kind) and text != "" and text not in self.harmless

    def message(self, name: str) -> str:
        return f"{name}: {self.reason}; {self.advice}"


_NOT_YET = "Headwater does not implement {} yet"
_PLUGIN_VERSIONS = _NOT_YET.format("plugin versions (KIP-891)") + ": one version of each plugin is installed"

NOT_IMPLEMENTED: tuple[Unimplemented, ...] = (
    Unimplemented(
        "config.action.reload",
        _NOT_YET.format("reloading a config provider's values when they expire")
        + ": a connector sees new values when it restarts",
        "remove the key (or set it to none)",
        harmless=("none",),
    ),
    Unimplemented(
        "tasks.max.enforce",
        _NOT_YET.format("tasks.max.enforce=false") + ": a connector returning more task configs than tasks.max fails",
        "remove the key",
        harmless=("true",),
    ),
    *(
        Unimplemented(key, _PLUGIN_VERSIONS, "remove the key")
        for key in ("connector.plugin.version", *(f"{converter}.plugin.version" for converter in CONVERTERS))
    ),
    Unimplemented(
        "errors.deadletterqueue.",
        "a source connector has no dead-letter queue (Kafka Connect defines one for sink connectors only)",
        "remove the key; errors.log.enable=true logs the records errors.tolerance=all skips",
        prefix=True,
        kinds=SOURCE,
    ),
)
"""Kafka Connect's connector keys (ConnectorConfig, SourceConnectorConfig, SinkConnectorConfig) that Headwater does
not implement yet, refused at create and reported by validate."""


def refused_keys(props: Mapping[str, Any], kind: str | None) -> dict[str, str]:
    """The keys of ``props`` Headwater refuses because it does not implement them yet, each with its message;
    ``kind`` is ``source``, ``sink`` or ``None`` (not known: only the refusals for both kinds apply)."""
    found: dict[str, str] = {}
    for name, value in props.items():
        refusal = next((item for item in NOT_IMPLEMENTED if item.refuses(name, value, kind)), None)
        if refusal is not None:
            found[name] = refusal.message(name)
    return found


def unknown_keys(
    props: Mapping[str, Any], connector: Connector, definition: ConfigDef, worker_config: Mapping[str, Any]
) -> dict[str, str]:
    """The keys of ``props``, a config of ``connector`` whose full definition is ``definition`` (the runtime's keys,
    the connector's own and those of its transforms), that nothing recognises, each with its message;
    ``worker_config`` is the worker's parsed config (its converters are the connector's unless the connector names
    its own). Refused keys are not among them.

    A connector that declares no key and no prefix at all (an empty ``config_def``) may read any key: of the keys
    the runtime does not know, only those close to one it does (a typo of ``errors.tolerance``) are reported."""
    kind = "sink" if isinstance(connector, SinkConnector) else "source"
    declares = bool(connector.config_def().keys or connector.config_def().prefixes)
    found: dict[str, str] = {}
    refused = refused_keys(props, kind)
    for name in props:
        if name in definition.replaced:  # before the prefixes: source.cluster.alias is no source.* client setting
            found[name] = (
                f"{name} is not a configuration of this connector, and would be ignored: {definition.replaced[name]}"
            )
            continue
        if name in refused or definition.covers(name) or any(item.matches(name, kind) for item in NOT_IMPLEMENTED):
            continue
        problem = _override_problem(name, kind)
        if problem is None:
            problem = _converter_problem(name, props, worker_config)
        if problem is None:
            problem = _unknown(name, definition, declares, kind)
        if problem:
            found[name] = problem
    return found


def converter_errors(props: Mapping[str, Any], worker_config: Mapping[str, Any]) -> dict[str, str]:
    """The converter keys ``props`` sets whose converter cannot be loaded, each with why: an import path whose
    module the worker's ``connector.class.allowed.modules`` does not allow is refused before it is imported (the
    worker file's own converters are trusted and not checked here)."""
    allowed = list(worker_config.get(ALLOWED_MODULES) or [])
    found: dict[str, str] = {}
    for key in CONVERTERS:
        spec = props.get(key)
        if spec is None or spec == "":
            continue
        try:
            converter_class(str(spec), key, allowed)
        except ConfigError as error:
            found[key] = str(error)
    return found


def _override_problem(name: str, kind: str) -> str | None:
    """``None`` for a key that is not a client override; ``""`` for one the worker honours; else why not."""
    client = next((c for c in CLIENTS if name.startswith(override_prefix(c))), None)
    if client is None:
        return None
    honoured = CONNECTOR_CLIENTS.get(kind, ())
    if client in honoured:
        return ""
    given = " and ".join(f"{override_prefix(c)}*" for c in honoured) or "no override"
    return (
        f"{name}: the worker makes no {client} for the tasks of a {kind} connector, so this key reaches no client "
        f"and would be ignored (a {kind} connector's clients take {given} keys)"
    )


def _converter_problem(name: str, props: Mapping[str, Any], worker_config: Mapping[str, Any]) -> str | None:
    """``None`` for a key that is not a converter setting; ``""`` for one its converter may define; else why not."""
    converter = next((c for c in CONVERTERS if name.startswith(f"{c}.")), None)
    if converter is None:
        return None
    own = props.get(converter)
    spec = own or worker_config.get(converter) or WORKER_CONFIG.keys[converter].default
    allowed = (worker_config.get(ALLOWED_MODULES) or []) if own else None  # the worker file's converters are trusted
    return converter_setting_problem(name, converter, str(spec), allowed)


def converter_setting_problem(name: str, converter: str, spec: str, allowed: list[str] | None = None) -> str:
    """``""`` when ``name``, a key under ``converter`` (``value.converter.schemas.enable``), is a setting of the
    converter ``spec`` names (any setting, when it cannot be loaded or declares no ``CONFIG``); else why not, with
    the nearest setting it has. ``allowed`` is the worker's ``connector.class.allowed.modules`` for a connector
    config's own converter, ``None`` for a trusted one (the worker file's)."""
    settings = converter_settings(spec, converter == "header.converter", allowed)
    setting = name[len(converter) + 1 :]
    if settings is None or settings[1].covers(setting):
        return ""
    class_name, definition = settings
    known = ", ".join(definition.keys) or "none"
    hint = did_you_mean(setting, definition.keys, f"{converter}.")
    return f"{name}: {class_name} ({converter}) has no setting {setting} (its settings: {known}){hint}"


def did_you_mean(name: str, known: Iterable[str], prefix: str = "") -> str:
    """``"; did you mean <prefix><nearest>?"`` for the key of ``known`` nearest to ``name`` (a typo's), or ``""``
    when none is close."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.8)
    return f"; did you mean {prefix}{close[0]}?" if close else ""


def _unknown(name: str, definition: ConfigDef, declares: bool, kind: str) -> str:
    """Why ``name`` is unknown in a config of a ``kind`` connector; ``""`` when it may be a key of a connector that
    ``declares`` none."""
    if name in WORKER_CONFIG.keys:
        return f"{name} is a worker configuration: a connector's config does not set it (set it in the worker's)"
    other, other_kind = (SOURCE_CONNECTOR_CONFIG, "source") if kind == "sink" else (SINK_CONNECTOR_CONFIG, "sink")
    if name in other.keys and (declares or kind == "sink"):  # a source of no declared keys may read "topics" itself
        return f"{name} is a {other_kind} connector configuration: a {kind} connector would ignore it"
    hint = did_you_mean(name, definition.keys)
    if not declares and not hint:
        return ""
    return f"{name} is not a configuration of this connector or of the worker, and would be ignored{hint}"
