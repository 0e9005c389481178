"""The plugins a worker offers besides connectors, as Kafka Connect's ``PluginDesc`` describes them: the
transformations and predicates (built-in, and installed under their entry-point groups) and the converters and
header converters, each with its class name, type, version and config definition."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from headwater import release
from headwater.runtime.converters import BUILTIN_CONVERTERS, BUILTIN_HEADER_CAPABLE, converter_class
from headwater.runtime.plugins import installed_entry_points
from headwater.runtime.transforms.builtins import BUILTIN_PREDICATES, BUILTIN_TRANSFORMATIONS
from headwater.runtime.transforms.stages import resolve
from headwater.sdk.config import ConfigDef
from headwater.sdk.errors import ConfigError
from headwater.sdk.transforms import (
    PREDICATE_ENTRY_POINT_GROUP,
    TRANSFORMATION_ENTRY_POINT_GROUP,
    Predicate,
    Transformation,
)

log = logging.getLogger(__name__)

TYPES = ("transformation", "predicate", "converter", "header_converter")
"""Kafka Connect's plugin types after the connectors', in the order ``GET /connector-plugins`` lists them."""

KAFKA_PACKAGE = "org.apache.kafka."


@dataclass(frozen=True)
class PluginDesc:
    """One plugin: the class name ``GET /connector-plugins`` shows, its names a config may use, and its class."""

    class_name: str
    plugin_type: str
    version: str | None
    names: frozenset[str]
    plugin_class: type

    def info(self) -> dict[str, Any]:
        """The plugin in Kafka Connect's ``PluginInfo`` shape (no ``version`` when it is unknown)."""
        info: dict[str, Any] = {"class": self.class_name, "type": self.plugin_type}
        if self.version is not None:
            info["version"] = self.version
        return info

    def config_def(self) -> ConfigDef:
        """The plugin's own settings: a transformation's or predicate's ``config_def()``, a converter's ``CONFIG``."""
        if self.plugin_type in ("transformation", "predicate"):
            definition: ConfigDef = self.plugin_class().config_def()
            return definition
        found = getattr(self.plugin_class, "CONFIG", None)
        return found if isinstance(found, ConfigDef) else ConfigDef()


def _builtins(registry: Mapping[str, type], kind: str) -> list[PluginDesc]:
    """One description per class of a built-in registry, named by Kafka Connect's class name when it has one."""
    names: dict[type, set[str]] = {}
    for name, cls in registry.items():
        names.setdefault(cls, set()).add(name)
    found = []
    for cls, spellings in names.items():
        kafka = sorted(name for name in spellings if name.startswith(KAFKA_PACKAGE))
        dotted = sorted(name for name in spellings if "." in name)
        shown = (kafka or dotted or sorted(spellings))[0]
        found.append(PluginDesc(shown, kind, release.version(), frozenset(spellings), cls))
    return found


_reported: set[str] = set()
"""Entry points whose load failure was logged already."""


def _installed(group: str, base: type, kind: str) -> list[PluginDesc]:
    """The classes registered under an entry-point group, named by their import path; one that does not load, or
    is not a ``base``, is logged once and left out."""
    found = []
    for entry in installed_entry_points(group):
        try:
            cls = entry.load()
            if not (isinstance(cls, type) and issubclass(cls, base)):
                raise TypeError(f"not a {base.__name__}")
        except Exception as error:
            if entry.name not in _reported:
                _reported.add(entry.name)
                log.warning("%s entry point %s ignored: %s: %s", kind, entry.name, type(error).__name__, error)
            continue
        dist = entry.dist.version if entry.dist is not None else None
        class_name = f"{cls.__module__}.{cls.__qualname__}"
        found.append(PluginDesc(class_name, kind, dist, frozenset({entry.name, class_name}), cls))
    return found


def plugin_descs() -> list[PluginDesc]:
    """Every transformation, predicate, converter and header converter, in Kafka Connect's order: by type as
    :data:`TYPES` lists them, then by class name."""
    every = [
        *_builtins(BUILTIN_TRANSFORMATIONS, "transformation"),
        *_installed(TRANSFORMATION_ENTRY_POINT_GROUP, Transformation, "transformation"),
        *_builtins(BUILTIN_PREDICATES, "predicate"),
        *_installed(PREDICATE_ENTRY_POINT_GROUP, Predicate, "predicate"),
        *_builtins(BUILTIN_CONVERTERS, "converter"),
        *_builtins(BUILTIN_HEADER_CAPABLE, "header_converter"),
    ]
    return sorted(every, key=lambda desc: (TYPES.index(desc.plugin_type), desc.class_name))


def find_plugin(name: str, allowed_modules: Sequence[str]) -> PluginDesc | None:
    """The transformation, predicate or converter ``name`` names (any name a config may use for it, or an import
    path ``allowed_modules`` allows), or ``None``."""
    for desc in plugin_descs():
        if name in desc.names:
            return desc
    for kind, predicate in (("transformation", False), ("predicate", True)):
        try:
            cls = resolve(name, "type", predicate, allowed_modules)
        except ConfigError:
            continue
        return PluginDesc(name, kind, None, frozenset({name}), cls)
    try:
        cls = converter_class(name, "value.converter", allowed_modules)
    except ConfigError:
        return None
    return PluginDesc(name, "converter", None, frozenset({name}), cls)
