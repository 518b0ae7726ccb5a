"""Command line: ``python -m asymptotics curve ...`` (thin over asymptotics.api.risk)."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence

from asymptotics.cli.common import (
    PLOT_SUFFIXES,
    Parser,
    add_quiet,
    apply_quiet,
    check_writable,
    fail,
    one_line_warnings,
    parse_grid,
    real,
    save_figure,
    write_output,
)
from asymptotics.core.parameters import PARAMETERS, check, default, help_text

CONVENTIONS = """\
conventions (THEORY.md §1): x ~ N(0, I_d); y = g(<theta*, x>) + sqrt(delta) xi; network
f(x) = (1/sqrt p) sum_k a_k sigma(<w_k, x>), rows of W0 uniform on the unit sphere, a0 = 1/sqrt(p);
one giant step on W with n0 = alpha0 d fresh samples and learning rate eta = eta_tilde p; then ridge
on the readout with n = alpha d fresh samples: sum_i (y_i - f(x_i))^2 + lam |a|^2 (a SUM over
samples); risk = E (g - f)^2 on noiseless inputs. beta = p/d. eta_tilde = 0 is random features.
"""


# the shared machinery lives in asymptotics.cli.common; the names below are kept for importers
_Parser = Parser


def _real(name: str, *, positive: bool):
    """A number checked by the parameter table (the message every entry point gives)."""
    parse = real(name)  # a number; its range is the table's (``positive`` kept for callers)

    def checked(text: str) -> float:
        value = parse(text)
        try:
            return float(check(name, value))
        except (TypeError, ValueError) as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    return checked


def _or_optimal(parse):
    def parse_or_optimal(text: str):
        if text.strip() == "optimal":
            return "optimal"
        try:
            return parse(text)
        except argparse.ArgumentTypeError as err:
            raise argparse.ArgumentTypeError(f"{err} (or the word 'optimal')") from None

    return parse_or_optimal


def add_model_arguments(p: argparse.ArgumentParser, *, optimal: bool = False) -> None:
    """The model options shared by the theory and simulation command lines (``optimal``: --lam
    and --eta also accept the word ``optimal``, the theory's minimiser at each alpha)."""
    from asymptotics.coefficients.functions import available

    wrap = _or_optimal if optimal else (lambda parse: parse)
    also = " or 'optimal' (minimised at each alpha)" if optimal else ""

    names = ", ".join(available())
    p.add_argument("--sigma", default=default("sigma"),
                   help=f"activation: a name ({names}) or an expression in z, e.g. "
                        f"'tanh(2*z)' (default: {default('sigma')})")
    p.add_argument("--target", default=default("target"),
                   help="target g of <theta*, x>: a name or an expression in z (default: "
                        f"{default('target')})")
    p.add_argument("--alpha0", type=_real("alpha0", positive=True), default=default("alpha0"),
                   help=help_text("alpha0"))
    p.add_argument("--eta", type=wrap(_real("eta", positive=False)), default=None,
                   help=f"eta_tilde = eta / p, >= 0{also}; 0 gives random features (default: 1; "
                        "0 with --model rf)")
    p.add_argument("--lam", type=wrap(_real("lam", positive=False)), default=default("lam"),
                   help=help_text("lam").replace(";", f"{also};", 1))
    p.add_argument("--beta", type=_real("beta", positive=True), default=default("beta"),
                   help=help_text("beta"))
    p.add_argument("--delta", type=_real("delta", positive=False), default=default("delta"),
                   help=help_text("delta"))


DEFAULT_ETA = default("eta")


def resolve_eta(args: argparse.Namespace) -> float | str:
    """``--eta`` given the model: the default 1 (0 for ``--model rf``, random features); an
    ``--eta`` other than 0 with ``--model rf`` is a contradiction, not silently dropped."""
    model = getattr(args, "model", None)
    if model == "rf":
        if args.eta not in (None, 0.0):
            raise ValueError(f"--model rf is random features (eta = 0); --eta {args.eta} "
                             "contradicts it (leave --eta out, or use --model srf / network)")
        return 0.0
    return DEFAULT_ETA if args.eta is None else args.eta


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


def _common_row(text: str) -> str | float:
    """--common-row: 'network' or a ratio > 0 (docs/DERIVATIONS.md §8)."""
    if text.strip() == "network":
        return "network"
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"common-row must be 'network' or a number > 0, got {text!r}") from None
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"common-row must be a finite number > 0, got {text}")
    return v


def _curve(args: argparse.Namespace) -> int:
    from asymptotics.api.risk import risk_curve

    check_writable(args.out, "--out")
    check_writable(args.plot, "--plot", suffixes=PLOT_SUFFIXES)
    common = dict(sigma=args.sigma, target=args.target, alpha0=args.alpha0, lam=args.lam,
                  beta=args.beta, delta=args.delta, p=args.p, common_row=args.common_row)
    eta = resolve_eta(args)
    progress = not apply_quiet(args)
    df = risk_curve(args.alpha, eta=eta, progress=progress, model=args.model, **common)
    rf = None
    if eta == "optimal" or eta > 0:
        # the random-features baseline: in the table, the plot and the CSV (risk_rf)
        rf_common = dict(common, common_row=None)
        rf = risk_curve(args.alpha, eta=0.0, progress=progress, model="rf", **rf_common)
        df = df.assign(risk_rf=rf["risk"].to_numpy(), converged_rf=rf["converged"].to_numpy(),
                       status_rf=rf["status"].to_numpy())
    text = df.to_csv(index=False, float_format="%.12g")
    sys.stdout.write(text if args.csv else compact_table(df))
    if args.out:
        write_output(args.out, text)
    n_bad = int((~df["converged"]).sum())
    if n_bad:
        statuses = ", ".join(sorted(set(df.loc[~df["converged"], "status"])))
        print(f"warning: {n_bad} of {len(df)} points have no finite risk (risk = nan, "
              f"converged = False; status: {statuses})", file=sys.stderr)
    if args.plot:
        plot_curve(df, rf, args.plot)
    return 0


def compact_table(df) -> str:
    """The terminal view of a curve: alpha, risk, the random-features risk (when computed) and
    the status of points without a finite risk; the full table is ``--csv`` / ``--out``."""
    cols = ["alpha", "risk"] + (["risk_rf"] if "risk_rf" in df else [])
    extra = "lam" if df["lam"].nunique() > 1 else ("eta" if df["eta"].nunique() > 1 else None)
    if extra:
        cols.insert(1, extra)
    lines = ["  ".join(f"{c:>12s}" for c in cols) + "  status"]
    for _, row in df.iterrows():
        cells = ["" if not math.isfinite(float(row[c])) else f"{float(row[c]):.6g}"
                 for c in cols]
        status = "" if bool(row["converged"]) else str(row["status"])
        lines.append("  ".join(f"{v if v else 'nan':>12s}" for v in cells) + "  " + status)
    return "\n".join(line.rstrip() for line in lines) + "\n"


def plot_curve(df, rf, path: str) -> None:
    """Risk vs alpha; the eta_tilde = 0 random-features baseline dashed."""
    from matplotlib.figure import Figure

    row = df.iloc[0]
    width = "" if not math.isfinite(row.get("p", math.inf)) else f", $p={row['p']:g}$"
    eta_opt, lam_opt = "interior" in df and df["eta"].nunique() > 1, df["lam"].nunique() > 1
    fig = Figure(figsize=(5.5, 3.8), constrained_layout=True)
    ax = fig.subplots()
    eta_text = r"optimal $\tilde\eta$" if eta_opt else rf"$\tilde\eta={row['eta']:g}$"
    who = {"network": "network after one giant step", "srf": "sRF model, one giant step"}.get(
        str(row.get("model", "")), "one giant step")
    ax.plot(df["alpha"], df["risk"], "-", color="#0072B2", label=f"{who}, {eta_text}{width}")
    if rf is not None:
        ax.plot(rf["alpha"], rf["risk"], "--", color="#D55E00",
                label=r"random features, $\tilde\eta=0$")
    ax.set_xlabel(r"$\alpha = n/d$")
    ax.set_ylabel("test error")
    lam_text = r"optimal $\lambda$" if lam_opt else rf"$\lambda$={row['lam']:g}"
    ax.set_title(rf"$\sigma$={row['sigma']}, $g$={row['target']}, $\alpha_0$={row['alpha0']:g}, "
                 + lam_text + rf", $\beta$={row['beta']:g}", fontsize=9)
    ax.legend(frameon=False)
    ax.grid(alpha=0.3)
    save_figure(fig, path, dpi=150)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m asymptotics",
                     description="Sharp asymptotics of two-layer networks after one giant step.",
                     epilog=CONVENTIONS, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    curve = sub.add_parser("curve", help="risk along alpha (a table on stdout; --csv, --out)",
                           epilog=CONVENTIONS,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_arguments(curve, optimal=True)
    curve.add_argument("--alpha", type=lambda s: parse_grid(s, "alpha"),
                       default=parse_grid("0.2:5:50"),
                       help="sample ratios n/d: a list 0.2,1,3 or START:STOP:NUM "
                            "(default: 0.2:5:50)")
    curve.add_argument("--model", choices=PARAMETERS["model"].choices, default=default("model"),
                       help="which trained model the curve describes: network = the trained "
                            "network (deterministic network theory, docs/DERIVATIONS.md §7; "
                            "default), srf = the spiked random features surrogate of the step "
                            "(exact for that model; the papers' figures), rf = random features "
                            "(eta = 0, --eta ignored)")
    curve.add_argument("--p", type=_width, default=None,
                       help="width p = beta d for the finite-p theory (docs/DERIVATIONS.md §8), "
                            "a number >= 1 or inf (default: inf, the p -> infinity limit)")
    curve.add_argument("--common-row", type=_common_row, default=None,
                       help="the ratio omega of the network's mean row in the finite-p theory "
                            "(with --p; docs/DERIVATIONS.md §8, the network's initial output): "
                            "'network' (the trained network's shrunk mean row) or a number > 0 "
                            "(default: 'network' for --model network at finite p, 1 otherwise)")
    curve.add_argument("--out", help="write the full CSV (every parameter, order parameter and "
                                     "status; the baseline as risk_rf) to this file")
    curve.add_argument("--csv", action="store_true",
                       help="print the full CSV on stdout instead of the compact table "
                            "(alpha, risk, random-features risk)")
    curve.add_argument("--plot", help="write a figure (.png, .svg or .pdf) of risk vs alpha "
                                      "(random features dashed)")
    add_quiet(curve)
    curve.set_defaults(func=_curve)
    from asymptotics.cli import hermite as hermite_cli

    hermite_cli.add_subparser(sub)
    from asymptotics.cli import steps as steps_cli

    steps_cli.add_subparser(sub)
    # parameter grids (theory and simulations) are ``python -m validation sweep --kind theory``:
    # the runner lives in validation, which the theory package does not import
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    one_line_warnings()
    try:
        if args.command == "hermite":
            from asymptotics.cli import hermite as hermite_cli

            return int(hermite_cli.run_cli(args) or 0)
        return int(args.func(args) or 0)
    except (ValueError, TypeError, OverflowError, ZeroDivisionError, OSError) as exc:
        return fail(str(exc))
