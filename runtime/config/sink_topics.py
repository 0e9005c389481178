"""The topics a sink connector consumes: a list (``topics``) or a pattern (``topics.regex``), one of the two, as
Kafka Connect's ``SinkConnectorConfig.validate`` checks them.

With ``topics.regex`` a sink task consumes every topic whose whole name matches the pattern (Java's
``Pattern.matches``; the pattern is a Python regular expression), including topics created while it runs: its
consumer looks at the cluster's topics again every ``metadata.max.age.ms`` (a consumer setting, 5 minutes by default
as with Java's consumer; ``consumer.override.metadata.max.age.ms`` sets it for one connector) and joins the new
ones, as Java's consumer does with a pattern subscription (``WorkerSinkTask`` subscribes with the pattern). The
broker's internal topics are never matched (Java's ``exclude.internal.topics``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

TOPICS, TOPICS_REGEX = "topics", "topics.regex"
DLQ_TOPIC = "errors.deadletterqueue.topic.name"


def listed(value: Any) -> list[str]:
    """The topics a ``topics`` value (a comma-separated string or a list) names."""
    items = value.split(",") if isinstance(value, str) else list(value or ())
    return [str(item).strip() for item in items if str(item).strip()]


def _blank(value: Any) -> bool:
    return not (value.strip() if isinstance(value, str) else value)


def problems(props: Mapping[str, Any]) -> dict[str, list[str]]:
    """What is wrong with how a sink config names its topics, by key, in Kafka Connect's words: both or neither of
    ``topics`` and ``topics.regex``, or a dead-letter topic the sink would consume."""
    topics, pattern = props.get(TOPICS), props.get(TOPICS_REGEX)
    has_topics, has_pattern = not _blank(topics), not _blank(pattern)
    found: dict[str, list[str]] = {}
    if has_topics and has_pattern:
        message = f"{TOPICS} and {TOPICS_REGEX} are mutually exclusive options, but both are set."
        found = {TOPICS: [message], TOPICS_REGEX: [message]}
    if not has_topics and not has_pattern:
        message = f"Must configure one of {TOPICS} or {TOPICS_REGEX}"
        found = {TOPICS: [message], TOPICS_REGEX: [message]}
    dlq = str(props.get(DLQ_TOPIC) or "").strip()
    if dlq and has_topics and dlq in listed(topics):
        found.setdefault(TOPICS, []).append(
            f"The DLQ topic '{dlq}' may not be included in the list of topics ('{TOPICS}={listed(topics)}') "
            "consumed by the connector"
        )
    if dlq and has_pattern and matches(str(pattern), dlq):
        found.setdefault(TOPICS_REGEX, []).append(
            f"The DLQ topic '{dlq}' may not be matched by the regex for the topics ('{TOPICS_REGEX}={pattern}') "
            "consumed by the connector"
        )
    return found


def matches(pattern: str, topic: str) -> bool:
    """Whether ``topic`` matches ``pattern`` over its whole name; ``False`` for a pattern that does not compile
    (that is an error on its key already)."""
    try:
        return re.fullmatch(pattern, topic) is not None
    except re.error:
        return False
