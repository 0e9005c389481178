"""The confluent-kafka admin client on a real broker."""

from __future__ import annotations

import pytest

from headwater.runtime.transport.base import NewTopic
from headwater.runtime.transport.kafka import KafkaTransport
from headwater.sdk.errors import ConnectError

pytestmark = pytest.mark.kafka


def test_admin_creates_compacted_topics_and_lists_them(transport: KafkaTransport, unique_name: str) -> None:
    admin = transport.admin()
    admin.create_topics([NewTopic(unique_name, 2, 1, {"cleanup.policy": "compact"})])
    admin.create_topics([NewTopic(unique_name, 5, 1)])  # exists: left as it is
    assert admin.list_topics()[unique_name] == 2
    admin.delete_topics([unique_name])
    with pytest.raises(ConnectError, match=unique_name):
        admin.delete_topics([unique_name])
