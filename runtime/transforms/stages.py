"""A connector config's transforms and predicates (KIP-66, KIP-585): their keys, checked and turned into a task's
:class:`~headwater.runtime.transforms.chain.TransformationChain`.

``transforms`` lists the aliases of the chain, in order; each has ``transforms.<alias>.type`` (a built-in's name,
Kafka Connect's Java class name for it, an installed transformation's entry-point name, or an import path the
worker's ``connector.class.allowed.modules`` allows), ``transforms.<alias>.predicate`` and ``.negate``, and the
transformation's own settings as ``transforms.<alias>.<setting>``. ``predicates`` and ``predicates.<alias>.*`` do
the same for predicates. As Kafka Connect's ``ConnectorConfig.enrich`` does, :func:`chain_definition` turns them
into config keys of the connector's definition, so validation, unknown-key checks and the validate endpoint treat
them like any other key.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from headwater.runtime.config.transform_keys import CHAIN_CONFIG, PREDICATES, TRANSFORMS, aliases
from headwater.runtime.java_plugins import TRANSFORMATIONS as JAVA_TRANSFORMATIONS
from headwater.runtime.java_plugins import refuse_java
from headwater.runtime.plugins import import_allowed, installed_entry_points
from headwater.runtime.transforms.builtins import BUILTIN_PREDICATES, BUILTIN_TRANSFORMATIONS
from headwater.runtime.transforms.chain import TransformationChain, TransformStage
from headwater.sdk.config import REQUIRED, ConfigDef, Importance, Type
from headwater.sdk.errors import ConfigError
from headwater.sdk.transforms import (
    PREDICATE_ENTRY_POINT_GROUP,
    TRANSFORMATION_ENTRY_POINT_GROUP,
    Predicate,
    Transformation,
)

OWN_KEYS = ("type", "predicate", "negate")
"""The keys under ``transforms.<alias>.`` that are the chain's, not the transformation's."""


def resolve(
    spec: Any, key: str, predicate: bool = False, allowed_modules: Sequence[str] | None = None
) -> type[Transformation[Any]] | type[Predicate[Any]]:
    """The transformation (or predicate) class ``spec`` names: a built-in (``InsertField$Value``, or Kafka
    Connect's ``org.apache.kafka.connect.transforms.InsertField$Value``), an installed one's entry-point name, or an
    import path; with ``allowed_modules`` an import path is refused unless its module is inside one of them, before
    anything is imported. Raises :class:`ConfigError` on ``key``."""
    base: type[Any] = Predicate if predicate else Transformation
    kind = "predicate" if predicate else "transformation"
    if isinstance(spec, type):
        found: Any = spec
    else:
        text = str(spec).strip()
        builtins = BUILTIN_PREDICATES if predicate else BUILTIN_TRANSFORMATIONS
        group = PREDICATE_ENTRY_POINT_GROUP if predicate else TRANSFORMATION_ENTRY_POINT_GROUP
        installed = {entry.name: entry for entry in installed_entry_points(group)}
        if text in builtins:
            found = builtins[text]
        elif text in installed:
            try:
                found = installed[text].load()
            except Exception as error:
                raise ConfigError(key, spec, f"Cannot load the installed {kind} {text}: {error!r}") from None
        else:
            _refuse_java(text, key, kind, builtins, installed)
            found = _imported(text, key, kind, allowed_modules)
    if not (isinstance(found, type) and issubclass(found, base)):
        raise ConfigError(key, spec, f"Class is not a {base.__name__} ({base.__module__}.{base.__name__})")
    if inspect.isabstract(found):
        builtins = BUILTIN_PREDICATES if predicate else BUILTIN_TRANSFORMATIONS
        variants = [name for name in builtins if name.startswith(f"{spec}$")]
        hint = f"; did you mean {' or '.join(variants)}?" if variants else ""
        raise ConfigError(key, spec, f"Class is abstract and cannot be created{hint}")
    return found


def _refuse_java(spec: str, key: str, kind: str, builtins: Mapping[str, Any], installed: Mapping[str, Any]) -> None:
    """Refuse a Java class name before any import: Kafka's abstract ``InsertField`` & co. naming their ``$Key`` and
    ``$Value`` built-ins, another Java class naming Headwater's counterpart or else what is built in and installed."""
    variants = [name for name in builtins if name.startswith(f"{spec}$")]
    if variants:
        raise ConfigError(key, spec, f"Class is abstract and cannot be created; did you mean {' or '.join(variants)}?")
    shown = (name.replace("$Key", "$Key/$Value") for name in builtins if "." not in name and "$Value" not in name)
    short = dict.fromkeys(shown)
    instead = f"built-in {kind}s: {', '.join(short)}; installed: {', '.join(sorted(installed)) or 'none'}"
    refuse_java(key, spec, JAVA_TRANSFORMATIONS if kind == "transformation" else {}, instead)


def _imported(spec: str, key: str, kind: str, allowed_modules: Sequence[str] | None) -> Any:
    module_name, _, attr = spec.partition(":") if ":" in spec else spec.rpartition(".")
    parts = module_name.split(".") if module_name else []
    if not parts or not attr.isidentifier() or not all(part.isidentifier() for part in parts):
        raise ConfigError(key, spec, f"Unknown {kind}: not a built-in, an installed {kind} or an import path")
    if allowed_modules is not None and not import_allowed(module_name, allowed_modules):
        raise ConfigError(
            key,
            spec,
            f"{kind.capitalize()} classes are not imported from module {module_name}: only built-ins, installed "
            f"{kind}s and modules listed in the worker's connector.class.allowed.modules can be used",
        )
    try:
        return getattr(importlib.import_module(module_name), attr)
    except Exception as error:
        raise ConfigError(key, spec, f"Cannot load {kind} class: {type(error).__name__}: {error}") from None


def _made(cls: type[Any], key: str, spec: Any) -> Any:
    try:
        made = cls()
        made.config_def()
    except Exception as error:
        raise ConfigError(key, spec, f"Cannot create it: {type(error).__name__}: {error}") from None
    return made


def _own_keys(instance: Any, prefix: str, group: str) -> ConfigDef:
    """The instance's settings, each key renamed ``<prefix><setting>`` and listed under ``group``."""
    definition = ConfigDef()
    own: ConfigDef = instance.config_def()
    for key in own:
        definition.keys[prefix + key.name] = replace(key, name=prefix + key.name, group=group)
    for declared, documentation in own.prefixes.items():
        definition.define_prefix(prefix + declared, documentation)
    return definition


def chain_definition(props: Mapping[str, Any], allowed_modules: Sequence[str] | None = None) -> ConfigDef:
    """The keys of the config's transforms and predicates, as Kafka Connect's ``ConnectorConfig.enrich`` makes
    them: for each alias its ``type`` (and a transformation's ``predicate`` and ``negate``), then the settings of its
    class when that can be loaded (an unloadable one is an error on its ``type``)."""
    definition = ConfigDef()
    predicate_aliases = aliases(props, PREDICATES)
    for alias in aliases(props, TRANSFORMS):
        prefix, group = f"{TRANSFORMS}.{alias}.", f"Transforms: {alias}"
        definition.define(
            prefix + "type",
            Type.STRING,
            REQUIRED,
            Importance.HIGH,
            f"Class for the '{alias}' transformation.",
            _class_check(allowed_modules, predicate=False),
            group=group,
        )
        definition.define(
            prefix + "predicate",
            Type.STRING,
            None,
            Importance.MEDIUM,
            f"The alias of a predicate used to decide whether to apply the '{alias}' transformation.",
            _listed_in(predicate_aliases),
            group=group,
        )
        definition.define(
            prefix + "negate",
            Type.BOOLEAN,
            False,
            Importance.MEDIUM,
            f"Whether the '{alias}' transformation applies to the records its predicate does not match.",
            group=group,
        )
        definition = _with_settings(definition, props, prefix, group, allowed_modules, predicate=False)
    for alias in predicate_aliases:
        prefix, group = f"{PREDICATES}.{alias}.", f"Predicates: {alias}"
        definition.define(
            prefix + "type",
            Type.STRING,
            REQUIRED,
            Importance.HIGH,
            f"Class for the '{alias}' predicate.",
            _class_check(allowed_modules, predicate=True),
            group=group,
        )
        definition = _with_settings(definition, props, prefix, group, allowed_modules, predicate=True)
    return definition


def _with_settings(
    definition: ConfigDef,
    props: Mapping[str, Any],
    prefix: str,
    group: str,
    allowed_modules: Sequence[str] | None,
    predicate: bool,
) -> ConfigDef:
    spec = props.get(prefix + "type")
    if not spec:
        return definition
    try:
        cls = resolve(spec, prefix + "type", predicate, allowed_modules)
        instance = _made(cls, prefix + "type", spec)
    except ConfigError:
        return definition  # reported on the type key by its validator
    own = _own_keys(instance, prefix, group)
    for key in list(own.keys):
        if key[len(prefix) :] in OWN_KEYS and not predicate:
            raise ConfigError(
                prefix + "type", spec, f"Its setting {key[len(prefix) :]} clashes with the chain's own key"
            )
    return definition.merge(own)


def _class_check(allowed_modules: Sequence[str] | None, predicate: bool) -> Any:
    def check(key: str, value: Any) -> None:
        _made(resolve(value, key, predicate, allowed_modules), key, value)

    return check


def _listed_in(predicate_aliases: list[str]) -> Any:
    def check(key: str, value: Any) -> None:
        if value not in predicate_aliases:
            listed = ", ".join(predicate_aliases) or "none"
            raise ConfigError(key, value, f"Not a predicate alias listed in predicates (listed: {listed})")

    return check


def chain_errors(props: Mapping[str, Any], allowed_modules: Sequence[str] | None = None) -> dict[str, list[str]]:
    """What is wrong with the config's transforms and predicates beyond each key's own value: ``negate``
    without a ``predicate``, and settings a transformation or predicate refuses when it is configured."""
    found: dict[str, list[str]] = {}
    try:
        build_chain(props, allowed_modules).close()
    except ConfigError as error:
        found.setdefault(error.key, []).append(str(error))
    return found


def build_chain(props: Mapping[str, Any], allowed_modules: Sequence[str] | None = None) -> TransformationChain[Any]:
    """A task's chain for the connector config ``props``: each transformation and predicate made and configured
    with its settings (its keys without their prefix, parsed by its definition). Raises :class:`ConfigError` naming
    the first bad key."""
    definition = CHAIN_CONFIG.merge(chain_definition(props, allowed_modules))
    parsed = definition.parse({key: value for key, value in props.items() if definition.covers(key)})
    predicates: dict[str, Predicate[Any]] = {}
    made: list[Transformation[Any] | Predicate[Any]] = []
    try:
        for alias in aliases(props, PREDICATES):
            predicates[alias] = _configured(parsed, props, f"{PREDICATES}.{alias}.", True, allowed_modules)
            made.append(predicates[alias])
        stages: list[TransformStage[Any]] = []
        for alias in aliases(props, TRANSFORMS):
            prefix = f"{TRANSFORMS}.{alias}."
            guard, negate = parsed.get(prefix + "predicate"), bool(parsed.get(prefix + "negate"))
            if negate and guard is None:
                raise ConfigError(
                    prefix + "negate", props.get(prefix + "negate"), f"negate needs {prefix}predicate to be set"
                )
            transformation = _configured(parsed, props, prefix, False, allowed_modules)
            made.append(transformation)
            stages.append(TransformStage(alias, transformation, predicates.get(guard or ""), negate))
    except BaseException:
        for part in made:
            part.close()
        raise
    return TransformationChain(stages)


def _configured(
    parsed: Mapping[str, Any],
    props: Mapping[str, Any],
    prefix: str,
    predicate: bool,
    allowed_modules: Sequence[str] | None,
) -> Any:
    key = prefix + "type"
    instance = _made(resolve(parsed[key], key, predicate, allowed_modules), key, parsed[key])
    settings = {
        name[len(prefix) :]: value
        for name, value in {**props, **parsed}.items()
        if name.startswith(prefix) and (predicate or name[len(prefix) :] not in OWN_KEYS) and name != key
    }
    try:
        instance.configure(instance.config_def().parse(settings))
    except ConfigError as error:
        raise ConfigError(prefix + error.key, error.value, error.reason) from None
    except Exception as error:
        raise ConfigError(key, parsed[key], f"Cannot configure it: {type(error).__name__}: {error}") from None
    return instance
