"""Monte Carlo of the learned features after several giant steps with a constant or +-1 readout
against ``asymptotics.spectrum(of="features", model="network", steps=T, readout=...)``
(docs/THEORY.md §16.8) and its sRF surrogate (``model="srf"``): the section "Features after
several steps" of validation/reports/SPECTRA_THEORY.md.

Protocol: the steps of :func:`validation.experiments.spectra_weights.steps.train` (rows of W0 on
the sphere, a_i = eps_i/sqrt(p), T full-batch steps eta = eta_tilde p on fresh batches), then
the eigenvalues of F^T F, F = sigma(X W^T)/sqrt(p) on n = alpha d fresh inputs, and for the top
eigenvectors u the squared overlaps with 1_p/sqrt(p) (``mean``), eps/sqrt(p) (``readout``), the
span of the bulk's columns on the learned directions (``learned span (B V)``: the columns
P_g B v, B = W minus its group's mean row, v in the span of the groups' mean rows of W - W0, its
dimension the theory's r) and on the target's part outside it (``target (B t)``).

    python -m validation.experiments.spectra_weights.features [--store FILE.sqlite] [--quiet]

A :class:`validation.campaign.Campaign` (one task per (setting, d), keyed by its full record
and :data:`VERSION`) exported to ``validation/reports/data/spectra_theory_features_steps.csv``
(about 3 core-minutes from scratch); :func:`section` builds the report's section."""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from asymptotics import spectrum
from asymptotics.coefficients.functions import get_function
from validation.campaign import Campaign, Schema
from validation.campaign.store import bad_store_arg
from validation.experiments.spectra_sim import kolmogorov
from validation.experiments.spectra_weights.cells import cell_task, refresh, setting_campaign
from validation.experiments.spectra_weights.steps import train

ROOT = Path(__file__).resolve().parents[3]
CSV = ROOT / "validation" / "reports" / "data" / "spectra_theory_features_steps.csv"
COMMAND = "python -m validation.experiments.spectra_weights.features"
TOP = 2  # outliers compared at most
MODELS = ("network", "srf")
OVERLAPS = ("mean", "readout", "learned span (B V)", "target (B t)")
#: the protocol's version (part of every task's key): raise it when a cell's rows change
VERSION = "2"
#: the row-slope diagnosis' version (its theory is the route's law with the isotropic bulk
#: outside E, unchanged when the main campaign's law took the bulk outside E)
ROWSLOPE_VERSION = "1"
SCHEMA = Schema.of(setting=str, d=int, seeds=int, model=str, steps=int, readout=str, sigma=str,
                   target=str, beta=float, alpha=float, alpha0=float, eta=float, quantity=str,
                   theory=float, sim=float, se=float, worst=float, seconds=float,
                   theory_seconds=float)


@dataclass(frozen=True)
class FeaturesSetting:
    name: str
    steps: int
    readout: str
    sigma: str = "tanh"
    target: str = "tanh(z1)"
    beta: float = 0.5
    alpha: float = 4.0
    alpha0: float = 2.0
    eta: float = 1.0


SETTINGS = (FeaturesSetting("2 steps, constant readout", 2, "constant"),
            FeaturesSetting("2 steps, pm1 readout", 2, "pm1"),
            FeaturesSetting("2 steps, pm1 readout, relu", 2, "pm1", sigma="relu",
                            target="relu(z1)", alpha=2.0, alpha0=1.0))
SEEDS = {1000: 6, 2000: 4}


def _unit_span(cols: list[np.ndarray]) -> np.ndarray:
    Q, R = np.linalg.qr(np.stack(cols, axis=1))
    keep = np.abs(np.diag(R)) > 1e-10 * max(1.0, float(np.max(np.abs(np.diag(R)))))
    return Q[:, keep]


def simulate(s: FeaturesSetting, d: int, seed: int, r: int) -> tuple[np.ndarray, dict]:
    """The eigenvalues of F^T F (ascending) and the squared overlaps of its top ``TOP``
    eigenvectors (module docstring); ``r`` the dimension of the learned span."""
    rng, W0, W, eps = train(s, d, seed)
    p = W.shape[0]
    sig = get_function(s.sigma)
    X = rng.standard_normal((round(s.alpha * d), d))
    F = sig(X @ W.T) / math.sqrt(p)
    ev, vec = np.linalg.eigh(F.T @ F)
    U = vec[:, ::-1][:, :TOP]
    groups = [eps == v for v in np.unique(eps)]
    D = W - W0
    means = np.stack([D[m].mean(axis=0) for m in groups])
    Vs = np.linalg.svd(means.T, full_matrices=False)[0][:, :r]
    B = W.copy()
    for m in groups:
        B[m] -= W[m].mean(axis=0)
    theta = np.zeros(d)
    theta[0] = 1.0
    t = theta - Vs @ (Vs.T @ theta)
    t /= np.linalg.norm(t)

    def span(dirs: np.ndarray) -> np.ndarray:
        cols = []
        for m in groups:
            for j in range(dirs.shape[1]):
                c = np.zeros(p)
                c[m] = B[m] @ dirs[:, j]
                cols.append(c)
        return _unit_span(cols)

    ov = {"mean": (U.T @ np.ones(p)) ** 2 / p, "readout": (U.T @ eps) ** 2 / p,
          "learned span (B V)": np.sum((U.T @ span(Vs)) ** 2, axis=1),
          "target (B t)": np.sum((U.T @ span(t[:, None])) ** 2, axis=1)}
    return ev, ov


def _stat(v) -> dict:
    v = np.asarray(v, dtype=float)
    se = float(np.std(v, ddof=1) / math.sqrt(v.size)) if v.size > 1 else math.nan
    return dict(sim=float(v.mean()), se=se, worst=float(np.max(v)))


def cell(s: FeaturesSetting, d: int, n_seeds: int) -> list[dict]:
    """The rows of one (setting, d), per model of :data:`MODELS`: KS of the bulk, its edge, the
    predicted outliers' locations and overlaps."""
    t0 = time.perf_counter()
    laws, secs = {}, {}
    for model in MODELS:
        t1 = time.perf_counter()
        laws[model] = spectrum("features", alpha=s.alpha, sigma=s.sigma, target=s.target,
                               alpha0=s.alpha0, eta=s.eta, beta=s.beta, steps=s.steps,
                               readout=s.readout, model=model, d=d)
        secs[model] = time.perf_counter() - t1
    r = len(laws["network"].params["loadings"][0])
    draws = [simulate(s, d, seed, r) for seed in range(n_seeds)]
    rows = []
    for model, law in laws.items():
        k = len(law.outliers)
        base = dict(setting=s.name, d=d, seeds=n_seeds, model=model, steps=s.steps,
                    readout=s.readout, sigma=s.sigma, target=s.target, beta=s.beta,
                    alpha=s.alpha, alpha0=s.alpha0, eta=s.eta, theory_seconds=secs[model])
        ks = [kolmogorov(ev, law.cdf, k) for ev, _ in draws]
        rows += [dict(base, quantity="KS bulk", theory=0.0, sim=float(np.mean(ks)),
                      se=float(np.std(ks, ddof=1) / math.sqrt(n_seeds)),
                      worst=float(np.max(ks))),
                 dict(base, quantity="bulk edge (largest bulk eigenvalue)", theory=law.edge,
                      **_stat([ev[-k - 1] for ev, _ in draws]))]
        for i, o in enumerate(law.outliers[:TOP]):
            rows.append(dict(base, quantity=f"outlier {i + 1} ({o.channel})",
                             theory=o.location, **_stat([ev[-1 - i] for ev, _ in draws])))
            for name in OVERLAPS:
                if name in o.overlaps and not (name == "readout" and s.readout == "constant"):
                    rows.append(dict(base, quantity=f"outlier {i + 1}: overlap {name}",
                                     theory=o.overlaps[name],
                                     **_stat([ov[name][i] for _, ov in draws])))
    seconds = time.perf_counter() - t0
    for row in rows:
        row["seconds"] = seconds
    return rows


def plan() -> list[tuple[FeaturesSetting, int, int]]:
    return [(s, d, n) for s in SETTINGS for d, n in SEEDS.items()]


def campaign() -> Campaign:
    """One task per (setting, d) of :func:`plan`, keyed by its record and :data:`VERSION`
    (:func:`validation.experiments.spectra_weights.steps.setting_campaign`)."""
    task, record = cell_task(cell, TOP, MODELS)
    return setting_campaign("spectra_theory_features_steps", plan(), task, SCHEMA, VERSION,
                            SETTINGS, record)


def paths() -> tuple[Path, Path]:
    from validation.paths import data_file

    return data_file(CSV, "validation", "reports", "data")


def run(*, store: str | Path | None = None, quiet: bool = False) -> Path:
    return refresh(campaign(), CSV, store=store, quiet=quiet)


def section(df: pd.DataFrame | None = None) -> list[str]:
    """The report's section (from the committed CSV when ``df`` is None; empty without it)."""
    if df is None:
        if not CSV.exists():
            return []
        df = pd.read_csv(CSV)
    out = ["## Features after several steps (constant and +-1 readouts)", "",
           "`spectrum(of='features', model='network', steps=T, readout=...)` (docs/THEORY.md "
           "§16.8: the K-group V-part on the network route's groups and its bulk outside the "
           "span E of the spikes and of the target, the route's K-group generalised "
           "Marchenko-Pastur law at lam = -z; the means and the bulk's columns on E, coupled to "
           "the bulk outside E, as channels) and the sRF "
           f"surrogate (`model='srf'`) against the trained network (`{COMMAND}`; raw rows "
           "`validation/reports/data/spectra_theory_features_steps.csv`). beta = 0.5, "
           "eta_tilde = 1, fresh batches. Overlaps of the top eigenvectors of F^T F with "
           "1_p/sqrt(p) (`mean`), eps/sqrt(p) (`readout`), the span of the bulk's columns "
           "P_g B v on the learned span (`learned span (B V)`) and P_g B t on the target's "
           "part outside it (`target (B t)`).", "",
           "| setting | sigma | alpha | alpha0 | d | seeds | model | quantity | theory | sim | "
           "se | z | worst |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for _, r in df.iterrows():
        zok = r.quantity.startswith("outlier") and r.se > 0
        z = (r.sim - r.theory) / r.se if zok else math.nan
        out.append(f"| {r.setting} | {r.sigma} | {r.alpha:g} | {r.alpha0:g} | {r.d} | "
                   f"{r.seeds} | {r.model} | {r.quantity} | {r.theory:.4g} | {r.sim:.4g} | "
                   f"{r.se:.2g} | {'' if math.isnan(z) else f'{z:+.1f}'} | {r.worst:.4g} |")

    def zs(x: pd.DataFrame) -> pd.Series:
        return ((x.sim - x.theory) / x.se).abs()

    out.append("")
    for model in MODELS:
        m = df[df.model == model]
        ks = m[m.quantity == "KS bulk"]
        locs = m[m.quantity.str.startswith("outlier") & ~m.quantity.str.contains("overlap")]
        ovl = m[m.quantity.str.contains("overlap")]
        out.append(f"- `{model}`: bulk Kolmogorov distance {ks.sim.min():.4f}-{ks.sim.max():.4f}"
                   f" (worst draw {ks.worst.max():.4f}; {int((ks.worst <= 0.02).sum())} of "
                   f"{len(ks)} cells with every draw <= 0.02); outlier locations "
                   f"{int((zs(locs) <= 3).sum())} of {len(locs)} within 3 s.e. (largest |z| "
                   f"{zs(locs).max():.1f}); overlaps {int((zs(ovl) <= 3).sum())} of {len(ovl)} "
                   f"within 3 s.e. (largest |z| {zs(ovl).max():.1f}); a law "
                   f"{m.theory_seconds.max():.1f} s at most (cold caches included).")
    return out + [""] + row_slope_section(df)


ROWSLOPE_CSV = ROOT / "validation" / "reports" / "data" / "spectra_theory_features_rowslope.csv"


ROWSLOPE_SCHEMA = Schema.of(setting=str, d=int, seeds=int, lam=float, lam_se=float,
                            left=str, left_without=float, left_with=float, BV_without=float,
                            BV_with=float)
ROWSLOPE_DIMS = (1000, 2000)
ROWSLOPE_SEEDS = 4


def row_slope_cell(s: FeaturesSetting, d: int, n_seeds: int) -> list[dict]:
    """The diagnosis of the features' overlap misses at one (setting, d) (one learned
    direction): the rows' bulk-variance slope ``lam`` = Cov(|b_i|^2, b_i.v)/Var(b_i.v) per group
    measured on the trained layers (v the top direction of the groups' mean rows of W - W0; the
    table gives it along each group's loading), and the network theory's overlaps without and
    with that channel (:func:`asymptotics.spectra.netsteps.network_steps_outliers`,
    ``row_slope``)."""
    from asymptotics.spectra.features import features_bulk
    from asymptotics.spectra.netsteps import network_steps_outliers, network_steps_params
    from asymptotics.spiked.problem import build_spiked_problem

    sg = get_function(s.sigma)
    gp, sig, values = network_steps_params(sg, s.target, steps=s.steps, alpha0=s.alpha0,
                                           eta=s.eta, delta=0.0, readout=s.readout)
    L = np.asarray(gp["loadings"], float)
    prob = build_spiked_problem(sigma=sg, lam=0.01, beta=s.beta, delta=0.0, **gp)
    sol, support, _ = features_bulk(prob, s.alpha)
    lams = []
    for seed in range(n_seeds):
        _, W0, W, eps = train(s, d, seed)
        groups = [eps == v for v in np.unique(eps)[::-1]]  # the route's order: descending
        D = W - W0
        means = np.stack([D[m].mean(axis=0) for m in groups])
        v = np.linalg.svd(means.T, full_matrices=False)[0][:, 0]
        flip = np.sign(L[0, 0] * (W[groups[0]].mean(axis=0) @ v))
        lam_g = []
        for m in groups:
            B = W[m] - W[m].mean(axis=0)
            bv, ck = B @ v, np.sum(B ** 2, axis=1)
            lam_g.append(flip * np.cov(ck, bv)[0, 1] / np.var(bv, ddof=1))
        lams.append(lam_g)
    lams = np.asarray(lams)
    per = lams @ np.sign(L[:, 0]) / L.shape[0]  # along each group's own loading
    left = "mean" if s.readout == "constant" else "readout"
    row = dict(setting=s.name, d=d, seeds=n_seeds, lam=float(per.mean()),
               lam_se=float(per.std(ddof=1) / math.sqrt(n_seeds)), left=left)
    for tag, rs in (("without", None), ("with", lams.mean(axis=0)[:, None])):
        o = network_steps_outliers(prob, s.alpha, sol, support[-1][1], d, sig, values,
                                   row_slope=rs)[0]
        row[f"left_{tag}"] = o.overlaps[left]
        row[f"BV_{tag}"] = o.overlaps["learned span (B V)"]
    return [row]


def row_slope_campaign() -> Campaign:
    """One task per (setting with one learned direction, d) of the diagnosis."""
    jobs = tuple((s, d, ROWSLOPE_SEEDS) for s in SETTINGS if s.sigma == "tanh"
                 for d in ROWSLOPE_DIMS)
    return setting_campaign("spectra_theory_features_rowslope", jobs, _row_slope_task,
                            ROWSLOPE_SCHEMA, ROWSLOPE_VERSION, SETTINGS, _row_slope_record)


def _row_slope_task(job: tuple) -> list[dict]:
    return row_slope_cell(*job)


def _row_slope_record(job: tuple) -> dict:
    return {"setting": job[0], "d": job[1], "draws": job[2]}


def run_row_slope(*, quiet: bool = False) -> Path:
    return refresh(row_slope_campaign(), ROWSLOPE_CSV, quiet=quiet)


def row_slope_section(df: pd.DataFrame) -> list[str]:
    """The diagnosis table (:func:`row_slope_rows`) beside the campaign's simulated overlaps."""
    if not ROWSLOPE_CSV.exists():
        return []
    rs = pd.read_csv(ROWSLOPE_CSV)
    out = ["Diagnosis of the overlap misses (`--row-slope`; raw rows `validation/reports/data/"
           "spectra_theory_features_rowslope.csv`): the network route carries no "
           "bulk-variance channel (the rows' variances c_i regressed on their coordinate along "
           "the learned direction, which adds `sqrt(c) lam nu(kappa)`, nu = d mu0/dc, to the "
           "learned channel's left vector, as after one step, docs/THEORY.md §16.2). Measured "
           "on the trained layers, `lam` does not shrink with d (an O(1) coefficient of the "
           "1/p overlaps, not a finite-size term; the theory here is the law with the isotropic "
           "bulk outside E, whose overlaps differ from the table's by < 1e-6); with it the "
           "theory's overlaps move onto the "
           "simulated ones for the constant readout (|z| <= 1) and most of the way for the "
           "+-1 readout (a remainder of about 1e-4 in the left overlap, 8e-5 in B V at "
           "d = 2000):", "",
           "| setting | d | lam (sim, along each group's loading) | left overlap: theory / "
           "with lam / sim (se) | B V overlap: theory / with lam / sim (se) |",
           "|---|---|---|---|---|"]
    for _, r in rs.iterrows():
        left = r.left
        sim = df[(df.setting == r.setting) & (df.d == r.d) & (df.model == "network")]

        def pick(q: str, sim: pd.DataFrame = sim) -> str:
            x = sim[sim.quantity == f"outlier 1: overlap {q}"]
            if not len(x):
                return "-"
            x = x.iloc[0]
            return f"{x.sim:.6g} ({x.se:.1g})"

        out.append(f"| {r.setting} | {r.d} | {r.lam:+.4f} +- {r.lam_se:.1g} | "
                   f"{r.left_without:.6g} / {r.left_with:.6g} / {pick(left)} | "
                   f"{r.BV_without:.4g} / {r.BV_with:.4g} / {pick('learned span (B V)')} |")
    return out + [""]


def retheory(model: str = "network") -> Path:
    """Recompute the theory columns of ``model``'s rows of the committed CSV after a change of
    the theory (no simulation; :func:`validation.experiments.spectra_weights.cells.retheory`);
    writes the CSV."""
    from validation.experiments.spectra_weights.cells import retheory as _retheory

    def law(s: FeaturesSetting, d: int) -> tuple:
        return spectrum("features", alpha=s.alpha, sigma=s.sigma, target=s.target,
                        alpha0=s.alpha0, eta=s.eta, beta=s.beta, steps=s.steps,
                        readout=s.readout, model=model, d=d), {}

    return _retheory(paths(), SETTINGS, model, law, TOP)


def main(argv: list[str] | None = None) -> int:
    from asymptotics.cli.common import Parser, add_quiet, apply_quiet

    parser = Parser(prog=COMMAND, description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--store", default=None,
                        help="the SQLite store (.sqlite; default beside the exported CSV)")
    parser.add_argument("--retheory", action="store_true",
                        help="recompute the network theory's columns of the committed CSV (no "
                             "simulation) and print the section")
    parser.add_argument("--row-slope", action="store_true",
                        help="measure the rows' bulk-variance slope on the trained layers and "
                             "write the diagnosis CSV (~2 core-minutes)")
    add_quiet(parser)
    args = parser.parse_args(argv)
    if bad_store_arg(args.store):
        return 2
    quiet = apply_quiet(args)
    if args.retheory:
        print("\n".join(section(pd.read_csv(retheory()))))
        return 0
    if args.row_slope:
        run_row_slope(quiet=quiet)
    out = run(store=args.store, quiet=quiet)
    print("\n".join(section(pd.read_csv(out))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
