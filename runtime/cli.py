"""The ``headwater`` command."""

from __future__ import annotations

import argparse
import logging
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="headwater", description="Kafka Connect for Python.")
    parser.add_argument(
        "--log-level", default=None, help="Python logging level (default INFO for the workers, else WARNING)."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="Run an end-to-end pipeline on an embedded worker.")
    demo.add_argument("--seconds", type=float, default=4.0, help="How long the pipeline runs (default 4).")
    standalone = commands.add_parser(
        "standalone",
        help="Run a standalone worker with connectors from files, like connect-standalone; stop with SIGTERM.",
    )
    standalone.add_argument("worker_config", metavar="WORKER_PROPS", help="Worker config: .properties or .json.")
    standalone.add_argument(
        "connector_configs", metavar="CONNECTOR_PROPS", nargs="*", help="Connector configs: .properties or .json."
    )
    distributed = commands.add_parser(
        "distributed",
        help="Run a worker of a cluster sharing connectors through Kafka, like connect-distributed; stop with SIGTERM.",
    )
    distributed.add_argument("worker_config", metavar="WORKER_PROPS", help="Worker config: .properties or .json.")
    args = parser.parse_args(argv)
    level = args.log_level or ("INFO" if args.command in ("standalone", "distributed") else "WARNING")
    logging.basicConfig(level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.command == "demo":
        from headwater.runtime.demo import main as demo_main

        return demo_main(args.seconds)
    if args.command == "standalone":
        from headwater.runtime.standalone import main as standalone_main

        return standalone_main(args.worker_config, args.connector_configs)
    if args.command == "distributed":
        from headwater.runtime.distributed.command import main as distributed_main

        return distributed_main(args.worker_config)
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
