"""Monte Carlo of the first layer after several giant steps with a constant or +-1 readout
against ``asymptotics.spectrum(of="weights", steps=T, readout=...)`` (docs/THEORY.md §16.6): the
section "Weights after several steps" of validation/reports/SPECTRA_THEORY.md.

Protocol (§1 with the steps of §12): rows of W0 uniform on the sphere, a_i = eps_i/sqrt(p) with
eps_i = 1 (constant) or +-1 (half each, ``pm1``), T full-batch steps eta = eta_tilde p on fresh
batches of n0 = alpha0 d samples of y = g(<theta, x>), theta = e_1. Per draw: the eigenvalues of
W W^T and, for the top eigenvectors, the squared overlaps of the left one with 1_p/sqrt(p) and
eps/sqrt(p), of the right one with theta and with the groups' population spike (the learned
direction, from shadow rows: :func:`population_overlaps`; the span of the groups' mean rows of
W - W0 beside it, the former estimator, biased at first order, docs/DERIVATIONS.md §11).

    python -m validation.experiments.spectra_weights.steps [--store FILE.sqlite] [--quiet]

The simulation is a :class:`validation.campaign.Campaign` (:func:`campaign`: one task per
(setting, d) cell, keyed by its full parameter record -- every field of the setting, d, the
number of draws, :data:`TOP` and :data:`VERSION`), run into a SQLite store (``--store``; default
beside the exported CSV, :func:`validation.paths.data_file`) that starts from the committed CSV
and its keys file, so stored cells are not rerun; every stored cell is exported, in the
settings' order then d, atomically to ``validation/reports/data/spectra_theory_steps.csv`` with
its keys file (about 15 core-minutes from scratch, most of it the two d = 4000 cells). The
report's section is built from that CSV by :func:`section` (its notes:
:mod:`validation.experiments.spectra_weights.notes`)."""

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
from validation.experiments.spectra_sim import kolmogorov, sphere
from validation.experiments.spectra_weights.cells import cell_task, refresh, setting_campaign

ROOT = Path(__file__).resolve().parents[3]
CSV = ROOT / "validation" / "reports" / "data" / "spectra_theory_steps.csv"
COMMAND = "python -m validation.experiments.spectra_weights.steps"
TOP = 2  # outliers compared at most
#: the theories compared: the network route's groups with their bulk covariance on E, and the
#: isotropic groups of the steps (docs/THEORY.md §16.6)
MODELS = ("network", "srf")
SIG_VV = "bulk variance along the learned direction (d Var(b.v)/c)"
#: the population spike's squared overlap with theta (shadow rows; theory: |V^T theta|^2)
POP_TARGET = "population spike: overlap target 1"
#: the former estimator's offset, paired per draw (theory: O (c - 1)/(p |s|^2), §16.6)
BIAS = "learned span: mean rows - population"
#: shadow rows per network row (split evenly over the readout values; :func:`simulate`)
SHADOW_ROWS = 0.25
#: the protocol's version (part of every task's key): raise it when a cell's rows change
VERSION = "3"
#: the exported CSV's columns
SCHEMA = Schema.of(setting=str, d=int, seeds=int, model=str, steps=int, readout=str, sigma=str,
                   target=str, beta=float, alpha0=float, eta=float, quantity=str, theory=float,
                   sim=float, se=float, worst=float, seconds=float, theory_seconds=float)


@dataclass(frozen=True)
class StepsSetting:
    name: str
    steps: int
    readout: str
    sigma: str = "tanh"
    target: str = "tanh(z1)"
    beta: float = 0.5
    alpha0: float = 2.0
    eta: float = 1.0


SETTINGS = tuple(StepsSetting(f"{T} steps, {ro} readout", T, ro)
                 for ro in ("constant", "pm1") for T in (2, 3))
SEEDS = {500: 8, 1000: 4, 2000: 4, 4000: 8}


def train(s, d: int, seed: int, shadow: int = 0) -> tuple:
    """(the generator, W0, W after the steps, the readout eps) of the protocol (module
    docstring) for a setting with the fields of :class:`StepsSetting`. ``shadow > 0`` adds
    ``(S0, S)``: ``shadow`` rows per readout value that take the same steps on the same batches
    with the network's residual but are not part of it (their own generator: W is the same
    draw), whose mean update estimates the groups' population spike independently of W's bulk."""
    rng = np.random.default_rng(seed)
    sig, dsig = get_function(s.sigma), get_function(s.sigma).derivative
    g = get_function(s.target.replace("(z1)", ""))
    p, n0 = round(s.beta * d), round(s.alpha0 * d)
    eps = np.ones(p)
    if s.readout == "pm1":
        eps[rng.permutation(p)[: p // 2]] = -1.0
    W0 = sphere(rng, p, d)
    W = W0.copy()
    vals = np.unique(eps)[::-1]
    S0 = sphere(np.random.default_rng([seed, 1]), shadow * len(vals), d) if shadow else None
    S, seps = (S0.copy(), np.repeat(vals, shadow)) if shadow else (None, None)
    for _ in range(s.steps):
        X = rng.standard_normal((n0, d))
        H = X @ W.T
        e = g(X[:, 0]) - sig(H) @ eps / p  # f = (1/p) sum_i eps_i sigma(<w_i, x>)
        W = W + (s.eta / n0) * ((dsig(H) * e[:, None]).T @ X) * eps[:, None]
        if shadow:
            S = S + (s.eta / n0) * ((dsig(X @ S.T) * e[:, None]).T @ X) * seps[:, None]
    return (rng, W0, W, eps) if not shadow else (rng, W0, W, eps, (S0, S, seps))


def population_overlaps(vecs: np.ndarray, D: np.ndarray, seps: np.ndarray) -> np.ndarray:
    """The squared overlaps of the unit vectors ``vecs`` (rows) with the groups' population
    spike, estimated without bias from shadow rows (docs/THEORY.md §16.6, "which direction"):
    ``D`` the shadow rows' updates ``S - S0``, ``seps`` their readout values. The spikes of the
    readout values are collinear here (one group; or +-1 with an odd sigma, whose group -1 is
    group +1 mirrored: ``s_- = -s_+``), so the sign-pooled updates ``eps_i D_i`` share one mean
    ``s``; two independent halves (the first and second half of each value's rows) give
    ``(v.sA)(v.sB)/(sA.sB)``: numerator and denominator unbiased, their errors independent of
    each other and of W, the ratio's bias O(1/(p d))."""
    halves = ([], [])
    for g in np.unique(seps):
        idx = np.flatnonzero(seps == g)
        halves[0].append(g * D[idx[: idx.size // 2]])
        halves[1].append(g * D[idx[idx.size // 2:]])
    sA, sB = (np.concatenate(h).mean(axis=0) for h in halves)
    return (vecs @ sA) * (vecs @ sB) / (sA @ sB)


def simulate(s: StepsSetting, d: int, seed: int) -> tuple[np.ndarray, dict]:
    """The eigenvalues of W W^T (ascending) and the squared overlaps of the top ``TOP``
    eigenvectors (dict name -> array). ``learned span`` is against the population spike
    (:func:`population_overlaps`, from :data:`SHADOW_ROWS` shadow rows a readout value, which
    leave W's draw unchanged); ``learned span (mean rows)`` the former plug-in, the span of the
    groups' mean rows of W - W0 (biased by ``O (c - 1)/(p |s|^2)``, docs/THEORY.md §16.6)."""
    p = round(s.beta * d)
    vals = 2 if s.readout == "pm1" else 1
    _, W0, W, eps, (S0, S, seps) = train(s, d, seed, shadow=round(SHADOW_ROWS * p / vals))
    D = W - W0
    means = np.stack([D[eps == v].mean(axis=0) for v in np.unique(eps)])
    Qs, sv, _ = np.linalg.svd(means.T, full_matrices=False)
    span = Qs[:, sv > 1e-8 * sv[0]]
    # the bulk's variance along the leading learned direction, d Var(b.v)/c per group
    v = span[:, 0]
    svv = []
    for g in np.unique(eps):
        Bg = W[eps == g] - W[eps == g].mean(axis=0)
        svv.append(d * float(np.var(Bg @ v)) / float(np.mean(np.sum(Bg ** 2, axis=1))))
    U, sv, Vt = np.linalg.svd(W, full_matrices=False)
    plug = np.sum((Vt[:TOP] @ span) ** 2, axis=1)
    pop = population_overlaps(Vt[:TOP], S - S0, seps)
    theta = np.zeros((1, d))
    theta[0, 0] = 1.0
    ov = {"mean": (U[:, :TOP].T @ np.ones(p)) ** 2 / p,
          "readout": (U[:, :TOP].T @ eps) ** 2 / p,
          "target 1": Vt[:TOP, 0] ** 2,
          "learned span": pop,
          "learned span (mean rows)": plug,
          BIAS: plug - pop,
          SIG_VV: float(np.mean(svv)),
          POP_TARGET: float(population_overlaps(theta, S - S0, seps)[0])}
    return np.sort(sv ** 2), ov


#: the first outlier's overlap with the span of the groups' mean rows of W - W0 (not counted)
MEAN_ROWS = "outlier 1: overlap learned span (mean rows)"


def extra_theory(law, d: int) -> dict:
    """The theory of the rows beside the outliers' (:func:`cell`): ``Sig_vv`` (the sRF
    groups: 1), the population spike's ``|V^T theta|^2``, and for the first outlier the mean
    rows' overlap (the theory's learned span) and their bias ``O (cbar - 1)/(p |s|^2)``
    (docs/THEORY.md §16.6; ``cbar``, ``|s|^2`` the fractions' means of the groups' ``c_g``
    and ``|l_g|^2``)."""
    prm = law.params
    sig = prm.get("channels")
    fr = np.asarray(prm["fractions"], float)
    out = {SIG_VV: 1.0 if sig is None else float(fr @ np.asarray(sig)[:, 0, 0]),
           POP_TARGET: float(np.sum(np.asarray(prm["learned_target_overlaps"])[:, 0] ** 2))}
    if law.outliers:
        o = law.outliers[0].overlaps["learned span"]
        cbar = float(fr @ np.asarray(prm["bulk"], float))
        s2 = float(fr @ np.sum(np.asarray(prm["loadings"], float) ** 2, axis=1))
        out.update({MEAN_ROWS: o, BIAS: o * (cbar - 1.0) / (round(prm["beta"] * d) * s2)})
    return out


def _stat(v) -> dict:
    v = np.asarray(v, dtype=float)
    se = float(np.std(v, ddof=1) / math.sqrt(v.size)) if v.size > 1 else math.nan
    return dict(sim=float(v.mean()), se=se, worst=float(np.max(v)))


def cell(s: StepsSetting, d: int, n_seeds: int) -> list[dict]:
    """The rows of one (setting, d), per theory of :data:`MODELS`: KS of the bulk, its edge,
    each predicted outlier's location and overlaps, and the bulk's variance along the learned
    direction (:data:`SIG_VV`; the sRF groups: 1)."""
    laws, secs = {}, {}
    for model in MODELS:
        t0 = time.perf_counter()
        laws[model] = spectrum("weights", sigma=s.sigma, target=s.target, alpha0=s.alpha0,
                               eta=s.eta, beta=s.beta, steps=s.steps, readout=s.readout, d=d,
                               model=model)
        secs[model] = time.perf_counter() - t0
    t0 = time.perf_counter()
    draws = [simulate(s, d, seed) for seed in range(n_seeds)]
    t_sim = time.perf_counter() - t0
    rows = []
    for model, law in laws.items():
        k = len(law.outliers)
        base = dict(setting=s.name, d=d, seeds=n_seeds, model=model, steps=s.steps,
                    readout=s.readout, sigma=s.sigma, target=s.target, beta=s.beta,
                    alpha0=s.alpha0, eta=s.eta)
        ks = [kolmogorov(ev, law.cdf, k) for ev, _ in draws]
        extra = extra_theory(law, d)
        rows += [dict(base, quantity="KS bulk", theory=0.0, sim=float(np.mean(ks)),
                      se=float(np.std(ks, ddof=1) / math.sqrt(n_seeds)),
                      worst=float(np.max(ks))),
                 dict(base, quantity="bulk edge (largest bulk eigenvalue)", theory=law.edge,
                      **_stat([ev[-k - 1] for ev, _ in draws])),
                 dict(base, quantity=SIG_VV, theory=extra[SIG_VV],
                      **_stat([ov[SIG_VV] for _, ov in draws])),
                 dict(base, quantity=POP_TARGET, theory=extra[POP_TARGET],
                      **_stat([ov[POP_TARGET] for _, ov in draws]))]
        for i, o in enumerate(law.outliers[:TOP]):
            rows.append(dict(base, quantity=f"outlier {i + 1} ({o.channel})",
                             theory=o.location, **_stat([ev[-1 - i] for ev, _ in draws])))
            for name, val in o.overlaps.items():
                if name in draws[0][1]:
                    rows.append(dict(base, quantity=f"outlier {i + 1}: overlap {name}",
                                     theory=val, **_stat([ov[name][i] for _, ov in draws])))
            if i == 0:
                for q, key in ((MEAN_ROWS, "learned span (mean rows)"), (BIAS, BIAS)):
                    rows.append(dict(base, quantity=q, theory=extra[q],
                                     **_stat([ov[key][0] for _, ov in draws])))
        for r in rows:
            if r["model"] == model:
                r.update(seconds=t_sim + secs[model], theory_seconds=secs[model])
    return rows


def plan() -> list[tuple[StepsSetting, int, int]]:
    """The (setting, d, draws) cells: every setting at every d of :data:`SEEDS` (d = 4000 for
    the constant readout only)."""
    return [(s, d, n) for s in SETTINGS for d, n in SEEDS.items()
            if d < 4000 or s.readout == "constant"]


def campaign() -> Campaign:
    """One task per (setting, d) cell of :func:`plan` (:func:`setting_campaign`)."""
    task, record = cell_task(cell, TOP, MODELS)
    return setting_campaign("spectra_theory_steps", plan(), task, SCHEMA, VERSION, SETTINGS,
                            record)


def paths() -> tuple[Path, Path]:
    """``(read, write)`` of the CSV (:func:`validation.paths.data_file`)."""
    from validation.paths import data_file

    return data_file(CSV, "validation", "reports", "data")


def run(*, store: str | Path | None = None, quiet: bool = False) -> Path:
    """Run the cells of :func:`campaign` the store lacks and export every stored cell to the
    CSV (module docstring); returns the CSV written."""
    return refresh(campaign(), CSV, store=store, quiet=quiet)


def section(df: pd.DataFrame | None = None) -> list[str]:
    """The report's section (from the committed CSV when ``df`` is None; empty without it)."""
    from validation.experiments.spectra_sim import fit_inverse_p

    if df is None:
        if not CSV.exists():
            return []
        df = pd.read_csv(CSV)
    r0 = df.iloc[0]
    out = ["## Weights after several steps (constant and +-1 readouts)", "",
           f"`spectrum(of='weights', steps=T, readout=..., model=...)` (docs/THEORY.md §16.6: "
           "`srf` the isotropic groups of the steps, a row-variance Marchenko-Pastur bulk and "
           "the spikes as a low-rank perturbation; `network` the network route's groups with "
           "each group's bulk covariance `c_g Sig_g` on the span E of the spikes and the "
           "target, its coordinates on E a part of the perturbation) against the trained "
           f"network (`{COMMAND}`; raw rows `validation/reports/data/spectra_theory_steps.csv`)."
           f" sigma = {r0.sigma}, target = {r0.target}, beta = {r0.beta:g}, alpha0 = "
           f"{r0.alpha0:g}, eta_tilde = {r0.eta:g}, fresh batches. Overlaps: `mean`, `readout` "
           "(left vector with 1_p/sqrt(p), eps/sqrt(p)), `target 1` (right vector with theta), "
           "`learned span` (right vector's squared projection on the span of the groups' "
           "population spikes, the theory's `V`; simulated without bias from shadow rows, "
           "below; the former estimator, the span of the groups' mean rows of W - W0, is the "
           "row `learned span (mean rows)`, not counted, and `mean rows - population` its "
           "offset paired per draw against the first-order bias `O (c - 1)/(p |s|^2)` of "
           "docs/THEORY.md §16.6). `population spike: overlap target 1` is the spike's own "
           "`|V^T theta|^2` (shadow rows; theory: the route's `gamma^2`), a diagnosis of the "
           "`target 1` rows, not counted. The row `bulk variance along the "
           "learned direction` is `Sig_vv`, d Var(b.v)/c of the bulk rows b along the leading "
           "learned direction v (simulated: the top direction of the mean rows' span; theory: "
           "the route's, 1 for the isotropic groups).", "",
           "| setting | d | seeds | model | quantity | theory | sim | se | z | worst |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for _, r in df.iterrows():
        zok = (r.quantity.startswith("outlier") or r.quantity in (POP_TARGET, BIAS)) \
            and r.se > 0
        z = (r.sim - r.theory) / r.se if zok else math.nan
        out.append(f"| {r.setting} | {r.d} | {r.seeds} | {r.model} | {r.quantity} | "
                   f"{r.theory:.6g} | {r.sim:.6g} | {r.se:.2g} | "
                   f"{'' if math.isnan(z) else f'{z:+.1f}'} | {r.worst:.6g} |")

    def zs(x: pd.DataFrame) -> pd.Series:
        return ((x.sim - x.theory) / x.se).abs()

    out.append("")
    for model in MODELS:
        m = df[df.model == model]
        ks = m[m.quantity == "KS bulk"]
        locs = m[m.quantity.str.startswith("outlier") & ~m.quantity.str.contains("overlap")]
        ovl = counted_overlaps(m)
        o12 = ovl[ovl.d.isin([1000, 2000])]
        out.append(
            f"- `{model}`: bulk Kolmogorov distance {ks.sim.min():.4f}-{ks.sim.max():.4f} "
            f"(mean over draws; worst draw {ks.worst.max():.4f}; "
            f"{int((ks.worst <= 0.02).sum())} of {len(ks)} cells with every draw <= 0.02). "
            f"Outlier locations: {int((zs(locs) <= 3).sum())} of {len(locs)} within 3 s.e. "
            f"(largest |z| {zs(locs).max():.1f}). Overlaps: {int((zs(ovl) <= 3).sum())} of "
            f"{len(ovl)} within 3 s.e. (largest |z| {zs(ovl).max():.1f}; at d = 1000 and "
            f"2000: {int((zs(o12) <= 3).sum())} of {len(o12)}, largest |z| "
            f"{zs(o12).max():.1f}; largest |sim - theory| "
            f"{(ovl.sim - ovl.theory).abs().max():.2g}). "
            f"Theory per cell: {m.theory_seconds.max():.2f} s at most (cold caches included).")
    out += ["", "The offsets (sim - theory) of the squared overlaps near 1 over d, fitted as "
            "k/p through 0 (weighted; k with its 95% half-width and the fit's chi2), and the "
            "ratio of the simulated deficit 1 - overlap to the theory's:", "",
            "| setting | model | quantity | k | chi2/dof | sim deficit / theory deficit by d |",
            "|---|---|---|---|---|---|"]
    near = df[df.quantity.str.contains("overlap") & (df.theory > 0.99)]
    for (name, model, q), g in near.groupby(["setting", "model", "quantity"], sort=False):
        if len(g) < 2:
            continue
        k, h, chi2 = fit_inverse_p(g.beta * g.d, g.sim - g.theory, g.se)
        ratios = ", ".join(f"{int(r.d)}: {(1 - r.sim) / (1 - r.theory):.3f}"
                           for _, r in g.iterrows())
        out.append(f"| {name} | {model} | {q.split(': ')[-1]} | {k:+.3g} +- {h:.2g} | "
                   f"{chi2:.1f}/{len(g) - 1} | {ratios} |")
    return out + [""]


def counted_overlaps(df: pd.DataFrame) -> pd.DataFrame:
    """The overlap rows the summary counts: every outlier's overlap but the former estimator's
    (``(mean rows)``)."""
    q = df.quantity
    return df[q.str.startswith("outlier") & q.str.contains("overlap")
              & ~q.str.contains("(mean rows)", regex=False)]


def retheory(model: str = "network") -> Path:
    """Recompute the theory columns of ``model``'s rows of the committed CSV after a change of
    the theory (no simulation; :func:`validation.experiments.spectra_weights.cells.retheory`);
    writes the CSV."""
    from validation.experiments.spectra_weights.cells import retheory as _retheory

    def law(s: StepsSetting, d: int) -> tuple:
        law = spectrum("weights", sigma=s.sigma, target=s.target, alpha0=s.alpha0, eta=s.eta,
                       beta=s.beta, steps=s.steps, readout=s.readout, d=d, model=model)
        return law, extra_theory(law, d)

    return _retheory(paths(), SETTINGS, model, law, TOP)


def main(argv: list[str] | None = None) -> int:
    from asymptotics.cli.common import Parser, add_quiet, apply_quiet

    parser = Parser(prog=COMMAND, description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--retheory", action="store_true",
                        help="recompute the network theory's columns of the committed CSV (no "
                             "simulation) and print the section")
    parser.add_argument("--store", default=None,
                        help="the SQLite store (.sqlite; default beside the exported CSV)")
    add_quiet(parser)
    args = parser.parse_args(argv)
    if bad_store_arg(args.store):
        return 2
    quiet = apply_quiet(args)
    if args.retheory:
        print("\n".join(section(pd.read_csv(retheory()))))
        return 0
    out = run(store=args.store, quiet=quiet)
    print("\n".join(section(pd.read_csv(out))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
