"""What the demo runs on: a Kafka cluster (given, or a broker started from the local jars) or, without one, the
in-memory transport; and the Spark sink when Java is there, or a pyarrow sink when it is not."""

from __future__ import annotations

import importlib.util
import os
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from headwater.harness.broker import LocalKafkaBroker
from headwater.harness.cluster import BOOTSTRAP_ENV
from headwater.harness.kafka_worker import KafkaInspector
from headwater.harness.maven import INSTALL_HINT, BrokerUnavailable
from headwater.runtime.transport.base import Transport
from headwater.runtime.transport.kafka import KafkaTransport
from headwater.runtime.transport.memory import MemoryBroker, MemoryTransport

Say = Callable[[str], None]


@dataclass
class Backend:
    """A transport and how to look at what went through it."""

    description: str
    transport: Transport
    bootstrap_servers: str | None = None
    """``None`` for the in-memory transport."""
    memory: MemoryBroker | None = None
    stop: Callable[[], None] = field(default=lambda: None, repr=False)

    @property
    def shared(self) -> bool:
        """Whether other programs may use the cluster too (then the demo's names get a suffix of their own)."""
        return self.description.startswith("the Kafka cluster")

    def records(self, topic: str) -> int:
        """How many records ``topic`` holds now."""
        if self.memory is not None:
            return len(self.memory.messages(topic)) if topic in self.memory.topics() else 0
        assert self.bootstrap_servers is not None
        return len(KafkaInspector(self.bootstrap_servers).messages(topic))

    def group_offsets(self, group: str) -> dict[str, int]:
        """The committed offsets of consumer group ``group`` as ``{"topic-partition": offset}``."""
        if self.memory is not None:
            found = self.memory.committed(group)
        else:
            assert self.bootstrap_servers is not None
            found = KafkaInspector(self.bootstrap_servers).committed(group)
        return {f"{tp.topic}-{tp.partition}": offset for tp, offset in sorted(found.items())}


def memory_backend(why: str) -> Backend:
    broker = MemoryBroker()
    return Backend(f"the in-memory transport ({why})", MemoryTransport(broker), memory=broker)


def choose_backend(say: Say, bootstrap: str | None = None, in_memory: bool = False) -> Backend:
    """The cluster at ``bootstrap`` (or ``HEADWATER_KAFKA_BOOTSTRAP``); else a broker started from the local jars
    (fetched with ``mvn`` once); else, or with ``in_memory``, the in-memory transport."""
    if in_memory:
        return memory_backend("asked for with --in-memory")
    given = bootstrap or os.environ.get(BOOTSTRAP_ENV)
    if given:
        return Backend(f"the Kafka cluster at {given}", KafkaTransport(given), bootstrap_servers=given)
    say("starting a Kafka broker from the local jars (fetched with mvn on first use) ...")
    broker = LocalKafkaBroker()
    try:
        broker.start()
    except BrokerUnavailable as error:
        reason = str(error).splitlines()[0]
        say(f"no Kafka broker ({reason}): falling back to the in-memory transport")
        return memory_backend("no Kafka broker could be started")
    servers = broker.bootstrap_servers
    return Backend(
        f"a Kafka {broker.kafka_version} broker from the local jars at {servers}",
        KafkaTransport(servers),
        bootstrap_servers=servers,
        stop=broker.stop,
    )


def spark_missing() -> str | None:
    """Why the Spark sink cannot run here, or ``None`` when it can."""
    if shutil.which("java") is None:
        return f"no Java: Kafka and Spark need Java 17 ({INSTALL_HINT})"
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed (pip install 'headwater[spark-sink]')"
    return None


class SparkStarter(threading.Thread):
    """Starts the process's SparkSession on a thread while the broker starts; the Spark sink task then shares it
    (the connector's own :func:`~headwater.reference_connectors.spark_sink.spark_session`, with its defaults)."""

    def __init__(self) -> None:
        super().__init__(name="demo-spark-start", daemon=True)
        self.started = time.monotonic()
        self.seconds: float | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # loopback, like the rest of the demo
        try:
            from headwater.reference_connectors.spark_sink import SPARK_DEFAULTS, spark_session

            spark_session(SPARK_DEFAULTS, delta=False)
        except BaseException as error:
            self.error = error
        finally:
            self.seconds = time.monotonic() - self.started
