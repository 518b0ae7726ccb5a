"""Command line: ``python -m validation {compare,spectrum,multistep,sweep} ...``.

Each subcommand lives in the module named after it and registers itself through
``add_subparser(subparsers)``, which must ``set_defaults(func=run_cli)``; ``run_cli(args)``
returns the exit status. Bad input exits with status 2 and a one-line message.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from .argtypes import integer  # noqa: F401  (re-exported)

SUBCOMMAND_MODULES = ("compare", "spectrum", "multistep", "sweep")


class _Parser(argparse.ArgumentParser):
    """argparse that reports bad input as a single line and exits with status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m validation",
                     description="Monte Carlo ground truth for giantstep and its comparison "
                                 "with the asymptotic theory.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name in SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(f"validation.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"validation.{name}":
                raise
            continue
        if hasattr(module, "add_subparser"):
            module.add_subparser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, TypeError, MemoryError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
