"""``python -m headwater.demo`` (``make demo``): run the demo and print its summary."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from headwater.demo.pipeline import DemoFailed, DemoOptions, run_demo
from headwater.demo.worker import RestError
from headwater.runtime.logs.context import configure_logging


def main(argv: Sequence[str] | None = None) -> int:
    """0 when the table holds every change exactly once, 1 when not or when a step failed (said on stderr)."""
    parser = argparse.ArgumentParser(
        prog="python -m headwater.demo",
        description="CDC from SQLite into Kafka and a Parquet table, on an embedded worker managed over REST.",
    )
    parser.add_argument("--dir", type=Path, default=None, help="where the files go (default: a new temporary one)")
    parser.add_argument(
        "--bootstrap", default=None, help="a running Kafka cluster to use (or HEADWATER_KAFKA_BOOTSTRAP)"
    )
    parser.add_argument("--in-memory", action="store_true", help="use the in-memory transport, not Kafka")
    parser.add_argument("--without-spark", action="store_true", help="write the table with pyarrow, not Spark")
    parser.add_argument("--timeout", type=float, default=240.0, help="seconds the whole run may take (default 240)")
    parser.add_argument("--log-level", default="ERROR", help="Python logging level of the worker (default ERROR)")
    args = parser.parse_args(argv)
    configure_logging(args.log_level)
    options = DemoOptions(args.dir, args.bootstrap, args.in_memory, not args.without_spark, args.timeout)
    try:
        summary = run_demo(options)
    except (DemoFailed, RestError) as error:
        print(f"headwater demo: error: {error}", file=sys.stderr)
        return 1
    print("\n".join(summary.lines()), flush=True)
    return 0 if summary.exactly_once else 1
