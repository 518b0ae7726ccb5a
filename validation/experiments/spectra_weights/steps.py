"""Monte Carlo of the first layer after several giant steps with a constant or +-1 readout
against ``asymptotics.spectrum(of="weights", steps=T, readout=...)`` (docs/THEORY.md §16.6): the
section "Weights after several steps" of validation/reports/SPECTRA_THEORY.md.

Protocol (§1 with the steps of §12): rows of W0 uniform on the sphere, a_i = eps_i/sqrt(p) with
eps_i = 1 (constant) or +-1 (half each, ``pm1``), T full-batch steps eta = eta_tilde p on fresh
batches of n0 = alpha0 d samples of y = g(<theta, x>), theta = e_1. Per draw: the eigenvalues of
W W^T and, for the top eigenvectors, the squared overlaps of the left one with 1_p/sqrt(p) and
eps/sqrt(p), of the right one with theta and with the span of the groups' mean rows of W - W0
(the learned directions).

    python -m validation.experiments.spectra_weights.steps [--store FILE.sqlite] [--quiet]

The simulation is a :class:`validation.campaign.Campaign` (:func:`campaign`: one task per
(setting, d) cell, keyed by its full parameter record -- every field of the setting, d, the
number of draws, :data:`TOP` and :data:`VERSION`), run into a SQLite store (``--store``; default
beside the exported CSV, :func:`validation.paths.data_file`) that starts from the committed CSV
and its keys file, so stored cells are not rerun; every stored cell is exported, in the
settings' order then d, atomically to ``validation/reports/data/spectra_theory_steps.csv`` with
its keys file (about 4 core-minutes from scratch). The report's section is built from that CSV
by :func:`section`."""

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
#: the protocol's version (part of every task's key): raise it when a cell's rows change
VERSION = "2"
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
SEEDS = {500: 8, 1000: 4, 2000: 4, 4000: 4}


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


SHADOW_CSV = ROOT / "validation" / "reports" / "data" / "spectra_theory_steps_shadow.csv"
SHADOW_SEEDS = {1000: 6}
SHADOW_SCHEMA = Schema.of(setting=str, d=int, seeds=int, shadow=int, theory=float,
                          mean_rows=float, mean_rows_se=float, population=float,
                          population_se=float)


def shadow_cell(s: StepsSetting, d: int, n_seeds: int) -> list[dict]:
    """The outlier's right vector against the learned direction estimated two ways (one learned
    direction): the groups' mean rows of W - W0 (the campaign's ``learned span``) and the
    population spike from two independent sets of p shadow rows of the first readout value,
    ``(v.sA)(v.sB)/(sA.sB)`` (unbiased: the two estimates' errors are independent of each
    other and of W's bulk)."""
    law = spectrum("weights", sigma=s.sigma, target=s.target, alpha0=s.alpha0, eta=s.eta,
                   beta=s.beta, steps=s.steps, readout=s.readout, d=d, model="network")
    p = round(s.beta * d)
    cur, pop = [], []
    for seed in range(n_seeds):
        _, W0, W, eps, (S0, S, seps) = train(s, d, seed, shadow=2 * p)
        v = np.linalg.svd(W, full_matrices=False)[2][0]
        top = eps == eps.max()
        m = (W - W0)[top].mean(axis=0)
        cur.append((v @ m) ** 2 / (m @ m))
        D = (S - S0)[seps == seps.max()]
        sA, sB = D[:p].mean(axis=0), D[p:].mean(axis=0)
        pop.append((v @ sA) * (v @ sB) / (sA @ sB))
    se = lambda x: float(np.std(x, ddof=1) / math.sqrt(len(x)))  # noqa: E731
    return [dict(setting=s.name, d=d, seeds=n_seeds, shadow=2 * p,
                 theory=law.outliers[0].overlaps["learned span"], mean_rows=float(np.mean(cur)),
                 mean_rows_se=se(cur), population=float(np.mean(pop)), population_se=se(pop))]


def _shadow_task(job: tuple) -> list[dict]:
    return shadow_cell(*job)


def _shadow_record(job: tuple) -> dict:
    return {"setting": job[0], "d": job[1], "draws": job[2], "model": "network"}


def shadow_campaign() -> Campaign:
    """One task per (setting, d) of :data:`SHADOW_SEEDS`."""
    jobs = tuple((s, d, n) for s in SETTINGS for d, n in SHADOW_SEEDS.items())
    return setting_campaign("spectra_theory_steps_shadow", jobs, _shadow_task, SHADOW_SCHEMA,
                            VERSION, SETTINGS, _shadow_record)


def run_shadow(*, quiet: bool = False) -> Path:
    return refresh(shadow_campaign(), SHADOW_CSV, quiet=quiet)


def shadow_section() -> list[str]:
    """The paragraph of :func:`shadow_cell`'s committed CSV."""
    if not SHADOW_CSV.exists():
        return []
    df = pd.read_csv(SHADOW_CSV)
    out = ["The learned span's misses are the estimator's (`--shadow`; raw rows "
           "`validation/reports/data/spectra_theory_steps_shadow.csv`): the mean row "
           "of W - W0 (over the rows of the first readout value) shares the bulk rows' sample "
           "mean with the outlier's right vector, and "
           "after several steps with the opposite sign of the W0 part (the rows' scale "
           "sqrt(c) < 1). Against the population spike, estimated from 2p shadow rows per "
           "readout value trained on the same batches with the network's residual but not part "
           "of it (two independent halves, `(v.sA)(v.sB)/(sA.sB)`), the network theory's "
           "`learned span` compares as follows:", "",
           "| setting | d | seeds | theory | mean rows of W - W0 (se) | z | population (se) | "
           "z |", "|---|---|---|---|---|---|---|---|"]
    for _, r in df.iterrows():
        z1 = (r.mean_rows - r.theory) / r.mean_rows_se
        z2 = (r.population - r.theory) / r.population_se
        out.append(f"| {r.setting} | {r.d} | {r.seeds} | {r.theory:.6f} | {r.mean_rows:.6f} "
                   f"({r.mean_rows_se:.1g}) | {z1:+.1f} | {r.population:.6f} "
                   f"({r.population_se:.1g}) | {z2:+.1f} |")
    n_in = int((((df.population - df.theory) / df.population_se).abs() <= 3).sum())
    n_cur = int((((df.mean_rows - df.theory) / df.mean_rows_se).abs() <= 3).sum())
    out += ["", f"Within 3 s.e.: against the population spike {n_in} of {len(df)}, against the "
            f"mean rows {n_cur} of {len(df)} (the same draws).", ""]
    return out


def simulate(s: StepsSetting, d: int, seed: int) -> tuple[np.ndarray, dict]:
    """The eigenvalues of W W^T (ascending) and the squared overlaps of the top ``TOP``
    eigenvectors (dict name -> array)."""
    _, W0, W, eps = train(s, d, seed)
    p = W.shape[0]
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
    ov = {"mean": (U[:, :TOP].T @ np.ones(p)) ** 2 / p,
          "readout": (U[:, :TOP].T @ eps) ** 2 / p,
          "target 1": Vt[:TOP, 0] ** 2,
          "learned span": np.sum((Vt[:TOP] @ span) ** 2, axis=1),
          SIG_VV: float(np.mean(svv))}
    return np.sort(sv ** 2), ov


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
        sig = law.params.get("channels")
        fr = np.asarray(law.params["fractions"])
        svv = 1.0 if sig is None else float(fr @ np.asarray(sig)[:, 0, 0])
        rows += [dict(base, quantity="KS bulk", theory=0.0, sim=float(np.mean(ks)),
                      se=float(np.std(ks, ddof=1) / math.sqrt(n_seeds)),
                      worst=float(np.max(ks))),
                 dict(base, quantity="bulk edge (largest bulk eigenvalue)", theory=law.edge,
                      **_stat([ev[-k - 1] for ev, _ in draws])),
                 dict(base, quantity=SIG_VV, theory=svv,
                      **_stat([ov[SIG_VV] for _, ov in draws]))]
        for i, o in enumerate(law.outliers[:TOP]):
            rows.append(dict(base, quantity=f"outlier {i + 1} ({o.channel})",
                             theory=o.location, **_stat([ev[-1 - i] for ev, _ in draws])))
            for name, val in o.overlaps.items():
                if name in draws[0][1]:
                    rows.append(dict(base, quantity=f"outlier {i + 1}: overlap {name}",
                                     theory=val, **_stat([ov[name][i] for _, ov in draws])))
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
           "`learned span` (right vector's squared projection on the span of the spikes; "
           "simulated: the groups' mean rows of W - W0). The row `bulk variance along the "
           "learned direction` is `Sig_vv`, d Var(b.v)/c of the bulk rows b along the leading "
           "learned direction v (simulated: the top direction of that span; theory: the "
           "route's, 1 for the isotropic groups).", "",
           "| setting | d | seeds | model | quantity | theory | sim | se | z | worst |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for _, r in df.iterrows():
        zok = r.quantity.startswith("outlier") and r.se > 0
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
        ovl = m[m.quantity.str.contains("overlap")]
        o12 = ovl[ovl.d.isin([1000, 2000])]
        out.append(
            f"- `{model}`: bulk Kolmogorov distance {ks.sim.min():.4f}-{ks.sim.max():.4f} "
            f"(mean over draws; worst draw {ks.worst.max():.4f}; "
            f"{int((ks.worst <= 0.02).sum())} of {len(ks)} cells with every draw <= 0.02). "
            f"Outlier locations: {int((zs(locs) <= 3).sum())} of {len(locs)} within 3 s.e. "
            f"(largest |z| {zs(locs).max():.1f}). Overlaps: {int((zs(ovl) <= 3).sum())} of "
            f"{len(ovl)} within 3 s.e. (at d = 1000 and 2000: {int((zs(o12) <= 3).sum())} of "
            f"{len(o12)}; largest |sim - theory| {(ovl.sim - ovl.theory).abs().max():.2g}). "
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
    return out + [""] + measured_sig_section(df) + shadow_section()


def measured_sig_section(df: pd.DataFrame) -> list[str]:
    """The left overlaps with the route's ``Sig_vv`` replaced by the simulated one (theory only,
    from the CSV's rows at d = 1000 and 2000; one learned direction)."""
    from asymptotics.coefficients.functions import get_function
    from asymptotics.network.groups import model_channels, network_groups
    from asymptotics.spectra.netsteps import network_steps_weights

    out = ["The left overlaps with the bulk's variance along the spike taken from the "
           "simulation (the route's `Sig` with `Sig_vv` replaced by the row above; the "
           "network theory otherwise unchanged):", "",
           "| setting | d | Sig_vv route / sim | overlap | isotropic | network | with sim Sig_vv "
           "| sim (se) | z |", "|---|---|---|---|---|---|---|---|---|"]
    net = df[df.model == "network"]
    zs = []
    for (name, d), g in net[net.d.isin([1000, 2000])].groupby(["setting", "d"], sort=False):
        s = next(x for x in SETTINGS if x.name == name)
        svv = g[g.quantity == SIG_VV].iloc[0]
        ng = network_groups(s.sigma, s.target, steps=s.steps, alpha0=s.alpha0, eta=s.eta,
                            readout=s.readout)
        sig = np.array(model_channels(ng.states[-1], ng.cov[-1]))
        sig[:, 0, 0] = svv.sim
        o = network_steps_weights(get_function(s.sigma), s.target, alpha0=s.alpha0, eta=s.eta,
                                  delta=0.0, beta=s.beta, readout=s.readout, steps=s.steps,
                                  d=d, channels=sig)[3][0]
        q = "mean" if s.readout == "constant" else "readout"
        row = g[g.quantity == f"outlier 1: overlap {q}"].iloc[0]
        iso = df[(df.model == "srf") & (df.setting == name) & (df.d == d)
                 & (df.quantity == row.quantity)].iloc[0].theory
        z = (row.sim - o.overlaps[q]) / row.se
        zs.append(abs(z))
        out.append(f"| {name} | {d} | {svv.theory:.3f} / {svv.sim:.3f} | {q} | {iso:.6f} | "
                   f"{row.theory:.6f} | {o.overlaps[q]:.6f} | {row.sim:.6f} ({row.se:.1g}) | "
                   f"{z:+.1f} |")
    out += ["", f"With the simulated `Sig_vv`: {sum(z <= 3 for z in zs)} of {len(zs)} within "
            f"3 s.e. (largest |z| {max(zs):.1f}).", ""]
    return out


def retheory(model: str = "network") -> Path:
    """Recompute the theory columns of ``model``'s rows of the committed CSV after a change of
    the theory (no simulation; :func:`validation.experiments.spectra_weights.cells.retheory`);
    writes the CSV."""
    from validation.experiments.spectra_weights.cells import retheory as _retheory

    def law(s: StepsSetting, d: int) -> tuple:
        law = spectrum("weights", sigma=s.sigma, target=s.target, alpha0=s.alpha0, eta=s.eta,
                       beta=s.beta, steps=s.steps, readout=s.readout, d=d, model=model)
        sig = law.params.get("channels")
        fr = np.asarray(law.params["fractions"])
        return law, {SIG_VV: 1.0 if sig is None else float(fr @ np.asarray(sig)[:, 0, 0])}

    return _retheory(paths(), SETTINGS, model, law, TOP)


def main(argv: list[str] | None = None) -> int:
    from asymptotics.cli.common import Parser, add_quiet, apply_quiet

    parser = Parser(prog=COMMAND, description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--shadow", action="store_true",
                        help="the learned span against the population spike from shadow rows "
                             "(a second campaign, d = 1000)")
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
    if args.shadow:
        run_shadow(quiet=quiet)
    out = run(store=args.store, quiet=quiet)
    print("\n".join(section(pd.read_csv(out))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
