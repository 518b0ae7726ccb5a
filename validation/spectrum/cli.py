"""Command line: ``python -m validation spectrum`` (registered by validation.cli)."""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np

from asymptotics.cli.common import add_quiet, apply_quiet, integer

from .model import BATCHES, EDGE_METHODS, READOUTS, StepConfig, check_real, simulate
from .plot import plot_spectrum
from .run import run_spectrum

CLI_HELP = """\
convention: rows of W0 on the unit sphere, f(x) = (1/sqrt p) sum_j a_j sigma(<w_j, x>) with a
frozen readout a_j = g_j / sqrt p; full-batch steps on L = (1/(2n)) sum_i (y_i - f(x_i))^2 with
n = alpha0 d and eta_t = eta_tilde_t p^(1/2 + a_t). Prints outliers=<measured> and
predicted=<formula>: for --steps 2, the outliers of W2 beyond the leading one vs
floor(a2/(1/2 - a1)); for --steps 1, the spikes of the features sigma(X W1^T) on fresh inputs vs
#{l >= 1: a1 > (l-1)/(2l), E sigma^(l) != 0}.
"""


def _cli_real(name: str, lo: float, hi: float = math.inf, hi_open: bool = False):
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number, got {text!r}") from None
        try:
            return check_real(value, name, lo, hi, hi_open=hi_open)
        except (TypeError, ValueError) as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def add_subparser(subparsers) -> argparse.ArgumentParser:
    """Add the ``spectrum`` subcommand to an argparse ``subparsers`` object."""
    p = subparsers.add_parser(
        "spectrum", help="outliers of the weights after one or two large steps",
        description="Simulate one or two full-batch gradient steps on the first layer and count "
                    "the outliers of the spectrum.",
        epilog=CLI_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, choices=(1, 2), default=2, help="1 or 2 (default: 2)")
    p.add_argument("--a1", type=_cli_real("a1", 0.0, 0.5, hi_open=True), default=0.2,
                   help="exponent of the first step, eta1 = eta_tilde1 p^(1/2+a1), in [0, 1/2) "
                        "(at 1/2 the predicted count is unbounded) (default: 0.2)")
    p.add_argument("--a2", type=_cli_real("a2", 0.0, 0.5, hi_open=True), default=0.3,
                   help="exponent of the second step, in [0, 1/2) (default: 0.3)")
    p.add_argument("--d", type=integer("d", 16), default=1000,
                   help="input dimension (default: 1000)")
    p.add_argument("--beta", type=_cli_real("beta", 1e-3, 64.0), default=0.5,
                   help="width ratio p/d (default: 0.5)")
    p.add_argument("--alpha0", type=_cli_real("alpha0", 1e-3, 64.0), default=1.0,
                   help="batch ratio n/d (default: 1)")
    p.add_argument("--sigma", default="tanh(z+0.5)",
                   help="activation: name or expression in z (default: tanh(z+0.5), all Hermite "
                        "coefficients nonzero)")
    p.add_argument("--target", default="z1",
                   help="target: expression in z1..zk (multi-index) or a name / expression in z "
                        "(single index) (default: z1)")
    p.add_argument("--eta1", type=_cli_real("eta1", 0.0), default=1.0,
                   help="eta_tilde of the first step (default: 1)")
    p.add_argument("--eta2", type=_cli_real("eta2", 0.0), default=3.0,
                   help="eta_tilde of the second step (default: 3)")
    p.add_argument("--batch", choices=BATCHES, default="fresh",
                   help="second-step batch (default: fresh)")
    p.add_argument("--readout", choices=READOUTS, default="gaussian",
                   help="frozen readout distribution (default: gaussian)")
    p.add_argument("--delta", type=_cli_real("delta", 0.0), default=0.0,
                   help="label-noise variance (default: 0)")
    p.add_argument("--seed", type=integer("seed", 0), default=0, help="seed entropy")
    p.add_argument("--edge", choices=EDGE_METHODS, default="fit",
                   help="bulk-edge estimate (default: fit)")
    p.add_argument("--kappa", type=_cli_real("kappa", 0.0), default=2.0,
                   help="outlier margin in units of the edge spacing (default: 2)")
    p.add_argument("--plot", default=None, metavar="FILE.png|svg|pdf",
                   help="histogram of the singular values with the bulk density and outliers")
    add_quiet(p)
    p.set_defaults(func=run_cli)
    return p


def run_cli(args: argparse.Namespace) -> int:
    """Execute the ``spectrum`` subcommand; prints key=value lines. Returns the exit status."""
    from asymptotics.cli.common import PLOT_SUFFIXES, check_writable

    try:
        check_writable(args.plot, "--plot", suffixes=PLOT_SUFFIXES)
        config = StepConfig(
            d=args.d, a1=args.a1, a2=args.a2 if args.steps == 2 else None, beta=args.beta,
            alpha0=args.alpha0, sigma=args.sigma, target=args.target, eta1=args.eta1,
            eta2=args.eta2, batch=args.batch, readout=args.readout, delta=args.delta,
            seed=args.seed)
    except (TypeError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from asymptotics.core.progress import Progress

    with Progress(2, "spectrum", unit="stages", enabled=not apply_quiet(args)) as bar:
        sim = simulate(config)  # the steps
        bar.update()
        res = run_spectrum(config, method=args.edge, kappa=args.kappa, simulation=sim)
        bar.update()  # the spectra (singular values, edge, outliers)
    ws = res.weights
    out = sys.stdout
    out.write(f"outliers={res.measured}\n")
    out.write(f"predicted={'nan' if res.predicted is None else res.predicted}\n")
    if res.predicted_activation is not None:
        out.write(f"predicted_activation={res.predicted_activation}\n")
    name = "W2" if config.steps == 2 else "W1"
    out.write(f"matrix={name} p={config.p} d={config.d} n={config.n}\n")
    out.write(f"weight_outliers={ws.n_outliers}\n")
    out.write(f"bulk_edge={ws.edge.edge:.6g}\nthreshold={ws.edge.threshold:.6g}\n")
    out.write("singular_values=" + ",".join(f"{v:.6g}" for v in ws.singular_values[:12]) + "\n")
    for i in range(ws.n_outliers):
        th = ",".join(f"{v:.3f}" for v in ws.right_overlaps[i])
        lv = ",".join("nan" if math.isnan(v) else f"{v:.3f}" for v in ws.left_overlaps[i])
        out.write(f"outlier{i + 1}: s={ws.outliers[i]:.6g} |<v,theta_j>|={th} "
                  f"|<u,h_m>|={lv} degree={int(ws.left_degree[i])}\n")
    if res.features is not None:
        fs = res.features
        out.write(f"feature_outliers={fs.n_outliers} feature_threshold={fs.edge.threshold:.6g}\n")
        for i in range(fs.n_outliers):
            he = ";".join(",".join(f"{v:.3f}" for v in fs.hermite_overlaps[i, j])
                          for j in range(fs.hermite_overlaps.shape[1]))
            out.write(f"feature{i + 1}: s={fs.outliers[i]:.6g} |cos(u,He_l(X theta_j))|={he}\n")
    out.write("amplitudes=" + ",".join(f"{v:.4g}" for v in res.amplitudes)
              + " floors=" + ",".join(f"{v:.4g}" for v in res.amplitude_floors) + "\n")
    if args.plot:
        ref = np.linalg.svd(sim.W0, compute_uv=False)
        plot_spectrum(ws, (config.p, config.d), args.plot, reference=ref,
                      title=f"{name}: steps={config.steps}, a1={config.a1:g}"
                            + (f", a2={config.a2:g}, {config.batch} batch" if config.a2 is not None
                               else "")
                            + f", d={config.d}, sigma={config.sigma}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The stand-alone parser (``python -m validation.spectrum``); the same subcommand is
    ``python -m validation spectrum``."""
    from asymptotics.cli.common import Parser

    parser = Parser(prog="python -m validation.spectrum",
                    description="One or two large steps in the Moniri et al. convention.")
    sub = parser.add_subparsers(dest="command", required=True)
    add_subparser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Standalone entry point (``python -m validation.spectrum``)."""

    args = build_parser().parse_args(argv)
    return args.func(args)
