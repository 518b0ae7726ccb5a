"""``python -m asymptotics hermite EXPR``: the Hermite expansion, leap index and staircase of a
multi-index target, printed by :func:`asymptotics.coefficients.hermite.report`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from asymptotics.multiindex.staircase import report


def add_subparser(subparsers) -> argparse.ArgumentParser:
    """Register ``hermite`` on an argparse subparsers object."""
    p = subparsers.add_parser(
        "hermite", help="Hermite expansion, leap index and staircase of a target g(z1..zk)",
        description="Hermite expansion (probabilists' He_n), coefficient tensors, leap index "
                    "(Dandi et al. 2023, Def. 3) and staircase prediction of a multi-index target.")
    p.add_argument("target", help="expression in z1..zk, e.g. 'z1 + z1*z2 + z1*z2*z3', "
                                  "'He3(z1)', 'tanh(z1)*z2'")
    p.add_argument("--max-degree", type=int, default=None,
                   help="highest degree for non-polynomial targets (default 6)")
    p.add_argument("--nodes", type=int, default=None,
                   help="Gauss-Hermite nodes per axis for non-polynomial targets")
    p.add_argument("--tol", type=float, default=1e-9,
                   help="relative threshold below which a coefficient counts as zero "
                        "(default: 1e-9)")
    p.set_defaults(func=run_cli)
    return p


def run_cli(args: argparse.Namespace) -> int:
    """Print :func:`report`; bad input: one line on stderr, exit status 2."""
    try:
        if args.max_degree is not None and args.max_degree < 1:
            raise ValueError(f"--max-degree must be >= 1, got {args.max_degree}")
        if args.nodes is not None and args.nodes < 2:
            raise ValueError(f"--nodes must be >= 2, got {args.nodes}")
        text = report(args.target, max_degree=args.max_degree, nodes=args.nodes, tol=args.tol)
    except (ValueError, TypeError) as exc:
        msg = " ".join(str(exc).split())
        print(f"error: {msg}", file=sys.stderr)
        return 2
    print(text)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Stand-alone entry: ``python -m asymptotics.cli.hermite EXPR``."""
    from asymptotics.cli.common import Parser

    parser = Parser(prog="python -m asymptotics.cli.hermite")
    sub = parser.add_subparsers(dest="command", required=True)
    add_subparser(sub)
    args = parser.parse_args(["hermite", *(argv if argv is not None else sys.argv[1:])])
    return run_cli(args)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
