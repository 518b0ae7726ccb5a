"""Command line: ``python -m validation {compare,spectrum,multistep,steps,sweep} ...``.

Each subcommand lives in the module named after it (``multistep``: in ``multistep/cli.py``, beside
the simulator it drives) and registers itself through
``add_subparser(subparsers)``, which must ``set_defaults(func=run_cli)``; ``run_cli(args)``
returns the exit status. Bad input exits with status 2 and a one-line message.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence

from asymptotics.cli.common import Parser, fail
from asymptotics.cli.common import integer as _integer

SUBCOMMAND_MODULES = ("compare", "spectrum", "multistep.cli", "experiments.steps_compare",
                      "sweep")


# the shared machinery (one parser class for every command line) lives in asymptotics.cli.common
integer = _integer
_Parser = Parser


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m validation",
                     description="Monte Carlo ground truth for giantstep and its comparison "
                                 "with the asymptotic theory.")
    sub = parser.add_subparsers(dest="command", required=True)
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
    from asymptotics.core.meta import one_line_warnings

    args = build_parser().parse_args(argv)
    one_line_warnings()
    try:
        return int(args.func(args) or 0)
    except (ValueError, TypeError, MemoryError, OverflowError, ZeroDivisionError,
            OSError) as exc:
        return fail(str(exc))
