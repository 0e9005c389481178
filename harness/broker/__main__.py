"""``python -m headwater.harness.broker fetch|start|stop``: ``fetch`` prints the jars directory, ``start`` leaves a
broker running (data under ``<cache root>/broker`` unless ``--data-dir``) and prints its bootstrap servers, ``stop``
stops it and prints the bootstrap servers it had."""

from __future__ import annotations

import argparse
import contextlib
import logging
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from headwater.harness.broker.process import LocalKafkaBroker, stop_detached
from headwater.harness.maven import KAFKA_VERSION, BrokerUnavailable, cache_root, fetch_jars


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m headwater.harness.broker", description="A single-node Kafka broker from Maven Central jars."
    )
    parser.add_argument("command", choices=["fetch", "start", "stop"])
    parser.add_argument("--kafka-version", default=KAFKA_VERSION)
    parser.add_argument("--data-dir", type=Path, default=None, help="default: <cache root>/broker")
    parser.add_argument("--timeout", type=float, default=90.0, help="seconds to wait for the broker to start")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")  # to stderr
    data_dir = args.data_dir or cache_root() / "broker"
    try:
        if args.command == "fetch":
            print(fetch_jars(kafka_version=args.kafka_version))
        elif args.command == "start":
            with contextlib.suppress(BrokerUnavailable):
                if (running := LocalKafkaBroker.attach(data_dir)).running:
                    print(running.bootstrap_servers)
                    return 0
            shutil.rmtree(data_dir, ignore_errors=True)
            broker = LocalKafkaBroker(data_dir=data_dir, kafka_version=args.kafka_version, keep=True)
            broker.start(timeout_s=args.timeout)
            broker.detach()
            print(broker.bootstrap_servers)
        else:
            broker = LocalKafkaBroker.attach(data_dir)
            stop_detached({"data_dir": str(data_dir)})
            print(broker.bootstrap_servers)
    except BrokerUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
