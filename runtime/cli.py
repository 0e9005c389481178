"""The ``headwater`` command."""

from __future__ import annotations

import argparse
import sys

from headwater.runtime.logging_context import configure_logging

WORKER_STACK = ("fastapi", "uvicorn", "pydantic", "starlette", "prometheus_client")
"""The REST API's server stack and the metrics exporter, installed by the ``worker`` extra; the SDK and the simulated
worker do without them."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="headwater", description="Kafka Connect for Python.")
    parser.add_argument("--log-level", default=None, help="Python logging level (default INFO).")
    commands = parser.add_subparsers(dest="command", required=True)
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
    configure_logging(args.log_level or "INFO")
    try:
        if args.command == "standalone":
            from headwater.runtime.standalone import main as standalone_main

            return standalone_main(args.worker_config, args.connector_configs)
        if args.command == "distributed":
            from headwater.runtime.distributed.command import main as distributed_main

            return distributed_main(args.worker_config)
    except ModuleNotFoundError as missing:
        if (missing.name or "").partition(".")[0] not in WORKER_STACK:
            raise
        parser.exit(
            2,
            f"headwater {args.command}: the worker's REST API needs {missing.name}, which is not installed; "
            "install the worker extra: pip install 'headwater[worker]'\n",
        )
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
