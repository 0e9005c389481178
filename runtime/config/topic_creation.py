"""Topic creation for source connectors (KIP-158): the ``topic.creation.*`` keys of a source connector's config, the
groups they define, and the check a source task makes before the first record it sends to a topic.

A connector turns topic creation on by setting any ``topic.creation.`` key, while the worker's
``topic.creation.enable`` is true (its default); then ``topic.creation.default.replication.factor`` and
``topic.creation.default.partitions`` are required (-1: the broker's default). ``topic.creation.groups`` lists
further groups, each with its own ``include`` and ``exclude`` regex lists (a topic matches a group when its whole
name matches an ``include`` pattern and no ``exclude`` pattern, as Java's ``Pattern.matches``), ``replication.factor``
and ``partitions`` (the default group's when not set), and any other ``topic.creation.<group>.<name>`` key, given to
the new topic as its config ``<name>``. The default group matches every topic and comes last (Kafka Connect's
``SourceConnectorConfig.enrich``, ``TopicCreationGroup`` and ``TopicCreation``).

A task sending to a topic for the first time asks the cluster whether it exists; when it does not, the task creates
it with the settings of the first group it matches, before producing to it, and never looks at that topic again
(``AbstractWorkerSourceTask.maybeCreateTopic``). A topic that exists is left as it is. A describe that times out is
retried like a retriable send; a creation the cluster refuses fails the task, naming the topic, the group and why.

Headwater refuses what Kafka Connect would ignore: a key of a group that ``topic.creation.groups`` does not list,
``include`` or ``exclude`` of the default group, and ``topic.creation.*`` keys on a worker whose
``topic.creation.enable`` is false.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from headwater.runtime.transport.base import Admin, NewTopic
from headwater.sdk.config import REQUIRED, ConfigDef, Importance, Type
from headwater.sdk.errors import ConfigError, ConnectError, RetriableError

log = logging.getLogger(__name__)

PREFIX = "topic.creation."
GROUPS = "topic.creation.groups"
ENABLE = "topic.creation.enable"
"""The worker key that lets source connectors create topics."""
DEFAULT_GROUP = "default"
INCLUDE, EXCLUDE, REPLICATION_FACTOR, PARTITIONS = "include", "exclude", "replication.factor", "partitions"
GROUP_SETTINGS = (INCLUDE, EXCLUDE, REPLICATION_FACTOR, PARTITIONS)
"""A group's own settings; any other key of the group is a config of the topics it creates."""
BROKER_DEFAULT = -1
"""A replication factor or partition count that takes the broker's default (Kafka's ``TopicAdmin.NO_PARTITIONS``)."""

_INCLUDE_DOC = (
    "A list of regular expressions matched against the whole name of each topic the connector writes to: a topic "
    "that one matches (and no exclude pattern does) is created with this group's settings."
)
_EXCLUDE_DOC = "A list of regular expressions; a topic that one matches is not created with this group's settings."
_REPLICATION_DOC = (
    "The replication factor of topics created with this group's settings: a positive number not larger than the "
    "number of brokers, or -1 for the broker's default."
)
_PARTITIONS_DOC = (
    "The number of partitions of topics created with this group's settings, or -1 for the broker's default."
)


def uses_topic_creation(props: Mapping[str, Any]) -> bool:
    """Whether a source connector's config asks for topic creation: it sets a ``topic.creation.`` key (an empty
    ``topic.creation.groups``, which a parsed config always has, asks for nothing)."""
    return any(name.startswith(PREFIX) and (name != GROUPS or _listed(value)) for name, value in props.items())


def _listed(value: Any) -> bool:
    return bool(value.strip() if isinstance(value, str) else value)


def unique_groups(key: str, value: Any) -> None:
    """No group is listed twice."""
    if len(value) != len(set(value)):
        raise ConfigError(key, value, "Duplicate alias provided.")


def replication_factor(key: str, value: Any) -> None:
    """Positive number not larger than the number of brokers in the Kafka cluster, or -1 to use the broker's
    default."""
    if (value != BROKER_DEFAULT and value < 1) or value > 32767:
        raise ConfigError(
            key,
            value,
            "Replication factor must be positive and not larger than the number of brokers in the Kafka cluster, "
            "or -1 to use the broker's default",
        )


def partitions(key: str, value: Any) -> None:
    """Positive number, or -1 to use the broker's default."""
    if value != BROKER_DEFAULT and value < 1:
        raise ConfigError(key, value, "Number of partitions must be positive, or -1 to use the broker's default")


def regex_list(key: str, value: Any) -> None:
    """Every item compiles as a regular expression."""
    for pattern in value:
        try:
            re.compile(pattern)
        except re.error as error:
            raise ConfigError(key, value, f"Syntax error in regular expression: {error}") from None


GROUPS_CONFIG = (
    ConfigDef()
    .define(
        GROUPS,
        Type.LIST,
        "",
        Importance.LOW,
        "Groups of settings for the topics a source connector creates (KIP-158), besides the default group: each "
        "is set by topic.creation.NAME.include, .exclude, .replication.factor, .partitions and any other "
        "topic.creation.NAME.CONFIG, a config of the topics it creates. A topic is created with the settings of "
        "the first group it matches, the default group last. Topic creation is on for a connector that sets "
        "topic.creation.default.replication.factor and topic.creation.default.partitions (both required once any "
        "topic.creation. key is set) while the worker's topic.creation.enable is true; a topic that exists is "
        "left as it is.",
        unique_groups,
        group="Topic Creation",
    )
    .define_prefix(
        PREFIX,
        "topic.creation.GROUP.include, .exclude, .replication.factor and .partitions set a topic creation group "
        "(GROUP default or one listed in topic.creation.groups); any other topic.creation.GROUP.CONFIG is a "
        "config of the topics the group creates, such as topic.creation.default.cleanup.policy=compact.",
    )
)
"""The source connector keys that are always defined: the group list, and the prefix of every group's keys."""


def group_names(props: Mapping[str, Any]) -> list[str]:
    """The groups ``topic.creation.groups`` lists, in order, without repeats and without ``default`` (which always
    exists and is not listed; Kafka Connect drops it with a warning)."""
    raw = props.get(GROUPS)
    items = raw.split(",") if isinstance(raw, str) else list(raw) if isinstance(raw, list | tuple) else []
    listed = [str(item).strip() for item in items if str(item).strip()]
    return [name for name in dict.fromkeys(listed) if name != DEFAULT_GROUP]


def definition(props: Mapping[str, Any]) -> ConfigDef:
    """The keys of the groups ``props`` defines (Kafka Connect's ``SourceConnectorConfig.enrich``): none when it
    does not use topic creation; else the default group's replication factor and partitions, both required, then
    each listed group's include, exclude, replication factor and partitions (by default the default group's)."""
    found = ConfigDef()
    if not uses_topic_creation(props):
        return found
    group = "Topic Creation: default"
    default_prefix = f"{PREFIX}{DEFAULT_GROUP}."  # its include and exclude are refused (see problems)
    found.define(
        f"{default_prefix}{REPLICATION_FACTOR}",
        Type.INT,
        REQUIRED,
        Importance.LOW,
        _REPLICATION_DOC,
        replication_factor,
        group=group,
    )
    found.define(
        f"{default_prefix}{PARTITIONS}", Type.INT, REQUIRED, Importance.LOW, _PARTITIONS_DOC, partitions, group=group
    )
    default_replication = _default_of(found, props, REPLICATION_FACTOR)
    default_partitions = _default_of(found, props, PARTITIONS)
    for name in group_names(props):
        prefix, group = f"{PREFIX}{name}.", f"Topic Creation: {name}"
        found.define(f"{prefix}{INCLUDE}", Type.LIST, "", Importance.LOW, _INCLUDE_DOC, regex_list, group=group)
        found.define(f"{prefix}{EXCLUDE}", Type.LIST, "", Importance.LOW, _EXCLUDE_DOC, regex_list, group=group)
        found.define(
            f"{prefix}{REPLICATION_FACTOR}",
            Type.INT,
            default_replication,
            Importance.LOW,
            f"{_REPLICATION_DOC} Unset: the default group's.",
            replication_factor,
            group=group,
        )
        found.define(
            f"{prefix}{PARTITIONS}",
            Type.INT,
            default_partitions,
            Importance.LOW,
            f"{_PARTITIONS_DOC} Unset: the default group's.",
            partitions,
            group=group,
        )
    return found


def _default_of(found: ConfigDef, props: Mapping[str, Any], setting: str) -> int | None:
    """The default group's ``setting`` as given, the default of the other groups' (``None`` while it is missing or
    bad: that is an error on the default group's key already)."""
    key = found.keys[f"{PREFIX}{DEFAULT_GROUP}.{setting}"]
    try:
        value = key.parse(props.get(key.name))
    except ConfigError:
        return None
    return value if isinstance(value, int) else None


def problems(props: Mapping[str, Any], enabled: bool) -> dict[str, str]:
    """The ``topic.creation.`` keys of ``props`` that would be ignored, each with why: every one when the worker's
    ``topic.creation.enable`` is false (``enabled``), else a key of a group ``topic.creation.groups`` does not list
    and the default group's ``include`` and ``exclude``."""
    keys = [name for name, value in props.items() if name.startswith(PREFIX) and (name != GROUPS or _listed(value))]
    if not enabled:
        return {
            name: f"{name}: this worker's {ENABLE} is false, so it creates no topic for a source connector and "
            "the key would be ignored; remove the topic.creation.* keys, or set topic.creation.enable=true on the "
            "worker"
            for name in keys
        }
    listed = {DEFAULT_GROUP, *group_names(props)}
    longest_first = sorted(listed, key=len, reverse=True)  # a group's name may hold dots
    found: dict[str, str] = {}
    for name in keys:
        if name == GROUPS:
            continue
        group = next((g for g in longest_first if name.startswith(f"{PREFIX}{g}.")), None)
        setting = "" if group is None else name[len(PREFIX) + len(group) + 1 :]
        if group is None and name[len(PREFIX) :] not in listed:
            group = name[len(PREFIX) :].partition(".")[0]
            found[name] = (
                f"{name}: there is no topic creation group {group!r} (topic.creation.groups lists "
                f"{sorted(listed - {DEFAULT_GROUP}) or 'none'}), so the key would be ignored; add {group} to "
                "topic.creation.groups or remove the key"
            )
        elif not setting:
            found[name] = f"{name}: names no setting of a topic creation group, so it would be ignored"
        elif group == DEFAULT_GROUP and setting in (INCLUDE, EXCLUDE):
            found[name] = (
                f"{name}: the default topic creation group matches every topic its connector writes to that no "
                "other group matches, so the key would be ignored; list a group in topic.creation.groups with its "
                "own include and exclude instead"
            )
    return found


@dataclass(frozen=True)
class TopicCreationGroup:
    """One group: which topics it matches and how it creates them (Kafka Connect's ``TopicCreationGroup``)."""

    name: str
    include: re.Pattern[str]
    exclude: re.Pattern[str]
    partitions: int
    replication_factor: int
    config: Mapping[str, str] = field(default_factory=dict)

    def matches(self, topic: str) -> bool:
        """Whether ``topic`` matches an include pattern and no exclude pattern, each over its whole name."""
        return self.exclude.fullmatch(topic) is None and self.include.fullmatch(topic) is not None

    def new_topic(self, topic: str) -> NewTopic:
        return NewTopic(topic, self.partitions, self.replication_factor, dict(self.config))

    def __str__(self) -> str:
        return (
            f"topic creation group {self.name!r} (partitions={self.partitions}, "
            f"replication.factor={self.replication_factor}, configs={dict(self.config)})"
        )


def configured_groups(props: Mapping[str, Any]) -> list[TopicCreationGroup]:
    """The groups a source connector's config defines, in the order they are tried: the listed groups, then the
    default group (which matches every topic; its own include and exclude are not used). Raises
    :class:`ConfigError` for a bad value."""
    parsed = definition(props).parse(props)
    found: list[TopicCreationGroup] = []
    for name in [*group_names(props), DEFAULT_GROUP]:
        prefix = f"{PREFIX}{name}."
        default = name == DEFAULT_GROUP
        config = {
            key[len(prefix) :]: str(value)
            for key, value in props.items()
            if key.startswith(prefix) and key[len(prefix) :] not in GROUP_SETTINGS and value is not None
        }
        found.append(
            TopicCreationGroup(
                name,
                re.compile(".*" if default else "|".join(parsed[f"{prefix}{INCLUDE}"])),
                re.compile("" if default else "|".join(parsed[f"{prefix}{EXCLUDE}"])),
                int(parsed[f"{prefix}{PARTITIONS}"]),
                int(parsed[f"{prefix}{REPLICATION_FACTOR}"]),
                config,
            )
        )
    return found


class TopicCreation:
    """What one source task knows of the topics it writes to: the groups to create them with, and the topics it
    has found or created (Kafka Connect's ``TopicCreation``). Not thread-safe: the task's thread uses it."""

    def __init__(self, groups: list[TopicCreationGroup], admin: Callable[[], Admin]) -> None:
        self.groups = groups
        self._make_admin = admin
        self._admin: Admin | None = None
        self.known: set[str] = set()
        """Topics this task found or created: it does not look at them again."""
        self.created: list[str] = []
        """Topics this task created, in order."""

    @classmethod
    def for_connector(cls, props: Mapping[str, Any], enabled: bool, admin: Callable[[], Admin]) -> TopicCreation | None:
        """The topic creation of a task of the source connector configured by ``props``, making its admin client
        with ``admin`` when it first needs one; ``None`` when the worker's ``topic.creation.enable`` is false
        (``enabled``) or the connector sets no ``topic.creation.`` key."""
        if not uses_topic_creation(props):
            return None
        if not enabled:
            log.warning(
                "source connector %s sets %s, but this worker's %s is false: it creates no topic",
                props.get("name"),
                ", ".join(sorted(name for name in props if name.startswith(PREFIX))),
                ENABLE,
            )
            return None
        return cls(configured_groups(props), admin)

    def first_group(self, topic: str) -> TopicCreationGroup:
        """The first group ``topic`` matches; the default group (last) matches every topic."""
        return next((group for group in self.groups[:-1] if group.matches(topic)), self.groups[-1])

    def ensure(self, topic: str) -> None:
        """Make sure ``topic`` exists before the task's first record to it: ask the cluster, and create it with the
        first matching group's settings when it does not. Raises :class:`RetriableError` when the cluster did not
        answer in time (send again later) and :class:`ConnectError` when the topic cannot be created."""
        log.info("the task sends records to topic %r for the first time: checking whether it exists", topic)
        if self._admin is None:
            self._admin = self._make_admin()
        if topic in self._admin.describe_topics([topic]):
            log.info("topic %r already exists", topic)
            self.known.add(topic)
            return
        group = self.first_group(topic)
        try:
            self._admin.create_topics([group.new_topic(topic)])
        except ConnectError as error:
            retriable = isinstance(error, RetriableError)
            reason = f"{error} (the topic may exist now: check it)" if retriable else str(error)
            raise ConnectError(
                f"cannot create topic {topic!r} with {group}: {reason}. Ensure that the task is authorized to "
                "create topics, that the settings suit the cluster, or that the topic exists, and restart the task"
            ) from None
        log.info("created topic %r with %s", topic, group)
        self.created.append(topic)
        self.known.add(topic)

    def __repr__(self) -> str:
        return f"TopicCreation(groups={[g.name for g in self.groups]}, created={self.created})"
