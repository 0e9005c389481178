"""The in-memory broker's views of its topics."""

from __future__ import annotations

from headwater.runtime.transport.memory import MemoryBroker, MemoryProducer


def test_compacted_view_keeps_the_latest_value_per_key_and_drops_tombstones() -> None:
    broker = MemoryBroker()
    broker.create_topic("c", 1, {"cleanup.policy": "compact"})
    producer = MemoryProducer(broker.state, {})
    for key, value in [(b"a", b"1"), (b"b", b"1"), (b"a", b"2"), (b"b", None), (b"c", b"1")]:
        producer.produce("c", value, key=key)
    view = broker.compacted("c")
    assert {k: m.value for k, m in view.items()} == {b"a": b"2", b"c": b"1"}
    assert view[b"a"].offset == 2
    assert len(broker.messages("c")) == 5
    assert broker.topic_config("c") == {"cleanup.policy": "compact"}
