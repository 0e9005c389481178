"""The plugin manager: hookspecs, the built-in defaults, cross-cutting plugins and connector discovery."""

from __future__ import annotations

import importlib
import inspect
import logging
import os
import sys
import weakref
from collections.abc import Mapping, Sequence
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from types import ModuleType
from typing import Any

import pluggy

from headwater.runtime.java_plugins import CONNECTORS, refuse_java
from headwater.sdk import CONNECTOR_ENTRY_POINT_GROUP, PLUGIN_ENTRY_POINT_GROUP, hookspecs
from headwater.sdk.connector import Connector, SinkConnector, SourceConnector
from headwater.sdk.errors import ConfigError
from headwater.sdk.hookspecs import PROJECT, hookimpl
from headwater.sdk.records import TopicPartition
from headwater.sdk.task import SinkTask, Task

log = logging.getLogger(__name__)


class DefaultHooks:
    """The built-in implementations, registered first with ``trylast=True`` so any other one wins."""

    @hookimpl(trylast=True)
    def produce_heartbeat_records(self) -> list[Any]:
        return []

    @hookimpl(trylast=True)
    def pre_commit(self, task: SinkTask, current_offsets: Mapping[TopicPartition, int]) -> Mapping[TopicPartition, int]:
        task.flush(current_offsets)
        return current_offsets

    @hookimpl(trylast=True)
    def stop(self, instance: Connector | Task, connector_deleted: bool) -> None:
        if not implements_hook(instance, "stop"):
            instance.stop()


DEFAULTS = DefaultHooks()


def implements_hook(instance: object, name: str) -> bool:
    """Whether ``instance`` carries its own implementation of hook ``name`` (by method name or ``specname``)."""
    cls = type(instance)
    for attr in dir(cls):
        options = getattr(getattr(cls, attr, None), f"{PROJECT}_impl", None)
        if isinstance(options, dict) and (options.get("specname") or attr) == name:
            return True
    return False


def _path_state() -> tuple[tuple[str, int | None], ...]:
    """Each ``sys.path`` entry with its modification time: installing or removing a distribution changes the
    directory its metadata is in, and so this."""
    state: list[tuple[str, int | None]] = []
    for entry in sys.path:
        try:
            state.append((entry, os.stat(entry or ".").st_mtime_ns))
        except OSError:
            state.append((entry, None))
    return tuple(state)


_entry_points: dict[str, tuple[tuple[tuple[str, int | None], ...], tuple[EntryPoint, ...]]] = {}


def installed_entry_points(group: str) -> tuple[EntryPoint, ...]:
    """The entry points of ``group``, read again only when ``sys.path`` or one of its directories changed since the
    last look: reading every distribution's metadata costs milliseconds, and connector classes, converters,
    transformations and providers are looked up for each config check and each task."""
    state = _path_state()
    known = _entry_points.get(group)
    if known is None or known[0] != state:
        known = _entry_points[group] = (state, tuple(entry_points(group=group)))
    return known[1]


@cache
def installed_plugins() -> tuple[object, ...]:
    """Cross-cutting plugins registered under the ``headwater.plugins`` entry-point group, loaded once."""
    found = []
    for entry in installed_entry_points(PLUGIN_ENTRY_POINT_GROUP):
        log.info("loading plugin %s from %s", entry.name, entry.value)
        found.append(entry.load())
    return tuple(found)


_HOOKS_BY_CLASS: weakref.WeakKeyDictionary[type, dict[str, tuple[object, Any]]] = weakref.WeakKeyDictionary()
"""Per plugin class and attribute name: the class attribute pluggy looked at, and what it found there (hook options
or ``None``)."""

_ABSENT = object()


class _PluginManager(pluggy.PluginManager):
    """pluggy's manager, with what it finds on a plugin's class remembered per class attribute: a manager is built
    for every connector and task instance, and pluggy otherwise inspects each attribute of each class every time. A
    class attribute replaced later (a test's monkeypatch, say) is looked at again."""

    def parse_hookimpl_opts(self, plugin: object, name: str) -> Any:
        cls = type(plugin)
        if isinstance(plugin, (type, ModuleType)) or _has_slots(cls) or name in _own_attributes(plugin):
            return super().parse_hookimpl_opts(plugin, name)  # found on the object itself, not its class
        attribute = next((klass.__dict__[name] for klass in cls.__mro__ if name in klass.__dict__), _ABSENT)
        known = _HOOKS_BY_CLASS.setdefault(cls, {})
        found = known.get(name)
        if found is None or found[0] is not attribute:
            found = known[name] = (attribute, super().parse_hookimpl_opts(plugin, name))
        return found[1]


def _has_slots(cls: type) -> bool:
    """Whether instances of ``cls`` keep attributes in slots (``ABC``'s empty ``__slots__`` keeps none)."""
    return any(klass.__dict__.get("__slots__") for klass in cls.__mro__)


def _own_attributes(plugin: object) -> dict[str, Any]:
    """The instance's own ``__dict__``, read without running a ``__getattr__``."""
    try:
        own = object.__getattribute__(plugin, "__dict__")
    except AttributeError:
        return {}
    return own if isinstance(own, dict) else {}


def plugin_manager(instance: Connector | Task, plugins: Sequence[object] | None = None) -> pluggy.PluginManager:
    """A plugin manager for one connector or task instance: defaults, cross-cutting plugins, the instance.

    Raises :class:`pluggy.PluginValidationError` naming the method when the instance implements an unknown hook or
    asks for an argument a hook does not have.
    """
    manager = _PluginManager(PROJECT)
    manager.add_hookspecs(hookspecs)
    manager.register(DEFAULTS, name="headwater-defaults")
    for plugin in installed_plugins() if plugins is None else plugins:
        manager.register(plugin)
    manager.register(instance, name=f"{type(instance).__qualname__}-{id(instance):x}")
    manager.check_pending()
    return manager


_reported: set[str] = set()
"""Entry points whose load failure was logged already (they are looked at on every config check)."""


def _connector_entry_points() -> tuple[dict[str, type[Connector]], dict[str, str]]:
    """The connector classes of the ``headwater.connectors`` entry points that load, and why each other one does
    not (a reference connector whose extra is not installed, say), by entry-point name."""
    found: dict[str, type[Connector]] = {}
    broken: dict[str, str] = {}
    for entry in installed_entry_points(CONNECTOR_ENTRY_POINT_GROUP):
        try:
            loaded = entry.load()
        except Exception as error:
            broken[entry.name] = (
                f"{entry.value} cannot be loaded ({type(error).__name__}: {error}); "
                "is the package or extra it needs installed?"
            )
        else:
            if isinstance(loaded, type) and issubclass(loaded, Connector):
                found[entry.name] = loaded
            else:
                broken[entry.name] = f"{entry.value} is not a Connector class"
    for name, why in broken.items():
        if name not in _reported:
            _reported.add(name)
            log.warning("connector entry point %s ignored: %s", name, why)
    return found, broken


def installed_connectors() -> dict[str, type[Connector]]:
    """Connector classes registered under the ``headwater.connectors`` entry-point group, by entry-point name;
    entry points that cannot be loaded are left out (and logged once)."""
    return _connector_entry_points()[0]


ALLOWED_MODULES = "connector.class.allowed.modules"
"""The worker key listing the modules an import path in a connector config (``connector.class``, its converters)
may name."""


def import_allowed(module_name: str, allowed_modules: Sequence[str]) -> bool:
    """Whether ``module_name`` is one of ``allowed_modules`` or inside one of them (``*`` allows every module)."""
    return any(allowed in ("*", module_name) or module_name.startswith(f"{allowed}.") for allowed in allowed_modules)


def resolve_connector_class(
    spec: str | type[Connector], key: str = "connector.class", allowed_modules: Sequence[str] | None = None
) -> type[Connector]:
    """Find a connector class by entry-point name, class name of an installed connector, or import path
    (``package.module:Class`` or ``package.module.Class``). A Java class name (Kafka Connect's, Confluent's,
    Debezium's) is refused naming Headwater's counterpart, if any, before any module is allowed or imported. With
    ``allowed_modules`` (the worker's ``connector.class.allowed.modules``) an import path is refused before anything
    is imported unless its module is inside one of them; ``None`` is for a spec the worker already trusts (a stored
    config, a class)."""
    if isinstance(spec, type):
        if issubclass(spec, Connector):
            return spec
        raise ConfigError(key, spec, "Class is not a Connector")
    installed, broken = _connector_entry_points()
    if spec in installed:
        return installed[spec]
    if spec in broken:
        raise ConfigError(key, spec, f"Connector {broken[spec]}")
    for cls in installed.values():
        if spec in (cls.__name__, f"{cls.__module__}.{cls.__qualname__}"):
            return cls
    known = ", ".join(sorted(installed)) or "none installed"
    refuse_java(key, spec, CONNECTORS, f"installed connectors: {known}")
    module_name, _, attr = spec.partition(":") if ":" in spec else spec.rpartition(".")
    if _is_import_path(module_name, attr):
        refuse_unless_allowed(key, spec, module_name, allowed_modules)
        try:
            loaded = getattr(importlib.import_module(module_name), attr)
        except Exception as error:  # whatever a module raises on import is the config's fault here, not the worker's
            raise ConfigError(key, spec, f"Cannot load connector class: {type(error).__name__}: {error}") from None
        if not (isinstance(loaded, type) and issubclass(loaded, Connector)):
            raise ConfigError(key, spec, "Class is not a Connector")
        if inspect.isabstract(loaded):
            raise ConfigError(key, spec, "Class is abstract: it does not implement every method a connector must")
        return loaded
    raise ConfigError(key, spec, f"Unknown connector; installed connectors: {known}")


INSTALLED_CONNECTORS = f"installed connectors (entry-point group {CONNECTOR_ENTRY_POINT_GROUP})"


def refuse_unless_allowed(
    key: str,
    spec: object,
    module_name: str,
    allowed_modules: Sequence[str] | None,
    what: str = "Connector classes",
    instead: str = INSTALLED_CONNECTORS,
) -> None:
    """Raise :class:`ConfigError` naming ``key`` and the module unless ``allowed_modules`` (the worker's
    ``connector.class.allowed.modules``; ``None`` for a value the worker trusts) allows ``module_name``: the one
    check before a module named by a connector config's import path is imported. ``what`` is what ``key`` names
    and ``instead`` what can be used without allowing a module."""
    if allowed_modules is not None and not import_allowed(module_name, allowed_modules):
        raise ConfigError(key, spec, not_allowed(module_name, what, instead))


def not_allowed(module_name: str, what: str = "Connector classes", instead: str = INSTALLED_CONNECTORS) -> str:
    return (
        f"{what} are not imported from module {module_name}: only {instead} and modules listed in the worker's "
        f"{ALLOWED_MODULES} can be used; add {module_name} (or a package above it) there to allow it"
    )


def loaded_connector_class(spec: str) -> type[Connector] | None:
    """The connector class ``spec`` names when it is installed or its module is imported already; ``None``
    otherwise (nothing is imported: for showing what is already there, such as which keys are secret)."""
    module_name = (spec.partition(":") if ":" in spec else spec.rpartition("."))[0]
    try:
        return resolve_connector_class(spec, allowed_modules=[module_name] if module_name in sys.modules else [])
    except ConfigError:
        return None


MAX_IMPORT_PATH = 1000
"""The longest import path ``connector.class`` may give (Python's own limits are far longer; a real path is short)."""


def _is_import_path(module_name: str, attr: str) -> bool:
    """Whether ``module_name`` and ``attr`` make an absolute import path (``a.b:C``; not ``..x``, ``a..b``, ``x:``)."""
    if not module_name or not attr or len(module_name) + len(attr) > MAX_IMPORT_PATH:
        return False
    return all(part.isidentifier() for part in module_name.split(".")) and attr.isidentifier()


def connector_type(spec: str | type[Connector] | None) -> str:
    """``source``, ``sink`` or, for a class that cannot be found, ``unknown`` (Kafka Connect's connector types)."""
    if spec is None:
        return "unknown"
    try:
        cls = resolve_connector_class(spec)
    except ConfigError:
        return "unknown"
    if issubclass(cls, SinkConnector):
        return "sink"
    return "source" if issubclass(cls, SourceConnector) else "unknown"
