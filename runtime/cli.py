"""The ``headwater`` command."""

from __future__ import annotations

import argparse
import logging
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="headwater", description="Kafka Connect for Python.")
    parser.add_argument("--log-level", default="WARNING", help="Python logging level (default WARNING).")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="Run an end-to-end pipeline on an embedded worker.")
    demo.add_argument("--seconds", type=float, default=4.0, help="How long the pipeline runs (default 4).")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.command == "demo":
        from headwater.runtime.demo import main as demo_main

        return demo_main(args.seconds)
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
