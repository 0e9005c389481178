"""What a worker file may hold, beyond the values its keys parse to: the shape of its lines, its unknown keys, the
Kafka Connect keys Headwater answers without using, and converters that load and configure.

A worker file is read as Java reads a ``.properties`` file (:mod:`.properties`), so ``key value`` sets a key as
``key=value`` does. A line is refused, naming the file and line, when Java would read it but not as meant:

- its key is empty (the line starts with ``=`` or ``:``);
- its key is not a config key's name: a config key begins with an ASCII letter or digit and holds only those,
  ``.``, ``_`` and ``-`` (a pasted line of JSON, YAML or shell, ``"bootstrap.servers": "h:9092",``, would be a key
  nobody reads);
- it holds a key alone, with neither separator nor value (a stray word, a wrapped line of a PEM certificate):
  Java reads an empty value, which a worker file writes ``key=``.

A key that no worker definition covers is unknown: a warning naming the file, line and the nearest known key, or an
error when the file sets ``connector.unknown.keys=error``. Known are the keys and prefixes of the worker's
definition, which include the client settings (``producer.``, ``consumer.``, ``admin.``, ``security.protocol``,
``ssl.``, ``sasl.``), the listeners' and the config providers' keys; a ``key.converter.``, ``value.converter.`` or
``header.converter.`` key is known when its converter defines that setting (any, for a converter without a
``CONFIG``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from headwater.runtime.config.connector import SINK_CONNECTOR_CONFIG, SOURCE_CONNECTOR_CONFIG
from headwater.runtime.config.distributed_worker import DISTRIBUTED_CONFIG
from headwater.runtime.config.known_keys import CONVERTERS, UNKNOWN_KEYS, converter_setting_problem, did_you_mean
from headwater.runtime.config.properties import ConfigFile, PropertiesError
from headwater.runtime.converters import converter_config, load_converter, load_header_converter
from headwater.sdk import CONNECTOR_ENTRY_POINT_GROUP, PLUGIN_ENTRY_POINT_GROUP
from headwater.sdk.config import ConfigDef
from headwater.sdk.errors import ConfigError
from headwater.sdk.providers import CONFIG_PROVIDER_ENTRY_POINT_GROUP, has_reference
from headwater.sdk.transforms import PREDICATE_ENTRY_POINT_GROUP, TRANSFORMATION_ENTRY_POINT_GROUP

KEY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
"""What a config key's name looks like."""

_PLUGINS = (
    "Headwater loads no Java plugins: it finds connectors, transforms, predicates, config providers and cross-cutting "
    "plugins among the installed Python packages, by their entry points (groups "
    f"{CONNECTOR_ENTRY_POINT_GROUP}, {TRANSFORMATION_ENTRY_POINT_GROUP}, {PREDICATE_ENTRY_POINT_GROUP}, "
    f"{CONFIG_PROVIDER_ENTRY_POINT_GROUP}, {PLUGIN_ENTRY_POINT_GROUP}); converters are built in or named by import "
    "path. Install a plugin with pip into the worker's environment"
)
IGNORED_KEYS: Mapping[str, str] = {
    "plugin.path": f"{_PLUGINS}; this key does nothing (remove it)",
    "plugin.discovery": f"{_PLUGINS}, so there is nothing to scan (KIP-898); this key does nothing (remove it)",
}
"""Kafka Connect worker keys (``WorkerConfig``'s ``plugin.path`` and ``plugin.discovery``, which point its plugin
class loaders at jars) that a migrated worker file keeps, each with why Headwater does nothing with it: a warning at
start, whatever ``connector.unknown.keys`` says, since the file works without them."""


def line_errors(file: ConfigFile) -> list[PropertiesError]:
    """An error for each line of ``file`` that Java would read, but not as meant (see the module's docstring)."""
    errors = []
    for key in file.values:
        if not KEY_NAME.fullmatch(key):
            problem = (
                "not a config key: a key begins with a letter or digit and holds only letters, digits, '.', '_' and "
                "'-' (is this line from another format?)"
            )
            errors.append(file.error(key, problem))
        elif key in file.bare:
            problem = f"the line holds a key and no value; write {key}= for an empty value"
            errors.append(file.error(key, problem))
    return sorted(errors, key=lambda error: error.line or 0)


def unknown_worker_keys(values: Mapping[str, Any], definition: ConfigDef) -> dict[str, str]:
    """The keys of a worker file's ``values`` that ``definition`` (the worker's: standalone or distributed) does not
    cover, each with why (not repeating the key); :data:`IGNORED_KEYS` are not among them."""
    found: dict[str, str] = {}
    for name in values:
        problem = _problem(name, values, definition)
        if problem:
            found[name] = problem
    return found


def _problem(name: str, values: Mapping[str, Any], definition: ConfigDef) -> str:
    """Why ``name`` is unknown (the message does not repeat the key), or ``""``."""
    converter = next((c for c in CONVERTERS if name.startswith(f"{c}.")), None)
    if converter is not None:
        spec = values.get(converter) or definition.keys[converter].default
        return converter_setting_problem(name, converter, str(spec)).removeprefix(f"{name}: ")
    if definition.covers(name) or name in IGNORED_KEYS:
        return ""
    if DISTRIBUTED_CONFIG.covers(name):
        return "a distributed worker's configuration: a standalone worker does not read it"
    if SOURCE_CONNECTOR_CONFIG.covers(name) or SINK_CONNECTOR_CONFIG.covers(name):
        return "a connector's configuration: a worker does not read it (set it in a connector's config)"
    return f"not a worker configuration, and ignored{did_you_mean(name, definition.keys)}"


def unknown_keys_refused(values: Mapping[str, Any]) -> bool:
    """Whether a worker file's ``values`` ask for unknown keys to be refused (``connector.unknown.keys=error``)."""
    return str(values.get(UNKNOWN_KEYS, "")).strip().lower() == "error"


def converter_errors(values: Mapping[str, Any], definition: ConfigDef) -> list[ConfigError]:
    """The worker's key, value and header converters, each loaded and configured with its settings from the
    worker file's ``values`` (references resolved) and closed again: an error naming the key
    (``value.converter.schema.registry.url``) for each that fails, so that the worker refuses to start rather than
    fail every task. A converter whose settings hold an unresolved reference is not tried."""
    errors = []
    for key in CONVERTERS:
        spec = str(values.get(key) or definition.keys[key].default)
        settings = converter_config(values, key)
        if any(has_reference(value) for value in (spec, *settings.values())):
            continue
        try:
            if key == "header.converter":
                converter: Any = load_header_converter(spec, settings, key)
            else:
                converter = load_converter(spec, settings, key == "key.converter", key)
        except ConfigError as error:
            errors.append(error)
            continue
        except Exception as error:  # a converter of the user's own that raises something else
            errors.append(ConfigError(key, spec, f"Cannot configure the converter: {type(error).__name__}: {error}"))
            continue
        close = getattr(converter, "close", None)
        if callable(close):
            close()
    return errors
