"""Command line of the validation matrix (``python -m validation.matrix {run,report}``, also
reached as ``python -m validation.matrix``): ``run`` drives :mod:`validation.matrix.campaign`,
``report``
writes :mod:`validation.matrix.report`. Kept apart so that the runner never imports the report."""

from __future__ import annotations

import os

# before numpy loads OpenBLAS when run as a script: idle BLAS threads stop spinning
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import argparse  # noqa: E402
import math  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from pathlib import Path  # noqa: E402

from asymptotics.cli.common import (  # noqa: E402
    Parser,
    add_quiet,
    apply_quiet,
    check_writable,
    fail,
    split_list,
)
from asymptotics.cli.common import integer as i_  # noqa: E402
from asymptotics.cli.common import real as r_  # noqa: E402

from ..protocol.estimators import ESTIMATORS
from . import campaign as matrix
from .campaign import ESTIMATOR, TARGETS, run
from .report import write_report


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="python -m validation.matrix", description=matrix.__doc__,
               formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run (or resume) the simulations into the store")
    r.add_argument("--store", type=Path, default=Path("validation/data/matrix_runs.csv"),
                   help="the CSV of repetitions, created or resumed: the export of the "
                        "SQLite store beside it (default: validation/data/matrix_runs.csv)")
    r.add_argument("--d", type=i_("d", 2), default=2000,
                   help="input dimension of the matrix settings (default: 2000)")
    r.add_argument("--seeds", type=i_("seeds", 1), default=8,
                   help="first-round repetitions per setting (default: 8)")
    r.add_argument("--max-seeds", type=i_("max-seeds", 1), default=48,
                   help="at most this many repetitions per setting (default: 48)")
    r.add_argument("--target-se", type=r_("target-se", 0.0), default=2e-3,
                   help="add repetitions until every point's s.e. is below this (0: off; "
                        "default: 0.002)")
    r.add_argument("--n-jobs", type=i_("n-jobs", 1), default=os.cpu_count() or 1,
                   help="worker processes (default: the number of cores)")
    r.add_argument("--no-scaling", action="store_true", help="skip the d-scaling settings")
    r.add_argument("--confirm-seeds", type=i_("confirm-seeds", 0), default=0,
                   help="after a first run: this many fresh repetitions (indices after --seeds) "
                        "for every srf/rf setting with a point beyond 3 s.e. (default: 0)")
    r.add_argument("--models", default="srf,network,rf",
                   help="comma list of the models to simulate (default: srf,network,rf)")
    r.add_argument("--targets", default=",".join(TARGETS),
                   help=f"comma list of the targets g to simulate (default: {','.join(TARGETS)})")
    r.add_argument("--only", action="append", default=[], metavar="KEY",
                   help="only this setting (its key, e.g. 'erf/relu beta=0.5 alpha0=20 eta=1'); "
                        "repeatable")
    r.add_argument("--estimator", choices=ESTIMATORS, default=ESTIMATOR,
                   help=f"test-error estimator of the new repetitions (default: {ESTIMATOR}; the "
                        "store's planned rounds used mc)")
    r.add_argument("--scaling-seeds", type=i_("scaling-seeds", 1), default=4,
                   help="repetitions of each d-scaling setting (default: 4)")
    r.add_argument("--time-budget", type=r_("time-budget", 0.0, strict_lo=True),
                   default=math.inf, help="stop after this many seconds (default: no limit)")
    add_quiet(r)
    rep = sub.add_parser("report", help="write validation/REPORT.md and its figures")
    rep.add_argument("--store", type=Path, default=Path("validation/data/matrix_runs.csv"),
                     help="the CSV of repetitions to report (default: "
                          "validation/data/matrix_runs.csv)")
    rep.add_argument("--out", type=Path, default=Path("validation/REPORT.md"),
                     help="the report to write (default: validation/REPORT.md)")
    rep.add_argument("--d", type=i_("d", 2), default=2000,
                     help="input dimension of the reported settings (default: 2000)")
    rep.add_argument("--seeds", type=i_("seeds", 1), default=8,
                     help="planned repetitions per setting (default: 8)")
    add_quiet(rep)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    p = build_parser()
    args = p.parse_args(argv)
    try:
        if args.command == "report":  # the option the user gave first, then the default store
            check_writable(args.out, "--out")
        check_writable(args.store, "--store")
        if args.command != "report":
            split_list(args.models, "--models")
            split_list(args.targets, "--targets")
        return _main(args)
    except (ValueError, TypeError, OSError, argparse.ArgumentTypeError) as exc:
        return fail(str(exc))


def _main(args: argparse.Namespace) -> int:
    progress = not apply_quiet(args)
    if args.command == "run":
        common = dict(d=args.d, seeds=args.seeds, max_seeds=args.max_seeds,
                      target_se=args.target_se, n_jobs=args.n_jobs, scaling=not args.no_scaling,
                      time_budget=args.time_budget, scaling_seeds=args.scaling_seeds,
                      models=tuple(args.models.split(",")),
                      targets=tuple(args.targets.split(",")), estimator=args.estimator,
                      only=tuple(args.only), progress=progress)
        run(args.store, **common)  # the planned repetitions (and the d-scaling settings)
        if args.confirm_seeds:  # then fresh ones for the settings that missed, read off the store
            run(args.store, **{**common, "scaling": False}, confirm_seeds=args.confirm_seeds)
    else:
        write_report(args.store, args.out, d=args.d, seeds=args.seeds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
