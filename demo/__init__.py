"""The README's main job (``make demo``): change data capture from a SQLite database into Kafka and, through the
Spark sink, into a Parquet table, on an embedded worker managed over its REST API, ending with a summary of what
happened (records moved, committed offsets, heartbeats, active topics, where the table is).

It runs on what the machine has: a Kafka cluster given by ``--bootstrap`` or ``HEADWATER_KAFKA_BOOTSTRAP``, else a
broker started from the local jars (Java and Maven), else the in-memory transport; the Spark sink where Java is,
else a pyarrow sink. Run it with ``python -m headwater.demo``.
"""

from headwater.demo.command import main
from headwater.demo.pipeline import DemoFailed, DemoOptions, run_demo
from headwater.demo.shop import Shop
from headwater.demo.sink import ParquetFileSink
from headwater.demo.summary import Summary, read_table

__all__ = ["DemoFailed", "DemoOptions", "ParquetFileSink", "Shop", "Summary", "main", "read_table", "run_demo"]
