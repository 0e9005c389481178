"""Admin requests on a real Kafka cluster through confluent-kafka's admin client: topics and consumer groups."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Concatenate, ParamSpec, TypeVar

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicCollection
from confluent_kafka import TopicPartition as RdTopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic as RdNewTopic

from headwater.runtime.transport.base import NewTopic
from headwater.runtime.transport.kafka.errors import TOPIC_MISSING, connect_error
from headwater.sdk.errors import ConnectError, RetriableError
from headwater.sdk.records import TopicPartition

log = logging.getLogger(__name__)

_P = ParamSpec("_P")
_R = TypeVar("_R")

ADMIN_TIMEOUT_S = 30.0
"""How long an admin request may take (and a consumer's request for the topics its pattern matches)."""

_COORDINATOR_MOVING = (
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.NOT_COORDINATOR,
)


def _coordinator_moving(error: KafkaError) -> bool:
    """Whether ``error`` says the group's coordinator is loading or moving (retriable: ask again)."""
    return error.code() in _COORDINATOR_MOVING or "Coordinator load in progress" in error.str()


def _serving_logs(method: Callable[Concatenate[KafkaAdmin, _P], _R]) -> Callable[Concatenate[KafkaAdmin, _P], _R]:
    """After the admin request, hand over the client's librdkafka log lines (confluent-kafka queues them for
    ``poll`` once a ``logger`` is set), however it ended."""

    def serving(self: KafkaAdmin, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(self, *args, **kwargs)
        finally:
            self._admin.poll(0)

    return serving


class KafkaAdmin:
    """Admin requests; each hands over the client's librdkafka log lines when it returns."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self._admin = AdminClient(dict(config))

    @_serving_logs
    def create_topics(self, topics: Sequence[NewTopic]) -> None:
        if not topics:
            return
        requests = [RdNewTopic(t.name, t.partitions, t.replication_factor, config=dict(t.config)) for t in topics]
        for name, future in self._admin.create_topics(requests, operation_timeout=30).items():
            try:
                future.result(timeout=60)
            except KafkaException as error:
                if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise ConnectError(f"cannot create topic {name}: {error.args[0].str()}") from None
            except TimeoutError:
                raise RetriableError(f"cannot create topic {name}: no answer from the cluster in 60 s") from None

    @_serving_logs
    def list_topics(self) -> dict[str, int]:
        metadata = self._admin.list_topics(timeout=30)
        return {name: len(topic.partitions) for name, topic in metadata.topics.items()}

    @_serving_logs
    def describe_topics(self, names: Sequence[str]) -> dict[str, int]:
        """See :meth:`Admin.describe_topics`: Kafka's DescribeTopics (a metadata request naming the topics would
        create them on a broker that creates topics on first use)."""
        if not names:
            return {}
        found: dict[str, int] = {}
        try:
            futures = self._admin.describe_topics(TopicCollection(list(names)), request_timeout=ADMIN_TIMEOUT_S)
        except KafkaException as error:
            failure = connect_error(error)
            raise type(failure)(f"cannot describe topics {list(names)}: {failure}") from None
        for name, future in futures.items():
            try:
                found[name] = len(future.result(timeout=ADMIN_TIMEOUT_S).partitions)
            except KafkaException as error:
                code = error.args[0].code()
                if code in TOPIC_MISSING:
                    continue
                failure = connect_error(error)
                raise type(failure)(f"cannot describe topic {name}: {failure}") from None
            except TimeoutError:
                raise RetriableError(
                    f"cannot describe topic {name}: no answer from the cluster in {ADMIN_TIMEOUT_S:.0f} s"
                ) from None
        return found

    @_serving_logs
    def list_group_offsets(self, group_id: str) -> dict[TopicPartition, int]:
        request = [ConsumerGroupTopicPartitions(group_id)]
        deadline = time.monotonic() + ADMIN_TIMEOUT_S
        backoff = 0.1
        while True:
            try:
                future = self._admin.list_consumer_group_offsets(request, request_timeout=ADMIN_TIMEOUT_S)[group_id]
                found = future.result(timeout=ADMIN_TIMEOUT_S)
                break
            except KafkaException as error:
                # a broker that has just started (or moved the group's coordinator) answers "Coordinator load in
                # progress" for a while: Kafka's own admin client retries that, and so does this
                if not _coordinator_moving(error.args[0]) or time.monotonic() + backoff > deadline:
                    raise ConnectError(error.args[0].str()) from None
                time.sleep(backoff)
                backoff = min(backoff * 2, 2.0)
            except TimeoutError:
                raise ConnectError(f"no answer from the cluster in {ADMIN_TIMEOUT_S:.0f} s") from None
        return {
            TopicPartition(tp.topic, tp.partition): tp.offset for tp in found.topic_partitions or [] if tp.offset >= 0
        }

    @_serving_logs
    def alter_group_offsets(self, group_id: str, offsets: Mapping[TopicPartition, int]) -> None:
        partitions = [RdTopicPartition(tp.topic, tp.partition, offset) for tp, offset in offsets.items()]
        request = [ConsumerGroupTopicPartitions(group_id, partitions)]
        try:
            future = self._admin.alter_consumer_group_offsets(request, request_timeout=ADMIN_TIMEOUT_S)[group_id]
            future.result(ADMIN_TIMEOUT_S)
        except KafkaException as error:
            raise ConnectError(error.args[0].str()) from None
        except TimeoutError:
            raise ConnectError(f"no answer from the cluster in {ADMIN_TIMEOUT_S:.0f} s") from None

    @_serving_logs
    def delete_group(self, group_id: str) -> None:
        try:
            self._admin.delete_consumer_groups([group_id], request_timeout=ADMIN_TIMEOUT_S)[group_id].result(
                ADMIN_TIMEOUT_S
            )
        except KafkaException as error:
            if error.args[0].code() != KafkaError.GROUP_ID_NOT_FOUND:
                raise ConnectError(error.args[0].str()) from None
        except TimeoutError:
            raise ConnectError(f"no answer from the cluster in {ADMIN_TIMEOUT_S:.0f} s") from None

    @_serving_logs
    def delete_topics(self, names: Sequence[str], wait: bool = True) -> None:
        if not names:
            return
        futures = self._admin.delete_topics(list(names), operation_timeout=30)
        if not wait:
            for name, future in futures.items():
                future.add_done_callback(functools.partial(_log_deletion, name))
            return
        for name, future in futures.items():
            try:
                future.result(timeout=60)
            except KafkaException as error:
                raise ConnectError(f"cannot delete topic {name}: {error.args[0].str()}") from None
            except TimeoutError:
                raise RetriableError(f"cannot delete topic {name}: no answer from the cluster in 60 s") from None


def _log_deletion(topic: str, future: Any) -> None:
    error = future.exception()
    if error is not None:
        log.info("topic %s was not deleted: %s", topic, error)
    else:
        log.info("deleted topic %s", topic)
