"""The predicted spectra (:func:`asymptotics.spectrum`, docs/THEORY.md §14) against Monte Carlo
of the trained network and of its sRF surrogate: bulk Kolmogorov distances, the outliers'
locations and squared overlaps (mean over draws, standard error, z = (sim - theory)/s.e.).

    python -m validation.experiments.spectra_theory [--quick] [--quiet] [--report-only]

writes validation/reports/data/spectra_theory.csv and validation/reports/SPECTRA_THEORY.md
(full mode: about 8 core-minutes); ``--report-only`` rewrites the report from the CSV."""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from asymptotics import spectrum, srf_mapping
from asymptotics.core.progress import Progress
from validation.experiments.spectra_sim import kolmogorov, simulate_network, simulate_srf

ROOT = Path(__file__).resolve().parents[2]
CSV = ROOT / "validation" / "reports" / "data" / "spectra_theory.csv"
REPORT = ROOT / "validation" / "reports" / "SPECTRA_THEORY.md"
COMMAND = "python -m validation.experiments.spectra_theory"


@dataclass(frozen=True)
class Setting:
    """One comparison: the simulated object (``sim``: 'network' or 'srf'), its parameters and
    the models of the theory for the features and the weights."""

    name: str
    sim: str
    sigma: str = "tanh"
    target: str = "tanh"
    beta: float = 0.5
    alpha: float = 4.0
    alpha0: float = 2.0
    eta: float = 1.0
    steps: int = 1
    weights_model: str | None = "network"
    dims: tuple = (1000, 2000)
    seeds: dict = field(default_factory=lambda: {1000: 6, 2000: 3, 4000: 5})


SETTINGS = (
    Setting("network, one step", "network"),
    Setting("network, one step, n < p, small batch", "network", beta=1.0, alpha=0.5,
            alpha0=0.5, eta=2.0),
    Setting("network, relu, one step", "network", sigma="relu", target="relu", alpha=2.0,
            alpha0=1.0),
    Setting("network, two steps", "network", target="tanh(z1)", steps=2, weights_model=None),
    Setting("sRF surrogate", "srf", alpha=2.0, eta=2.0, weights_model="srf"),
    Setting("random features, relu", "srf", sigma="relu", target="relu", alpha=2.0, eta=0.0,
            weights_model="rf"),
)


def _theory(s: Setting, of: str, d: int):
    model = "rf" if s.eta == 0.0 else ("srf" if of == "features" else s.weights_model)
    return spectrum(of, alpha=s.alpha, sigma=s.sigma, target=s.target, alpha0=s.alpha0,
                    eta=s.eta, beta=s.beta, steps=s.steps, model=model, d=d)


def _draw(s: Setting, d: int, seed: int):
    if s.sim == "network":
        tg = s.target if s.steps == 1 else s.target.replace("(z1)", "")
        return simulate_network(sigma=s.sigma, target=tg, d=d, beta=s.beta, alpha=s.alpha,
                                alpha0=s.alpha0, eta=s.eta, seed=seed, steps=s.steps)
    sp = srf_mapping(s.sigma, s.target, alpha0=s.alpha0, eta=s.eta)
    return simulate_srf(sigma=s.sigma, r=sp.r, c=sp.c, gamma=sp.gamma, d=d, beta=s.beta,
                        alpha=s.alpha, seed=seed)


def run(quick: bool = False, quiet: bool = False, jobs: list | None = None) -> list[dict]:
    """One row per (setting, d, matrix, quantity); ``jobs``: (setting, d) pairs (default: every
    setting at its dims)."""
    rows = []
    if jobs is None:
        jobs = [(s, d) for s in SETTINGS for d in s.dims if not (quick and d > 1000)]
    with Progress(len(jobs), "spectra vs theory", unit="cells", enabled=not quiet) as bar:
        for s, d in bar.iter(jobs):
            n_seeds = 2 if quick else s.seeds[d]
            t0 = time.time()
            laws = {"features": _theory(s, "features", d)}
            if s.weights_model is not None:
                laws["weights"] = _theory(s, "weights", d)
            draws = [_draw(s, d, seed) for seed in range(n_seeds)]
            for of, law in laws.items():
                eig = [dr.f_eig if of == "features" else dr.w_eig for dr in draws]
                ovs = [dr.f_overlaps if of == "features" else dr.w_overlaps for dr in draws]
                k = len(law.outliers)
                ks = [kolmogorov(e, law.cdf, k) for e in eig]
                base = dict(setting=s.name, simulated=s.sim, d=d, of=of, model=law.model,
                            seeds=n_seeds, sigma=s.sigma, target=s.target, beta=s.beta,
                            alpha=s.alpha, alpha0=s.alpha0, eta=s.eta, steps=s.steps)
                rows.append(dict(base, quantity="KS bulk", theory=0.0, sim=float(np.mean(ks)),
                                 se=float(np.std(ks, ddof=1) / math.sqrt(n_seeds)),
                                 worst=float(np.max(ks))))
                nxt = [np.sort(e)[-k - 1] for e in eig]
                rows.append(dict(base, quantity="bulk edge (largest bulk eigenvalue)",
                                 theory=law.edge, **_stat(nxt)))
                for i, o in enumerate(law.outliers):
                    vals = [np.sort(e)[-1 - i] for e in eig]
                    rows.append(dict(base, quantity=f"outlier {i + 1} ({o.channel})",
                                     theory=o.location, **_stat(vals)))
                    for name, val in o.overlaps.items():
                        if name in ovs[0]:
                            sims = [ov[name][i] for ov in ovs]
                            rows.append(dict(base, quantity=f"outlier {i + 1}: overlap {name}",
                                             theory=val, **_stat(sims)))
            for r in rows:
                r.setdefault("seconds", time.time() - t0)
    return rows


def _stat(v: list) -> dict:
    v = np.asarray(v, dtype=float)
    se = float(np.std(v, ddof=1) / math.sqrt(v.size)) if v.size > 1 else math.nan
    return dict(sim=float(v.mean()), se=se, worst=float(np.max(v)))


def report(rows: list[dict]) -> str:
    import pandas as pd

    df = pd.DataFrame(rows)
    if "simulated" not in df:  # the first export named the column "sim" twice
        df["simulated"] = [next(s.sim for s in SETTINGS if s.name == n) for n in df.setting]
    out = ["# Predicted spectra against simulation", "",
           f"Generated by `{COMMAND}` (raw rows: `validation/reports/data/spectra_theory.csv`; "
           "theory: `asymptotics.spectrum`, docs/THEORY.md §14). Matrices: `F^T F` (p x p, "
           "F = sigma(X W^T)/sqrt(p) on n = alpha d fresh inputs) and `W W^T` (the squared "
           "singular values of the first layer). `sim` is the mean over the draws, `se` its "
           "standard error, `z = (sim - theory)/se`; `KS bulk` is the Kolmogorov distance "
           "between the predicted law (atom included) and the eigenvalues without the predicted "
           "outliers (mean, and worst draw). The theory of the features is the sRF surrogate "
           "(K-group model of the steps for two steps); of the weights, the model named. The "
           "bulk edge row compares the predicted edge with the largest non-outlier eigenvalue, "
           "which sits O(p^(-2/3)) below it (Tracy-Widom): no z there.", ""]
    for name, g in df.groupby("setting", sort=False):
        r0 = g.iloc[0]
        out += [f"## {name}", "",
                f"sigma = {r0.sigma}, target = {r0.target}, beta = {r0.beta:g}, alpha = "
                f"{r0.alpha:g}, alpha0 = {r0.alpha0:g}, eta_tilde = {r0.eta:g}, steps = "
                f"{r0.steps}; simulated: {r0.simulated}.", "",
                "| d | seeds | matrix | model | quantity | theory | sim | sim - theory | se | z "
                "| worst |",
                "|---|---|---|---|---|---|---|---|---|---|---|"]
        for _, r in g.iterrows():
            zok = r.quantity.startswith("outlier") and r.se > 0
            z = (r.sim - r.theory) / r.se if zok else math.nan
            diff = "" if r.quantity == "KS bulk" else f"{r.sim - r.theory:+.3g}"
            out.append(f"| {r.d} | {r.seeds} | {r['of']} | {r.model} | {r.quantity} | "
                       f"{r.theory:.4g} | {r.sim:.4g} | {diff} | {r.se:.2g} | "
                       f"{'' if math.isnan(z) else f'{z:+.1f}'} | {r.worst:.4g} |")
        out.append("")
    ks = df[df.quantity == "KS bulk"]
    locs = df[df.quantity.str.startswith("outlier") & ~df.quantity.str.contains("overlap")]
    ovl = df[df.quantity.str.contains("overlap")]

    def zs(x):
        return ((x.sim - x.theory) / x.se).abs()

    miss = ovl[zs(ovl) > 3]
    out += ["## Summary", "",
            f"- Bulk: worst Kolmogorov distance over all draws {ks.worst.max():.4f} "
            f"({int((ks.worst <= 0.02).sum())} of {len(ks)} cells with every draw <= 0.02).",
            f"- Outlier locations: {int((zs(locs) <= 3).sum())} of {len(locs)} within 3 s.e. "
            f"(largest |z| {zs(locs).max():.1f}).",
            f"- Overlaps: {int((zs(ovl) <= 3).sum())} of {len(ovl)} within 3 s.e. (largest |z| "
            f"{zs(ovl).max():.1f}); largest |sim - theory| {(ovl.sim - ovl.theory).abs().max():.2g}"
            f", among the misses {(miss.sim - miss.theory).abs().max():.2g} (squared overlaps "
            f"{miss.theory.min():.4f}-{miss.theory.max():.4f}, standard errors "
            f"{miss.se.min():.1g}-{miss.se.max():.1g}: offsets of order 1/p).", ""]
    return "\n".join(out)


def build_parser():
    from asymptotics.cli.common import Parser, add_quiet

    parser = Parser(prog=COMMAND, description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="d = 1000 only, 2 draws; print the report, write no files")
    parser.add_argument("--large", action="store_true",
                        help="add the first setting at d = 4000 (5 draws, ~10 core-minutes) to "
                             "the CSV and rewrite the report")
    parser.add_argument("--report-only", action="store_true",
                        help="rewrite SPECTRA_THEORY.md from the committed CSV (no simulation)")
    add_quiet(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    import pandas as pd

    from asymptotics.cli.common import apply_quiet

    args = build_parser().parse_args(argv)
    quiet = apply_quiet(args)
    if args.report_only:
        REPORT.write_text(report(pd.read_csv(CSV).to_dict("records")) + "\n")
        return 0
    if args.large:
        old = pd.read_csv(CSV)
        new = pd.DataFrame(run(quiet=quiet, jobs=[(SETTINGS[0], 4000)]))
        old = old[~((old.setting == SETTINGS[0].name) & (old.d == 4000))]
        order = {s.name: i for i, s in enumerate(SETTINGS)}
        rows = pd.concat([old, new], ignore_index=True).sort_values(
            ["setting", "d"], kind="stable",
            key=lambda c: c.map(order) if c.name == "setting" else c)
        rows.to_csv(CSV, index=False)
        REPORT.write_text(report(rows.to_dict("records")) + "\n")
        return 0
    rows = run(quick=args.quick, quiet=quiet)
    text = report(rows)
    if args.quick:
        print(text)
        return 0
    CSV.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(CSV, index=False)
    REPORT.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
