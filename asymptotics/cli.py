"""Command line: ``python -m asymptotics curve ...`` (thin over asymptotics.api)."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence

import numpy as np

CONVENTIONS = """\
conventions (THEORY.md §1): x ~ N(0, I_d); y = g(<theta*, x>) + sqrt(delta) xi; network
f(x) = (1/sqrt p) sum_k a_k sigma(<w_k, x>), rows of W0 uniform on the unit sphere, a0 = 1/sqrt(p);
one giant step on W with n0 = alpha0 d fresh samples and learning rate eta = eta_tilde p; then ridge
on the readout with n = alpha d fresh samples: sum_i (y_i - f(x_i))^2 + lam |a|^2 (a SUM over
samples); risk = E (g - f)^2 on noiseless inputs. beta = p/d. eta_tilde = 0 is random features.
"""


class _Parser(argparse.ArgumentParser):
    """argparse that reports bad input as a single line and exits with status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"error: {message}\n")


def parse_grid(text: str, name: str = "alpha") -> list[float]:
    """``a,b,c`` (a list) or ``START:STOP:NUM`` (numpy.linspace, NUM >= 1)."""
    text = text.strip()
    try:
        if ":" in text:
            parts = text.split(":")
            if len(parts) != 3:
                raise ValueError
            start, stop, num = float(parts[0]), float(parts[1]), int(parts[2])
            if num < 1:
                raise ValueError
            values = [float(v) for v in np.linspace(start, stop, num)]
        else:
            values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{name} must be a comma list (0.5,1,2) or START:STOP:NUM (0.2:5:50), got {text!r}"
        ) from None
    if not values:
        raise argparse.ArgumentTypeError(f"{name} must contain at least one value")
    for v in values:
        if not math.isfinite(v) or v <= 0:
            raise argparse.ArgumentTypeError(f"{name} values must be > 0 and finite, got {v:g}")
    return values


def _real(name: str, *, positive: bool):
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number, got {text!r}") from None
        if not math.isfinite(v):
            raise argparse.ArgumentTypeError(f"{name} must be finite, got {text}")
        if positive and v <= 0:
            raise argparse.ArgumentTypeError(f"{name} must be > 0, got {text}")
        if not positive and v < 0:
            raise argparse.ArgumentTypeError(f"{name} must be >= 0, got {text}")
        return v

    return parse


def add_model_arguments(p: argparse.ArgumentParser) -> None:
    """The model options shared by the theory and simulation command lines."""
    from .functions import available

    names = ", ".join(available())
    p.add_argument("--sigma", default="tanh",
                   help=f"activation: a name ({names}) or an expression in z, e.g. "
                        "'tanh(2*z)' (default: tanh)")
    p.add_argument("--target", default="tanh",
                   help="target g of <theta*, x>: a name or an expression in z (default: tanh)")
    p.add_argument("--alpha0", type=_real("alpha0", positive=True), default=2.0,
                   help="first-batch ratio n0/d of the giant step, > 0 (default: 2)")
    p.add_argument("--eta", type=_real("eta", positive=False), default=1.0,
                   help="eta_tilde = eta / p, >= 0; 0 gives random features (default: 1)")
    p.add_argument("--lam", type=_real("lam", positive=False), default=0.01,
                   help="ridge penalty lam >= 0 of the sum-loss convention (default: 0.01)")
    p.add_argument("--beta", type=_real("beta", positive=True), default=1.0,
                   help="width ratio p/d, > 0 (default: 1)")
    p.add_argument("--delta", type=_real("delta", positive=False), default=0.0,
                   help="label-noise variance Delta >= 0 (default: 0)")


def _width(text: str) -> float | None:
    """``--p``: the width p = beta d of the finite-p theory, a number >= 1, or ``inf``."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"p must be a number >= 1 (the width p = beta d) or inf, got {text!r}") from None
    if v == math.inf:
        return None
    if not math.isfinite(v) or v < 1:
        raise argparse.ArgumentTypeError(
            f"p must be >= 1 (the width p = beta d) or inf, got {text}")
    return v


def _curve(args: argparse.Namespace) -> int:
    from .api import risk_curve

    common = dict(sigma=args.sigma, target=args.target, alpha0=args.alpha0, lam=args.lam,
                  beta=args.beta, delta=args.delta, p=args.p)
    df = risk_curve(args.alpha, eta=args.eta, progress=None if not args.quiet else False,
                    **common)
    text = df.to_csv(index=False, float_format="%.12g")
    sys.stdout.write(text)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text)
    n_bad = int((~df["converged"]).sum())
    if n_bad:
        print(f"warning: {n_bad} of {len(df)} points did not converge (risk = nan, converged = "
              "False)", file=sys.stderr)
    if args.plot:
        rf = risk_curve(args.alpha, eta=0.0, progress=False, **common) if args.eta > 0 else None
        plot_curve(df, rf, args.plot)
    return 0


def plot_curve(df, rf, path: str) -> None:
    """Risk vs alpha; the eta_tilde = 0 random-features baseline dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    row = df.iloc[0]
    width = "" if not math.isfinite(row.get("p", math.inf)) else f", $p={row['p']:g}$"
    fig, ax = plt.subplots(figsize=(5.5, 3.8), constrained_layout=True)
    ax.plot(df["alpha"], df["risk"], "-", color="#0072B2",
            label=rf"one giant step, $\tilde\eta={row['eta']:g}${width}")
    if rf is not None:
        ax.plot(rf["alpha"], rf["risk"], "--", color="#D55E00",
                label=r"random features, $\tilde\eta=0$")
    ax.set_xlabel(r"$\alpha = n/d$")
    ax.set_ylabel("test error")
    ax.set_title(rf"$\sigma$={row['sigma']}, $g$={row['target']}, $\alpha_0$={row['alpha0']:g}, "
                 rf"$\lambda$={row['lam']:g}, $\beta$={row['beta']:g}", fontsize=9)
    ax.legend(frameon=False)
    ax.grid(alpha=0.3)
    fig.savefig(path, dpi=150, metadata={"Software": None})
    plt.close(fig)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m asymptotics",
                     description="Sharp asymptotics of two-layer networks after one giant step.",
                     epilog=CONVENTIONS, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    curve = sub.add_parser("curve", help="risk along alpha (CSV on stdout)", epilog=CONVENTIONS,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_arguments(curve)
    curve.add_argument("--alpha", type=lambda s: parse_grid(s, "alpha"),
                       default=parse_grid("0.2:5:50"),
                       help="sample ratios n/d: a list 0.2,1,3 or START:STOP:NUM "
                            "(default: 0.2:5:50)")
    curve.add_argument("--p", type=_width, default=None,
                       help="width p = beta d for the finite-p theory (docs/DERIVATIONS.md §5), "
                            "a number >= 1 or inf (default: inf, the p -> infinity limit)")
    curve.add_argument("--out", help="also write the CSV to this file")
    curve.add_argument("--plot", help="write a PNG of risk vs alpha (random features dashed)")
    curve.add_argument("--quiet", action="store_true", help="no progress bar")
    curve.set_defaults(func=_curve)
    try:
        from . import hermite
    except ImportError:  # pragma: no cover - optional module
        hermite = None
    if hermite is not None and hasattr(hermite, "add_subparser"):
        hermite.add_subparser(sub)
    try:  # the sweep runner lives in validation; imported only when the parser is built
        from validation import sweep as _sweep
    except ModuleNotFoundError as exc:  # pragma: no cover - validation not installed
        if exc.name not in ("validation", "validation.sweep"):
            raise
        _sweep = None
    if _sweep is not None:
        _sweep.add_subparser(sub, theory_only=True)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "hermite":
            from . import hermite

            return int(hermite.run_cli(args) or 0)
        return int(args.func(args) or 0)
    except (ValueError, TypeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
