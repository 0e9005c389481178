"""A consumer waiting for its group to rebalance says so in the log: on fake clocks, when and how often; on the real
broker, a new member waits for the session of a member killed without leaving the group to expire, and says so."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest

from headwater.runtime.transport.kafka import KafkaConsumer, KafkaTransport
from headwater.runtime.transport.kafka.group_wait import GroupWait
from support.clocks import Clocks
from support.kafka_clients import Listener, poll_until

LOGGER = "headwater.runtime.transport.kafka.group_wait"


def wait_of(clocks: Clocks) -> GroupWait:
    config = {"session.timeout.ms": "45000", "max.poll.interval.ms": 300000}
    return GroupWait("connect-sink", config, lambda: clocks.monotonic, lambda: clocks.wall)


def messages(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == LOGGER]


def test_a_wait_is_logged_after_a_few_seconds_then_every_half_minute_and_its_end(
    clocks: Clocks, caplog: pytest.LogCaptureFixture
) -> None:
    wait = wait_of(clocks)
    with caplog.at_level(logging.INFO, LOGGER):
        wait.joining()
        for _ in range(39):  # a poll every 0.125 s for 4.875 s
            clocks.advance(0.125)
            wait.check()
        assert messages(caplog) == []
        clocks.advance(0.125)
        wait.check()
        wait.check()
        [(level, said)] = messages(caplog)
        assert level == logging.INFO
        assert said.startswith("waiting for the group connect-sink to rebalance: no partitions assigned since ")
        assert "(5 s); the group coordinator may wait up to session.timeout.ms=45000 ms, until about " in said
        assert "for members of a worker that stopped without leaving the group (killed, say) to expire" in said
        clocks.advance(29.875)
        wait.check()
        assert len(messages(caplog)) == 1
        clocks.advance(0.125)
        wait.check()
        assert len(messages(caplog)) == 2  # 35 s: still within the session timeout
        clocks.advance(30)
        wait.check()
        level, said = messages(caplog)[-1]
        assert level == logging.WARNING
        assert "(65 s), longer than session.timeout.ms=45000 ms" in said
        assert "for up to max.poll.interval.ms=300000 ms" in said
        wait.joined(3)
        assert messages(caplog)[-1] == (
            logging.INFO,
            "the group connect-sink rebalanced after 65.0 s: 3 partition(s) assigned",
        )
        clocks.advance(60)
        wait.check()
        assert len(messages(caplog)) == 4, "nothing more once joined"


def test_a_short_wait_and_a_consumer_that_leaves_say_nothing(clocks: Clocks, caplog: pytest.LogCaptureFixture) -> None:
    wait = wait_of(clocks)
    with caplog.at_level(logging.INFO, LOGGER):
        wait.joining()
        clocks.advance(2)
        wait.joined(0)  # a completed join ends the wait, even with no partitions for this member
        clocks.advance(10)
        wait.check()
        wait.joining()
        wait.left()
        clocks.advance(10)
        wait.check()
    assert messages(caplog) == []
    assert not wait.waiting


# ---- on the real broker ----------------------------------------------------------------------------------------

DEAD_MEMBER = textwrap.dedent(
    """
    import sys
    from confluent_kafka import Consumer

    bootstrap, group, topic = sys.argv[1:]
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "partition.assignment.strategy": "cooperative-sticky",
        "session.timeout.ms": 9000, "heartbeat.interval.ms": 500,
    })
    consumer.subscribe([topic], on_assign=lambda c, partitions: print("assigned", len(partitions), flush=True))
    while True:
        consumer.poll(0.1)
    """
)


@pytest.fixture
def dead_member(kafka_bootstrap: str, topic: str, unique_name: str) -> Iterator[subprocess.Popen[str]]:
    """A member of the group ``unique_name`` in a process of its own, with all of ``topic``'s partitions; killed
    (SIGKILL, no LeaveGroup) by the test."""
    member = subprocess.Popen(
        [sys.executable, "-c", DEAD_MEMBER, kafka_bootstrap, unique_name, topic],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert member.stdout is not None
        assert member.stdout.readline().split() == ["assigned", "3"]
        yield member
    finally:
        member.kill()
        member.wait(30)
        if member.stdout is not None:
            member.stdout.close()


@pytest.mark.kafka
def test_a_new_member_waiting_for_a_killed_members_session_says_so(
    transport: KafkaTransport,
    topic: str,
    unique_name: str,
    dead_member: subprocess.Popen[str],
    consumers: list[KafkaConsumer],
    caplog: pytest.LogCaptureFixture,
) -> None:
    dead_member.kill()
    dead_member.wait(30)
    consumer = transport.consumer(unique_name, {"session.timeout.ms": 9000})
    consumers.append(consumer)
    listener = Listener()
    with caplog.at_level(logging.INFO, LOGGER):
        consumer.subscribe([topic], listener)
        poll_until(consumers, lambda _: bool(listener.events), timeout_s=60)
    assert listener.events[0][0] == "assigned" and len(listener.events[0][1]) == 3
    said = messages(caplog)
    assert len(said) == 2, said
    assert said[0][1].startswith(f"waiting for the group {unique_name} to rebalance: no partitions assigned since ")
    assert "session.timeout.ms=9000 ms" in said[0][1]
    assert said[1][1].startswith(f"the group {unique_name} rebalanced after ")
    assert said[1][1].endswith(": 3 partition(s) assigned")
