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
from validation.campaign import Campaign, Schema, refresh_csv
from validation.experiments.spectra_sim import kolmogorov, sphere

ROOT = Path(__file__).resolve().parents[3]
CSV = ROOT / "validation" / "reports" / "data" / "spectra_theory_steps.csv"
COMMAND = "python -m validation.experiments.spectra_weights.steps"
TOP = 2  # outliers compared at most
#: the protocol's version (part of every task's key): raise it when a cell's rows change
VERSION = "1"
#: the exported CSV's columns
SCHEMA = Schema.of(setting=str, d=int, seeds=int, steps=int, readout=str, sigma=str, target=str,
                   beta=float, alpha0=float, eta=float, quantity=str, theory=float, sim=float,
                   se=float, worst=float, seconds=float, theory_seconds=float)


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
SEEDS = {1000: 4, 2000: 4}


def train(s, d: int, seed: int) -> tuple[np.random.Generator, np.ndarray, np.ndarray,
                                          np.ndarray]:
    """(the generator, W0, W after the steps, the readout eps) of the protocol (module
    docstring) for a setting with the fields of :class:`StepsSetting`."""
    rng = np.random.default_rng(seed)
    sig, dsig = get_function(s.sigma), get_function(s.sigma).derivative
    g = get_function(s.target.replace("(z1)", ""))
    p, n0 = round(s.beta * d), round(s.alpha0 * d)
    eps = np.ones(p)
    if s.readout == "pm1":
        eps[rng.permutation(p)[: p // 2]] = -1.0
    W0 = sphere(rng, p, d)
    W = W0.copy()
    for _ in range(s.steps):
        X = rng.standard_normal((n0, d))
        H = X @ W.T
        e = g(X[:, 0]) - sig(H) @ eps / p  # f = (1/p) sum_i eps_i sigma(<w_i, x>)
        W = W + (s.eta / n0) * ((dsig(H) * e[:, None]).T @ X) * eps[:, None]
    return rng, W0, W, eps


def simulate(s: StepsSetting, d: int, seed: int) -> tuple[np.ndarray, dict]:
    """The eigenvalues of W W^T (ascending) and the squared overlaps of the top ``TOP``
    eigenvectors (dict name -> array)."""
    _, W0, W, eps = train(s, d, seed)
    p = W.shape[0]
    D = W - W0
    means = np.stack([D[eps == v].mean(axis=0) for v in np.unique(eps)])
    Qs, sv, _ = np.linalg.svd(means.T, full_matrices=False)
    span = Qs[:, sv > 1e-8 * sv[0]]
    U, sv, Vt = np.linalg.svd(W, full_matrices=False)
    ov = {"mean": (U[:, :TOP].T @ np.ones(p)) ** 2 / p,
          "readout": (U[:, :TOP].T @ eps) ** 2 / p,
          "target 1": Vt[:TOP, 0] ** 2,
          "learned span": np.sum((Vt[:TOP] @ span) ** 2, axis=1)}
    return np.sort(sv ** 2), ov


def _stat(v) -> dict:
    v = np.asarray(v, dtype=float)
    se = float(np.std(v, ddof=1) / math.sqrt(v.size)) if v.size > 1 else math.nan
    return dict(sim=float(v.mean()), se=se, worst=float(np.max(v)))


def cell(s: StepsSetting, d: int, n_seeds: int) -> list[dict]:
    """The rows of one (setting, d): KS of the bulk, its edge, each predicted outlier's location
    and overlaps."""
    t0 = time.perf_counter()
    law = spectrum("weights", sigma=s.sigma, target=s.target, alpha0=s.alpha0, eta=s.eta,
                   beta=s.beta, steps=s.steps, readout=s.readout, d=d)
    t_law = time.perf_counter() - t0
    draws = [simulate(s, d, seed) for seed in range(n_seeds)]
    k = len(law.outliers)
    base = dict(setting=s.name, d=d, seeds=n_seeds, steps=s.steps, readout=s.readout,
                sigma=s.sigma, target=s.target, beta=s.beta, alpha0=s.alpha0, eta=s.eta)
    ks = [kolmogorov(ev, law.cdf, k) for ev, _ in draws]
    rows = [dict(base, quantity="KS bulk", theory=0.0, sim=float(np.mean(ks)),
                 se=float(np.std(ks, ddof=1) / math.sqrt(n_seeds)), worst=float(np.max(ks))),
            dict(base, quantity="bulk edge (largest bulk eigenvalue)", theory=law.edge,
                 **_stat([ev[-k - 1] for ev, _ in draws]))]
    for i, o in enumerate(law.outliers[:TOP]):
        rows.append(dict(base, quantity=f"outlier {i + 1} ({o.channel})", theory=o.location,
                         **_stat([ev[-1 - i] for ev, _ in draws])))
        for name, val in o.overlaps.items():
            if name in draws[0][1]:
                rows.append(dict(base, quantity=f"outlier {i + 1}: overlap {name}",
                                 theory=val, **_stat([ov[name][i] for _, ov in draws])))
    seconds = time.perf_counter() - t0
    for r in rows:
        r.update(seconds=seconds, theory_seconds=t_law)
    return rows


def plan() -> list[tuple[StepsSetting, int, int]]:
    """The (setting, d, draws) cells: every setting at every d of :data:`SEEDS`."""
    return [(s, d, n) for s in SETTINGS for d, n in SEEDS.items()]


def _task(job: tuple[StepsSetting, int, int]) -> list[dict]:
    return cell(*job)


def _record(job: tuple[StepsSetting, int, int]) -> dict:
    """A task's parameter record: every field of the setting, d, the number of draws and the
    number of outliers compared."""
    s, d, n_seeds = job
    return {"setting": s, "d": d, "draws": n_seeds, "top": TOP}


def _rank(row: dict) -> tuple:
    """The export's order of the tasks: the settings' order in :data:`SETTINGS`, then d."""
    names = [s.name for s in SETTINGS]
    return (names.index(row["setting"]) if row["setting"] in names else len(names), row["d"])


def _cell(v: object) -> str:
    from validation.protocol.rows import g10_cell

    return g10_cell(v)


def campaign() -> Campaign:
    """One task per (setting, d) cell of :func:`plan`, keyed by its parameter record
    (:func:`_record`) and :data:`VERSION`; exported in the settings' order (:func:`_rank`) with
    ``%.10g`` cells."""
    return Campaign("spectra_theory_steps", tuple(plan()), _task, SCHEMA,
                    key_columns=("setting", "d"), key=lambda j: (j[0].name, j[1]),
                    cell=_cell, version=VERSION, record=_record, rank=_rank)


def paths() -> tuple[Path, Path]:
    """``(read, write)`` of the CSV (:func:`validation.paths.data_file`)."""
    from validation.paths import data_file

    return data_file(CSV, "validation", "reports", "data")


def run(*, store: str | Path | None = None, quiet: bool = False) -> Path:
    """Run the cells of :func:`campaign` the store lacks and export every stored cell to the
    CSV (module docstring); returns the CSV written."""
    c = campaign()
    read, write = paths()
    refresh_csv(c, read, write, store=store, progress=not quiet)
    return write


def section(df: pd.DataFrame | None = None) -> list[str]:
    """The report's section (from the committed CSV when ``df`` is None; empty without it)."""
    if df is None:
        if not CSV.exists():
            return []
        df = pd.read_csv(CSV)
    r0 = df.iloc[0]
    out = ["## Weights after several steps (constant and +-1 readouts)", "",
           f"`spectrum(of='weights', steps=T, readout=...)` (docs/THEORY.md §16.6: the groups of "
           f"the steps, a row-variance Marchenko-Pastur bulk and the spikes as a low-rank "
           f"perturbation) against the trained network (`{COMMAND}`; raw rows "
           f"`validation/reports/data/spectra_theory_steps.csv`). sigma = {r0.sigma}, target = "
           f"{r0.target}, beta = {r0.beta:g}, alpha0 = {r0.alpha0:g}, eta_tilde = {r0.eta:g}, "
           "fresh batches. Overlaps: `mean`, `readout` (left vector with 1_p/sqrt(p), "
           "eps/sqrt(p)), `target 1` (right vector with theta), `learned span` (right vector's "
           "squared projection on the span of the spikes; simulated: the groups' mean rows of "
           "W - W0).", "",
           "| setting | d | seeds | quantity | theory | sim | se | z | worst |",
           "|---|---|---|---|---|---|---|---|---|"]
    for _, r in df.iterrows():
        zok = r.quantity.startswith("outlier") and r.se > 0
        z = (r.sim - r.theory) / r.se if zok else math.nan
        out.append(f"| {r.setting} | {r.d} | {r.seeds} | {r.quantity} | {r.theory:.4g} | "
                   f"{r.sim:.4g} | {r.se:.2g} | {'' if math.isnan(z) else f'{z:+.1f}'} | "
                   f"{r.worst:.4g} |")
    ks = df[df.quantity == "KS bulk"]
    locs = df[df.quantity.str.startswith("outlier") & ~df.quantity.str.contains("overlap")]
    ovl = df[df.quantity.str.contains("overlap")]

    def zs(x: pd.DataFrame) -> pd.Series:
        return ((x.sim - x.theory) / x.se).abs()

    out += ["", f"Bulk: Kolmogorov distance {ks.sim.min():.4f}-{ks.sim.max():.4f} (mean over "
            f"draws; worst draw {ks.worst.max():.4f}; {int((ks.worst <= 0.02).sum())} of "
            f"{len(ks)} cells with every draw <= 0.02). Outlier locations: "
            f"{int((zs(locs) <= 3).sum())} of {len(locs)} within 3 s.e. (largest |z| "
            f"{zs(locs).max():.1f}). Overlaps: {int((zs(ovl) <= 3).sum())} of {len(ovl)} within "
            f"3 s.e. (largest |sim - theory| {(ovl.sim - ovl.theory).abs().max():.2g}). "
            f"Theory per cell: {df.theory_seconds.max():.2f} s at most (cold caches included).",
            ""]
    return out


def main(argv: list[str] | None = None) -> int:
    from asymptotics.cli.common import Parser, add_quiet, apply_quiet

    parser = Parser(prog=COMMAND, description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--store", default=None,
                        help="the SQLite store (.sqlite; default beside the exported CSV)")
    add_quiet(parser)
    args = parser.parse_args(argv)
    if args.store is not None and not args.store.endswith(".sqlite"):
        print(f"error: --store must name a .sqlite file (the campaign's SQLite store), got "
              f"{args.store}", file=sys.stderr)
        return 2
    quiet = apply_quiet(args)
    out = run(store=args.store, quiet=quiet)
    print("\n".join(section(pd.read_csv(out))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
