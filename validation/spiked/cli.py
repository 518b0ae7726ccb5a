"""Command line: ``python -m validation.spiked {run,reference,report,readouts}``.

``run`` simulates the campaign settings missing from the store (:mod:`validation.campaign`:
resumable, parallel with ``--n-jobs``, a time budget) and exports the runs' CSV; ``reference``
solves the semi-empirical reference equations at the campaign points; ``report`` compares the
runs of the CSV with the theory and writes ``SPIKED.md`` (and its figure) into ``--out``.
``readouts run|report`` is the finite-support readout campaign (``READOUTS.md``).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

from asymptotics.cli.common import (
    Parser,
    add_quiet,
    apply_quiet,
    check_writable,
    fail,
    integer,
    split_list,
)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m validation.spiked",
                    description="Monte Carlo of the K-group, r-spike spiked random-features "
                                "model against its theory: run the campaign, write the report.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="simulate the campaign settings missing from the store",
                         description="Simulate the campaign settings missing from the store "
                                     "(resumable, progress lines; then export the runs' CSV).")
    run.add_argument("--names", type=lambda t: split_list(t, "--names"), default=None,
                     help="comma-separated setting names (default: all; see --list)")
    run.add_argument("--d", type=integer("--d", 10), default=None,
                     help="input dimension (default 1000; p = beta d)")
    run.add_argument("--seeds", type=integer("--seeds", 2), default=None,
                     help="repetitions per setting (default 16)")
    run.add_argument("--store", default=None,
                     help="the SQLite store of the runs (default: spiked_runs.sqlite beside "
                          "the CSV; it starts from the runs of the CSV)")
    run.add_argument("--csv", default=None,
                     help="the CSV every stored run is exported to (default: the committed "
                          "validation/reports/data/spiked_runs.csv in a checkout)")
    run.add_argument("--n-jobs", type=integer("--n-jobs", 1), default=1,
                     help="worker processes (default 1)")
    run.add_argument("--budget-s", type=float, default=None,
                     help="start no setting after this many seconds (run again to go on)")
    add_quiet(run)
    run.add_argument("--list", action="store_true", help="list the settings and exit")
    ref = sub.add_parser("reference", help="solve the semi-empirical reference at the points",
                         description="Solve the semi-empirical equations (numpy reference) on "
                                     "the bulk of repetition 0 of each setting (resumable; "
                                     "exported to validation/reports/data/"
                                     "spiked_reference.csv).")
    ref.add_argument("--names", type=lambda t: split_list(t, "--names"), default=None,
                     help="comma-separated setting names (default: all with p <= --max-p)")
    ref.add_argument("--reps", type=lambda t: [int(v) for v in split_list(t, "--reps")],
                     default=[0], help="repetitions whose bulk is used (default 0)")
    ref.add_argument("--max-p", type=integer("--max-p", 2), default=1000,
                     help="skip settings wider than this (default 1000)")
    ref.add_argument("--n-jobs", type=integer("--n-jobs", 1), default=1,
                     help="worker processes (default 1)")
    add_quiet(ref)
    rep = sub.add_parser("report", help="write the report from the store",
                         description="Compare every stored point with the theory and write "
                                     "SPIKED.md.")
    rep.add_argument("--out", default=None,
                     help="directory of the report (default: validation/reports in a source "
                          "checkout; required when the package is installed)")
    rep.add_argument("--csv", default=None,
                     help="the runs' CSV (default: the committed one)")
    rep.add_argument("--no-finite-p", action="store_true",
                     help="skip the finite-width theory column")
    add_quiet(rep)
    ro = sub.add_parser("readouts", help="one giant step with a finite-support readout "
                        "(THEORY.md §11): run the campaign or write READOUTS.md",
                        description="Monte Carlo of the network and of the K-group sRF model of "
                                    "one giant step with the constant and pm1 initial readouts "
                                    "(validation/spiked/readouts.py).")
    ro.add_argument("action", choices=("run", "report"),
                    help="run: simulate the missing (setting, model, readout, d) tasks into the "
                         "store and export its CSV; report: write READOUTS.md from the CSV")
    ro.add_argument("--names", type=lambda t: split_list(t, "--names"), default=None,
                    help="run: comma-separated setting names (default: all)")
    ro.add_argument("--d", type=integer("--d", 10), default=None,
                    help="run: input dimension (default: the committed plan, d = 800 and the "
                         "network's d scan; p = beta d)")
    ro.add_argument("--seeds", type=integer("--seeds", 2), default=None,
                    help="run: repetitions per point (default 16)")
    ro.add_argument("--models", type=lambda t: split_list(t, "--models"), default=None,
                    help="run: comma-separated models among network, srf (default: both)")
    ro.add_argument("--store", default=None, help="run: the SQLite store (default: "
                    "readouts_runs.sqlite beside the CSV)")
    ro.add_argument("--csv", default=None, help="run: the CSV the runs are exported to; report: "
                    "the runs read (default: the committed CSV in a checkout, else the user "
                    "cache)")
    ro.add_argument("--out", default=None, help="report: the output file (default: "
                    "validation/reports/READOUTS.md in a checkout; an installed package needs "
                    "it)")
    add_quiet(ro)
    return parser


def _readouts_cli(args: argparse.Namespace) -> int:
    from . import readouts

    if args.action == "run":
        unknown = [n for n in args.names or [] if n not in readouts.BY_NAME]
        if unknown:
            return fail(f"--names: unknown settings {', '.join(unknown)} "
                        f"(known: {', '.join(readouts.BY_NAME)})")
        bad = [m for m in args.models or [] if m not in readouts.MODELS]
        if bad:
            return fail(f"--models: unknown models {', '.join(bad)} (known: network, srf)")
        try:
            check_writable(args.store, "--store", suffixes=(".sqlite", ".db"))
            check_writable(args.csv, "--csv", suffixes=(".csv",))
            readouts.run(args.names, d=args.d, seeds=args.seeds or readouts.SEEDS,
                         store=args.store, csv=args.csv, models=args.models or readouts.MODELS,
                         progress=not args.quiet)
        except ValueError as exc:
            return fail(str(exc))
        return 0
    from ..campaign.report import report_dir

    try:
        out = Path(args.out) if args.out else report_dir(None) / readouts.REPORT.name
        check_writable(out, "--out", suffixes=(".md",))
    except ValueError as exc:
        return fail(str(exc))
    if args.csv is not None and not Path(args.csv).is_file():
        return fail(f"--csv: no such file {args.csv!r}")
    from .readouts_report import write_report

    notes = readouts.REPORT.with_name("readouts_notes.md")
    print(write_report(out, store=args.csv,
                       notes=notes.read_text(encoding="utf-8") if notes.is_file() else ""))
    return 0


def run_cli(args: argparse.Namespace) -> int:
    from . import campaign

    apply_quiet(args)
    if args.command == "readouts":
        return _readouts_cli(args)
    if args.command == "run":
        if args.list:
            for c in campaign.SETTINGS:
                s = c.setting
                print(f"{c.name}: K={s.K} r={s.r} sigma={s.sigma} target={s.target!r} "
                      f"beta={s.beta:g} lam={s.lam:g} alphas={','.join(map(str, c.alphas))}"
                      + (f"  ({c.purpose})" if c.purpose else ""))
            return 0
        unknown = [n for n in args.names or [] if n not in campaign.BY_NAME]
        if unknown:
            return fail(f"--names: unknown settings {', '.join(unknown)} (see --list)")
        try:
            check_writable(args.store, "--store", suffixes=(".sqlite", ".db"))
            check_writable(args.csv, "--csv", suffixes=(".csv",))
            campaign.run(args.names, d=args.d or campaign.D, seeds=args.seeds or campaign.SEEDS,
                         store=args.store, csv=args.csv, n_jobs=args.n_jobs,
                         budget=args.budget_s, progress=not args.quiet)
        except ValueError as exc:
            return fail(str(exc))
        return 0
    if args.command == "reference":
        from . import reference_runs

        unknown = [n for n in args.names or [] if n not in campaign.BY_NAME]
        if unknown:
            return fail(f"--names: unknown settings {', '.join(unknown)}")
        reference_runs.run(args.names, max_p=args.max_p, reps=args.reps, n_jobs=args.n_jobs,
                           progress=not args.quiet)
        return 0
    from ..campaign.report import report_dir
    from . import report

    try:
        out = report_dir(args.out)
        check_writable(out, "--out", directory=True)
    except ValueError as exc:
        return fail(str(exc))
    if args.csv is not None and not Path(args.csv).is_file():
        return fail(f"--csv: no such file {args.csv!r}")
    try:
        path = report.write_report(out, runs=args.csv, finite_p=not args.no_finite_p,
                                   progress=not args.quiet)
    except (ImportError, ValueError) as exc:
        return fail(str(exc))
    print(path)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
    args = build_parser().parse_args(argv)
    return run_cli(args)
