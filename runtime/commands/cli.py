"""The ``headwater`` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from headwater import release
from headwater.runtime.logs.context import configure_logging

WORKER_STACK = ("fastapi", "uvicorn", "cryptography", "pydantic", "starlette", "prometheus_client")
"""The REST API's server stack and the metrics exporter, installed by the ``worker`` extra; the SDK and the simulated
worker do without them."""


def version_line() -> str:
    """What ``headwater --version`` prints: ``headwater 0.1.0 (commit 0123456789abcdef)``, without the commit when
    the installed Headwater does not tell it (see :mod:`headwater.release`)."""
    commit = release.commit()
    return f"headwater {release.version()}" + (f" (commit {commit})" if commit else "")


class VersionAction(argparse.Action):
    """``--version``: prints :func:`version_line` and exits, looking the commit up only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option_string: Any = None
    ) -> None:
        print(version_line())
        parser.exit()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="headwater", description="Kafka Connect for Python.")
    parser.add_argument(
        "--version", action=VersionAction, help="Print the version and the commit it was built from, and exit."
    )
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
            from headwater.runtime.commands.standalone import main as standalone_main

            return standalone_main(args.worker_config, args.connector_configs)
        if args.command == "distributed":
            from headwater.runtime.commands.distributed import main as distributed_main

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
