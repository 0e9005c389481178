"""An in-process broker and its clients, for deterministic tests and the embedded demo.

Nothing here waits on real time: timeouts given to ``poll``/``flush`` are ignored and calls return what is available
now. One re-entrant lock guards all of the broker's state (:mod:`~headwater.runtime.transport.memory.state`), so
clients may be used from several threads. Callbacks (delivery, commit, rebalance) run on the calling thread, outside
that lock. :class:`MemoryBroker` holds the state and is what tests look at and steer; :class:`MemoryTransport` makes
its clients, each of which takes the state alone.
"""

from headwater.runtime.transport.memory.admin import MemoryAdmin
from headwater.runtime.transport.memory.broker import MemoryBroker
from headwater.runtime.transport.memory.consumer import MemoryConsumer
from headwater.runtime.transport.memory.faults import ProducerFaults
from headwater.runtime.transport.memory.log import MemoryLog
from headwater.runtime.transport.memory.membership import MemoryGroupMember
from headwater.runtime.transport.memory.partitioner import key_partition, murmur2
from headwater.runtime.transport.memory.producer import MemoryProducer
from headwater.runtime.transport.memory.state import BrokerState
from headwater.runtime.transport.memory.transactions import MemoryTransactionalProducer
from headwater.runtime.transport.memory.transport import MemoryTransport

__all__ = [
    "BrokerState",
    "MemoryAdmin",
    "MemoryBroker",
    "MemoryConsumer",
    "MemoryGroupMember",
    "MemoryLog",
    "MemoryProducer",
    "MemoryTransactionalProducer",
    "MemoryTransport",
    "ProducerFaults",
    "key_partition",
    "murmur2",
]
