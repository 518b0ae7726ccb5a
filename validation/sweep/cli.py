"""Command line of the sweep: ``python -m validation sweep`` (registered by validation.cli)."""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

from .heatmap import grid_axes, plot_heatmap
from .params import (
    DEFAULT_KIND,
    DEFAULT_SEEDS,
    DEFAULTS,
    KINDS,
    SCHEDULERS,
    SIM_PARAMS,
    THEORY_PARAMS,
    params_of,
    parse_grid_spec,
    parse_values,
)
from .runner import sweep

DEFAULT_ALPHAS = "0.2:5:50"


def add_subparser(subparsers, *, theory_only: bool = False) -> argparse.ArgumentParser:
    """Register ``sweep``: ``python -m validation sweep`` (all kinds; ``--kind theory`` for the
    theory alone) or, with ``theory_only``, a parser restricted to the theory parameters."""
    from asymptotics.cli.common import add_quiet
    from asymptotics.cli.common import integer as i_
    from asymptotics.cli.curve import CONVENTIONS, add_model_arguments

    p = subparsers.add_parser(
        "sweep", help="parameter grids: local pool or Dask, resumable SQLite store",
        description="Run a grid of theory curves or Monte Carlo repetitions. Grid values: "
                    "NAME=START:STOP:NUM (numpy.linspace) or NAME=a,b,c; every parameter not in "
                    "a grid takes its option's value. Results: CSV (--out, or stdout without "
                    "--store); --store makes the sweep resumable.",
        epilog=CONVENTIONS, formatter_class=argparse.RawDescriptionHelpFormatter)
    names = THEORY_PARAMS if theory_only else SIM_PARAMS
    if not theory_only:
        p.add_argument("--kind", choices=KINDS, default=DEFAULT_KIND,
                       help="theory: the sRF equations; theory-network: the network theory; "
                            f"or a simulated model: network, srf, rf (default: {DEFAULT_KIND})")
    p.add_argument("--grid", action="append", type=parse_grid_spec, default=[],
                   metavar="NAME=VALUES",
                   help=f"a grid axis, repeatable; NAME one of {', '.join(names)} "
                        f"(alpha default: {DEFAULT_ALPHAS})")
    add_model_arguments(p)
    if not theory_only:
        p.add_argument("--d", type=i_("d", 2), default=DEFAULTS["d"],
                       help=f"dimension d of the simulations (default: {DEFAULTS['d']})")
        p.add_argument("--n-test", type=i_("n-test", 0), default=0,
                       help="test inputs per repetition (default 0: max(10000, 2d))")
        p.add_argument("--seeds", type=i_("seeds", 1), default=DEFAULT_SEEDS,
                       help=f"repetitions per point (default: {DEFAULT_SEEDS})")
        p.add_argument("--seed", type=i_("seed", 0), default=0,
                       help="salt of the parameter-hash seeds (default: 0)")
    p.add_argument("--store", help="resumable SQLite store (validation.campaign): finished tasks "
                                   "are skipped on restart")
    p.add_argument("--out", help="write the result CSV here")
    p.add_argument("--scheduler", choices=SCHEDULERS, default=None,
                   help="local: a process pool; dask: dask.distributed (default: local, or dask "
                        "with --scheduler-address)")
    p.add_argument("--scheduler-address", metavar="tcp://HOST:PORT",
                   help="an existing Dask scheduler (implies --scheduler dask)")
    p.add_argument("--n-jobs", type=i_("n-jobs", 1), default=None,
                   help="worker processes (default: all cores)")
    p.add_argument("--plot", help="heat map (.png, .svg, .pdf) of the risk (needs a 2-D grid)")
    add_quiet(p)
    p.set_defaults(func=run_cli, sweep_kind="theory" if theory_only else None)
    return p


def run_cli(args: argparse.Namespace) -> int:
    """``sweep`` subcommand: returns the exit status (2 on bad input, with one line)."""
    from asymptotics.cli.common import PLOT_SUFFIXES, apply_quiet, check_writable
    from asymptotics.cli.curve import DEFAULT_ETA

    quiet = apply_quiet(args)
    check_writable(args.store, "--store", suffixes=(".sqlite", ".db"))
    check_writable(args.out, "--out")
    check_writable(args.plot, "--plot", suffixes=PLOT_SUFFIXES)
    kind = args.sweep_kind or args.kind
    grid: dict[str, list] = {}
    for name, values in args.grid:
        if name in grid:
            raise ValueError(f"grid {name} given twice")
        grid[name] = values
    if "alpha" not in grid:
        grid["alpha"] = parse_values("alpha", DEFAULT_ALPHAS)
    names = params_of(kind)
    fixed = {n: getattr(args, n) for n in names if n not in grid and hasattr(args, n)}
    if "eta" in fixed and fixed["eta"] is None:
        fixed["eta"] = DEFAULT_ETA
    if args.scheduler_address and not re.fullmatch(r"[a-z]+://\S+",
                                                   args.scheduler_address.strip()):
        raise ValueError(f"--scheduler-address must look like tcp://HOST:PORT, got "
                         f"{args.scheduler_address!r}")
    if args.scheduler_address and args.scheduler == "local":
        raise ValueError("--scheduler local and --scheduler-address contradict each other: an "
                         "address is a Dask scheduler (give --scheduler dask or leave "
                         "--scheduler out)")
    scheduler = "dask" if args.scheduler_address else (args.scheduler or "local")
    axes = grid_axes(grid) if args.plot else None
    t0 = time.perf_counter()
    try:
        df = sweep(kind, grid, store=args.store, seeds=getattr(args, "seeds", 1),
                   n_jobs=args.n_jobs, scheduler=scheduler, address=args.scheduler_address,
                   progress=not quiet, **fixed)
    except ImportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    text = df.to_csv(index=False, float_format="%.12g")
    if args.out:
        Path(args.out).write_text(text)
    if not args.out and not args.store:
        sys.stdout.write(text)
    n_bad = int((~df["converged"]).sum())
    if not quiet or n_bad:  # the summary; with --quiet only when points did not converge
        print(f"sweep {kind}: {len(df)} points, {len(df) - n_bad} converged, "
              f"{time.perf_counter() - t0:.1f} s" + (f"; store {args.store}" if args.store else ""),
              file=sys.stderr)
    if axes is not None:
        plot_heatmap(df, *axes, args.plot)
    return 0
