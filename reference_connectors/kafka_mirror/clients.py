"""The connector's own librdkafka clients on the source cluster: the tasks' consumer and the partition monitor's
admin client. librdkafka checks their settings when they are made; a setting it rejects becomes a
:class:`ConfigError` naming the config key it came from (``source.``, ``connector.consumer.`` or
``connector.admin.``)."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from headwater.reference_connectors.kafka_mirror.config import MirrorConfig
from headwater.sdk import ConfigError

log = logging.getLogger(__name__)

_PROPERTY = re.compile(r'property:? "([^"]+)"')


def _setting_error(error: KafkaException, settings: Mapping[str, tuple[str, str]], client: str) -> ConfigError:
    reason = error.args[0].str() if error.args and isinstance(error.args[0], KafkaError) else str(error)
    match = _PROPERTY.search(reason)
    value, key = settings.get(match.group(1), (None, "")) if match else (None, "")
    return ConfigError(key or f"source.* ({client})", value, f"librdkafka rejects the {client} setting: {reason}")


def _log_commit(error: KafkaError | None, partitions: list[Any]) -> None:
    failed = [p for p in partitions if p.error is not None]
    if error is not None or failed:
        log.warning("committing mirrored offsets to the source cluster failed: %s", error or failed[0].error)


def make_consumer(config: MirrorConfig) -> Consumer:
    """The source consumer (auto-commit off: the task commits what the worker has committed)."""
    try:
        return Consumer({**config.consumer_config, "on_commit": _log_commit})
    except KafkaException as error:
        raise _setting_error(error, config.consumer_settings, "consumer") from None


def make_admin(config: MirrorConfig) -> AdminClient:
    """The partition monitor's admin client."""
    try:
        return AdminClient(config.admin_config)
    except KafkaException as error:
        raise _setting_error(error, config.admin_settings, "admin client") from None


def check_client_settings(config: MirrorConfig) -> None:
    """Make both clients and let them go at once; raises :class:`ConfigError` for a setting librdkafka rejects."""
    make_consumer(config).close()
    make_admin(config)
