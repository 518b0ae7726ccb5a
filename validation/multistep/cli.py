"""Command line of :mod:`validation.multistep.simulator`: ``python -m validation multistep ...`` (T
giant
steps with fresh batches; mean and standard error over seeds of the overlaps per step, CSV)."""

from __future__ import annotations

import argparse
import sys

from .simulator import READOUTS, MultiStepConfig, run_multistep, summarize


def _eta_list(text: str) -> tuple[float, ...]:
    from asymptotics.cli.common import real_list

    return tuple(real_list("eta", 0.0)(text))


def add_subparser(subparsers) -> argparse.ArgumentParser:
    """Register ``multistep`` on an argparse subparsers object."""
    from asymptotics.cli.common import add_quiet
    from asymptotics.cli.common import integer as i_
    from asymptotics.cli.common import real as r_
    from asymptotics.core.parameters import default

    p = subparsers.add_parser(
        "multistep", help="T giant steps with fresh batches: overlaps with a multi-index target",
        description="T giant steps on the first layer with fresh batches n = alpha0 d^kappa and "
                    "eta_t = eta_tilde_t p d^((kappa-1)/2) (Dandi et al. 2023, arXiv:2305.18270; "
                    "docs/THEORY.md §8). Prints mean and standard error over seeds of the "
                    "overlaps |<w_k, theta_j>|/|w_k| per step (CSV).")
    p.add_argument("--d", type=i_("d"), default=256, help="input dimension, >= 8 (default 256)")
    p.add_argument("--target", default="z1 + z1*z2 + z1*z2*z3",
                   help="g(z1..zk): expression, He<n>() allowed (default z1 + z1*z2 + z1*z2*z3)")
    p.add_argument("--sigma", default="erf(z-1)",
                   help="activation: registered name or expression in z (default erf(z-1))")
    p.add_argument("--steps", type=i_("steps"), default=3,
                   help="number of giant steps T (default 3)")
    p.add_argument("--alpha0", type=r_("alpha0"), default=16.0,
                   help="n = alpha0 d^kappa (default 16)")
    p.add_argument("--kappa", type=r_("kappa"), default=1.0, help="batch exponent >= 1 (default 1)")
    p.add_argument("--beta", type=r_("beta"), default=1.0, help="p = beta d (default 1)")
    p.add_argument("--eta", type=_eta_list, default=None,
                   help="eta_tilde per step, comma list or one number (default 2,8,16,16,...)")
    p.add_argument("--readout", choices=READOUTS, default="hypercube",
                   help="a0: constant 1/sqrt(p) or +-1/sqrt(p) halves (pm1; hypercube is the "
                        "same; default hypercube)")
    p.add_argument("--delta", type=r_("delta"), default=0.0,
                   help="label-noise variance (default 0)")
    p.add_argument("--ridge-alpha", type=r_("ridge-alpha"), default=0.0,
                   help="ridge readout on ridge_alpha*d samples after each step; 0 = off")
    p.add_argument("--lam", type=r_("lam"), default=default("lam"),
                   help="ridge penalty of the readout after each step (sum convention; default "
                        f"{default('lam'):g}, the parameter table's; the committed campaigns of "
                        "validation/reports/MULTISTEP.md used 0.001, which their CSVs record); "
                        "printed as the lam column")
    p.add_argument("--n-test", type=i_("n-test"), default=10_000,
                   help="test inputs for the test error (default: 10000)")
    p.add_argument("--seeds", type=i_("seeds"), default=3, help="repetitions (default: 3)")
    p.add_argument("--seed", type=i_("seed"), default=0,
                   help="root seed of SeedSequence (default 0)")
    p.add_argument("--n-jobs", type=i_("n-jobs", 1), default=1,
                   help="worker processes (results do not depend on it; default: 1)")
    p.add_argument("--out", help="also write every repetition's rows to this CSV")
    add_quiet(p)
    p.set_defaults(func=run_cli)
    return p


def run_cli(args: argparse.Namespace) -> int:
    """Run and print the summary CSV; bad input: one line on stderr, exit status 2."""
    from asymptotics.cli.common import apply_quiet, check_writable

    quiet = apply_quiet(args)
    try:
        check_writable(args.out, "--out")
        eta = None if args.eta is None else (args.eta if len(args.eta) > 1 else args.eta[0])
        config = MultiStepConfig(
            d=args.d, target=args.target, sigma=args.sigma, steps=args.steps,
            alpha0=args.alpha0, kappa=args.kappa, beta=args.beta, eta=eta, readout=args.readout,
            delta=args.delta, ridge_alpha=args.ridge_alpha, lam=args.lam, n_test=args.n_test)
        df = run_multistep(config, seeds=args.seeds, seed=args.seed, n_jobs=args.n_jobs,
                           progress=not quiet)
    except (ValueError, TypeError, FloatingPointError) as exc:
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    if args.out:
        df.to_csv(args.out, index=False, float_format="%.10g")
    summary = summarize(df)
    summary["lam"] = config.lam  # the ridge penalty used (the table's unless --lam)
    sys.stdout.write(summary.to_csv(index=False, float_format="%.6g"))
    return 0
