"""Theory against simulation along alpha: ``python -m validation compare ...``.

For each alpha: the theory of the simulated model (``asymptotics.risk_curve(model=...)``: the sRF
theory for ``srf``, the network theory of docs/DERIVATIONS.md §6-7 for ``network``, random
features for ``rf``), the simulation mean and standard error over seeds
(``validation.protocol.simulator``), ``z = (sim_mean - theory) / sim_se`` and the relative gap
``(sim_mean - theory) / theory``. Beside it, ``theory_p`` and ``z_p``: the same theory at the
simulated width p = beta d (docs/DERIVATIONS.md §8), which keeps the price of the mean channel
and matters when r sqrt(p) is not large; for ``network`` also ``theory_srf``, the sRF surrogate.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence

import numpy as np

from asymptotics.cli.common import PLOT_SUFFIXES, add_quiet, apply_quiet, check_writable, integer
from asymptotics.core.parameters import default

from .protocol.estimators import ESTIMATORS
from .protocol.simulator import MODELS, Setting, simulate

Z_COLUMNS = ["alpha", "theory", "sim_mean", "sim_se", "z", "rel_gap", "theory_converged",
             "theory_p", "z_p"]


def theory_model(model: str) -> str:
    """The theory that describes a simulated model: itself (the words are the same)."""
    return model


def compare(
    model: str, alphas: Sequence[float], *, sigma: str, target: str, alpha0: float, eta: float,
    lam: float, beta: float = default("beta"), delta: float = default("delta"),
    d: int = default("d"),
    seeds: int = default("seeds"),
    seed: int = 0, n_jobs: int = 1, n_test: int = 0, stream: int = 2, estimator: str = "cv",
    progress: bool | None = None,
):
    """DataFrame: one row per alpha with ``alpha, theory, sim_mean, sim_se, z, rel_gap`` and every
    parameter; an unconverged theory point has ``theory = nan`` and ``theory_converged = False``."""
    import pandas as pd

    from asymptotics import risk_curve
    from asymptotics.core.progress import Progress

    alphas = [float(a) for a in alphas]
    eta_theory = 0.0 if model == "rf" else eta
    settings = [Setting(model=model, sigma=sigma, target=target, alpha=a, alpha0=alpha0,
                        eta=eta_theory, lam=lam, beta=beta, delta=delta, d=d, n_test=n_test,
                        stream=stream, estimator=estimator)
                for a in alphas]
    common = dict(sigma=sigma, target=target, alpha0=alpha0, eta=eta_theory, lam=lam, beta=beta,
                  delta=delta, progress=progress, model=theory_model(model))
    theory = risk_curve(alphas, **common)
    theory_p = risk_curve(alphas, **common, p=settings[0].p)
    srf = risk_curve(alphas, **{**common, "model": "srf"}) if model == "network" else None
    rows = []
    with Progress(len(settings) * seeds, f"{model} simulations", unit="run",
                  enabled=progress) as bar:
        for s, (_, th), tp in zip(settings, theory.iterrows(), theory_p["risk"], strict=True):
            sim = simulate(s, seeds=seeds, seed=seed, n_jobs=n_jobs, progress=bar.update)
            row = sim.as_dict()
            t = float(th["risk"]) if bool(th["converged"]) else math.nan
            row.update(theory=t, theory_converged=bool(th["converged"]),
                       z=(sim.mean - t) / sim.se if sim.se > 0 else math.nan,
                       rel_gap=(sim.mean - t) / t, theory_p=float(tp),
                       z_p=(sim.mean - tp) / sim.se if sim.se > 0 else math.nan,
                       theory_model=theory_model(model))
            if srf is not None:
                row["theory_srf"] = float(srf["risk"][len(rows)])
            rows.append(row)
    df = pd.DataFrame(rows)
    return df[Z_COLUMNS + [c for c in df.columns if c not in Z_COLUMNS]]


def plot_comparison(df, path: str, *, title: str | None = None) -> None:
    """Theory as a line, simulations as points with one-s.e. error bars."""
    from matplotlib.figure import Figure

    from asymptotics import risk_curve

    r = df.iloc[0]
    fine = np.linspace(df["alpha"].min(), df["alpha"].max(), 120)
    eta = 0.0 if r["model"] == "rf" else r["eta"]
    line = risk_curve(fine, sigma=r["sigma"], target=r["target"], alpha0=r["alpha0"], eta=eta,
                      lam=r["lam"], beta=r["beta"], delta=r["delta"], progress=False,
                      model=theory_model(r["model"]))
    fig = Figure(figsize=(5.5, 3.8), constrained_layout=True)
    ax = fig.subplots()
    ax.plot(line["alpha"], line["risk"], "-", color="#0072B2", label="theory, p = inf")
    line_p = risk_curve(fine, sigma=r["sigma"], target=r["target"], alpha0=r["alpha0"], eta=eta,
                        lam=r["lam"], beta=r["beta"], delta=r["delta"], progress=False,
                        p=int(r["p"]), model=theory_model(r["model"]))
    ax.plot(line_p["alpha"], line_p["risk"], "--", color="#009E73",
            label=f"theory at the simulated width p = {int(r['p'])}")
    ax.errorbar(df["alpha"], df["sim_mean"], yerr=df["sim_se"], fmt="o", ms=4, capsize=2,
                color="#D55E00", label=f"{r['model']} simulation, d={r['d']}, "
                                       f"{r['seeds']} seeds")
    ax.set_xlabel(r"$\alpha = n/d$")
    ax.set_ylabel("test error")
    default = (rf"$\sigma$={r['sigma']}, $g$={r['target']}, $\alpha_0$={r['alpha0']:g}, "
               rf"$\tilde\eta$={eta:g}, $\lambda$={r['lam']:g}, $\beta$={r['beta']:g}")
    ax.set_title(title or default, fontsize=9)
    ax.legend(frameon=False)
    ax.grid(alpha=0.3)
    from asymptotics.cli.common import save_figure

    save_figure(fig, path, dpi=150)


def add_simulation_arguments(p: argparse.ArgumentParser) -> None:
    """Options shared by the simulation command lines (model, size, seeds, workers)."""
    p.add_argument("--model", choices=MODELS, default="network",
                   help="network: the real two-layer network after one step (default), "
                        "compared with the network theory; srf: the spiked random-features "
                        "model, compared with its exact equations; rf: random features at init")
    p.add_argument("--d", type=integer("d", 2), default=default("d"),
                   help="input dimension (default: 1000)")
    p.add_argument("--seeds", type=integer("seeds", 1), default=default("seeds"),
                   help="independent repetitions (default: 10)")
    p.add_argument("--seed", type=integer("seed", 0), default=0,
                   help="root entropy of numpy SeedSequence; repetition i uses its child i "
                        "(default: 0)")
    p.add_argument("--n-jobs", type=integer("n-jobs", 1), default=1,
                   help="worker processes (results do not depend on it; default: 1)")
    p.add_argument("--n-test", type=integer("n-test", 0), default=0,
                   help="test samples per repetition (default 0: max(10000, 2d))")
    p.add_argument("--stream", type=int, choices=(1, 2), default=2,
                   help="random stream of the samples: 2 = parallel blocks (default), "
                        "1 = sequential (the validation store's)")
    p.add_argument("--estimator", choices=ESTIMATORS, default="cv",
                   help="test-error estimator (validation.protocol.estimators): cv = Monte "
                        "Carlo with control variates of known mean (default, least noise), mc = "
                        "plain Monte Carlo, split = exact E g^2 and E[g f], Monte Carlo E f^2")


def add_subparser(subparsers) -> argparse.ArgumentParser:
    """Register ``compare``."""
    from asymptotics.cli.curve import CONVENTIONS, add_model_arguments, parse_grid

    p = subparsers.add_parser(
        "compare", help="theory vs Monte Carlo along alpha (CSV on stdout)",
        description="Compare the asymptotic risk with finite-d simulations. Prints CSV with "
                    "alpha,theory,sim_mean,sim_se,z,rel_gap and all parameters.",
        epilog=CONVENTIONS, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_arguments(p)
    add_simulation_arguments(p)
    p.add_argument("--alpha", type=lambda s: parse_grid(s, "alpha"),
                   default=parse_grid("0.2:3:8"),
                   help="sample ratios n/d: 0.2,1,3 or START:STOP:NUM (default: 0.2:3:8)")
    p.add_argument("--out", help="also write the CSV to this file")
    p.add_argument("--plot", help="figure (.png, .svg, .pdf): theory line, simulation points "
                                  "with error bars")
    add_quiet(p)
    p.set_defaults(func=run_cli)
    return p


# below these the standard error over seeds is itself too uncertain (d small: far from the
# asymptotic regime; few seeds: the s.e. has few degrees of freedom) for a z-score to mean much
MIN_D_FOR_Z = 100
MIN_SEEDS_FOR_Z = 5


def z_caveat(d: int, seeds: int) -> str | None:
    """Why the z-scores of a comparison at ``d`` with ``seeds`` repetitions are not meaningful,
    or None."""
    reasons = []
    if d < MIN_D_FOR_Z:
        reasons.append(f"d={d} < {MIN_D_FOR_Z} is far from the asymptotic regime")
    if seeds < MIN_SEEDS_FOR_Z:
        reasons.append(f"seeds={seeds} < {MIN_SEEDS_FOR_Z} leaves the standard error itself "
                       "uncertain")
    if not reasons:
        return None
    return "z-scores not meaningful: " + "; ".join(reasons)


def run_cli(args: argparse.Namespace) -> int:
    from asymptotics.cli.curve import resolve_eta

    check_writable(args.out, "--out")
    check_writable(args.plot, "--plot", suffixes=PLOT_SUFFIXES)
    caveat = z_caveat(args.d, args.seeds)
    if caveat:
        print(f"warning: {caveat}", file=sys.stderr)
    df = compare(args.model, args.alpha, sigma=args.sigma, target=args.target,
                 alpha0=args.alpha0, eta=resolve_eta(args), lam=args.lam, beta=args.beta,
                 delta=args.delta, d=args.d, seeds=args.seeds, seed=args.seed,
                 n_jobs=args.n_jobs, n_test=args.n_test, stream=args.stream,
                 estimator=args.estimator, progress=not apply_quiet(args))
    df["caveat"] = caveat or ""
    n_bad = int((~df["theory_converged"].astype(bool)).sum())
    if n_bad:
        print(f"warning: the theory has no finite risk at {n_bad} of {len(df)} alphas (theory and "
              "z empty there; at lam = 0 and alpha = beta ridgeless regression diverges)",
              file=sys.stderr)
    text = df.drop(columns=["values"]).to_csv(index=False, float_format="%.10g")
    sys.stdout.write(text)
    if args.out:
        df.to_csv(args.out, index=False, float_format="%.10g")
    if args.plot:
        plot_comparison(df, args.plot)
    return 0
