"""Polynomial spikes (eta ~ p^(1/2 + a)) against Monte Carlo: docs/THEORY.md §13.

``python -m validation.experiments.polynomial_spikes [--simulate] [--quick] [--ds 500,1000,2000]
[--seeds 24,12,8] [--out validation/reports]``

For each setting (activation, target, ``a``; ``beta = 1``, ``alpha0 = 2``, ``eta_tilde = 2``,
``alpha = 2``, ``lam = 0.1``, no label noise) and each ``d``:

- **theory**: :func:`asymptotics.multiindex.polynomial_spikes.polynomial_spike_risk`, the
  ``d -> infinity`` limit (random features plus unpenalised columns ``kappa^l``, ``l in S``);
- **network** (Monte Carlo of the protocol): one full-batch step with the Gaussian frozen readout
  and ``eta = eta_tilde p^(1/2 + a)`` (:func:`validation.spectrum.model.simulate`, streams of
  :data:`validation.spectrum.model.STREAMS`), then ridge on the readout with the sum loss on
  ``n = alpha d`` fresh samples and the test error on ``N_TEST`` fresh noiseless inputs
  (:func:`validation.multistep.simulator.ridge_test_error`); repetition ``i`` is seed ``SEED + i``;
- **columns** (Monte Carlo of the limit model): random features ``sigma(X W0^T)`` plus explicit
  unpenalised columns ``kappa^l`` (``kappa = <v, x>``, ``v = gamma theta + rho t``), ridge on
  the features only; it separates the closure (is the limit right?) from the convergence of the
  network to it;
- **K-group**: the finite-width K-group model of the step (THEORY.md §11 with the Gaussian
  readout quantised on ``K_NODES`` Gauss-Hermite nodes, ``eta = eta_tilde p^(a - 1/2)``,
  width ``p``), :func:`asymptotics.risk_readout`;
- **RF**: random features (``eta_tilde = 0``).

The runs are a :class:`validation.campaign.Campaign` (one task per setting, d, kind and
repetition, keyed by its full parameter record) run into a SQLite store and exported to
``validation/reports/data/polynomial_spikes_runs.csv`` (in a checkout; else the user cache,
:func:`validation.paths.data_file`), in the plan's order; stored tasks are not re-run. The report
``POLYNOMIAL_SPIKES.md`` is written from that CSV with the theory recomputed, together with the
K-group model at widths ``P_LADDER`` (its approach to the limit) and the notes
:data:`NOTES`; the table also goes to ``data/polynomial_spikes_table.csv``. ``--quick``: d = 500
with 2 repetitions, not stored (a smoke test; the report goes to
``--out/POLYNOMIAL_SPIKES_quick.md``). Without ``--out`` the report is only printed.
Budget of the committed runs (d = 500, 1000, 2000 with 24, 12, 8 repetitions, five settings, one
thread): about 18 core-minutes.
"""

from __future__ import annotations

import math
import pathlib
import time

import numpy as np
import pandas as pd

from validation.campaign import Campaign, Schema, run_rows
from validation.paths import data_file

REPORTS = pathlib.Path(__file__).resolve().parents[2] / "reports"
RUNS = REPORTS / "data" / "polynomial_spikes_runs.csv"
CHECK = REPORTS / "data" / "polynomial_spikes_check.csv"
SEED = 13000
COMMON = dict(beta=1.0, alpha0=2.0, eta=2.0, alpha=2.0, lam=0.1, delta=0.0)
SETTINGS = (
    dict(name="relu-tanh-0.1", sigma="relu", target="tanh", a=0.1),
    dict(name="relu-tanh-0.2", sigma="relu", target="tanh", a=0.2),
    dict(name="erf-He2-0.28", sigma="erf(z-1)", target="z + (z**2-1)/2", a=0.28),
    dict(name="erf-He2-0.30", sigma="erf(z-1)", target="z + (z**2-1)/2", a=0.30),
    dict(name="relu-He2-0.2", sigma="relu", target="z + (z**2-1)/2", a=0.2),
)
N_TEST = 4000
K_NODES = 10
P_LADDER = (1e3, 1e4, 1e6, 1e8, 1e10)
#: the report's discussion: a template whose numbers are placeholders filled from the table and
#: whose qualitative claims are assertions on it (validation.campaign.template.render)
NOTES = REPORTS / "polynomial_spikes_notes.md"
#: the check of the limit model with the step's own gamma: d and repetitions
CHECK_DS = (500, 1000, 2000)
CHECK_SEEDS = 8
#: the settings of the check: the step's direction and S depend on (sigma, target, alpha0) and
#: on which side of a = 1/4 the exponent is, so relu/tanh at a = 0.2 and erf(z-1) at a = 0.30
#: would repeat the draws of a = 0.1 and a = 0.28 number for number
CHECK_SETTINGS = ("relu-tanh-0.1", "erf-He2-0.28", "relu-He2-0.2")
SCHEMA = Schema.of(setting=str, sigma=str, target=str, a=float, d=int, p=int, kind=str, rep=int,
                   risk=float, seconds=float)
COLUMNS = list(SCHEMA.names)
REGENERATE = ("python -m validation.experiments.polynomial_spikes --simulate "
              "--out validation/reports")


def theory(setting: dict):
    from asymptotics.multiindex.polynomial_spikes import polynomial_spike_risk

    c = COMMON
    return polynomial_spike_risk(c["alpha"], a=setting["a"], sigma=setting["sigma"],
                                 target=setting["target"], alpha0=c["alpha0"], eta=c["eta"],
                                 lam=c["lam"], beta=c["beta"], delta=c["delta"])


def kgroup(setting: dict, p: int, nodes: int = K_NODES) -> float:
    """The K-group model of the step at width p, the Gaussian readout on ``nodes`` nodes."""
    from asymptotics import risk_readout
    from asymptotics.coefficients.gauss_rules import gauss_hermite

    z, w = gauss_hermite(nodes)
    readout = {float(v): float(x) for v, x in zip(z, w, strict=True)}
    s = sum(readout.values())
    readout = {v: x / s for v, x in readout.items()}
    c = COMMON
    res = risk_readout(c["alpha"], readout=readout, sigma=setting["sigma"],
                       target=setting["target"], alpha0=c["alpha0"],
                       eta=c["eta"] * p ** (setting["a"] - 0.5), lam=c["lam"], beta=c["beta"],
                       delta=c["delta"], p=float(p))
    return float(res.risk) if res.converged else math.nan


def network_run(setting: dict, d: int, rep: int) -> float:
    """One repetition of the protocol (module docstring)."""
    from asymptotics.coefficients.functions import get_function
    from asymptotics.multiindex.spikes import target_function
    from validation.multistep.simulator import ridge_test_error
    from validation.spectrum.model import StepConfig, simulate

    c = COMMON
    cfg = StepConfig(d=d, a1=setting["a"], beta=c["beta"], alpha0=c["alpha0"],
                     sigma=setting["sigma"], target=setting["target"], eta1=c["eta"],
                     readout="gaussian", delta=c["delta"], seed=SEED + rep)
    sim = simulate(cfg)
    g, _ = target_function(setting["target"], None)
    ss = np.random.SeedSequence([SEED + rep, 7]).spawn(3)
    err, _ = ridge_test_error(sim.W1, sim.theta, g, get_function(setting["sigma"]),
                              n_ridge=int(round(c["alpha"] * d)), lam=c["lam"], n_test=N_TEST,
                              delta=c["delta"], ridge_seed=ss[0], noise_seed=ss[1],
                              test_seed=ss[2])
    return float(err)


def columns_run(setting: dict, d: int, rep: int, gamma: float | None = None,
                orders: tuple[int, ...] | None = None) -> float:
    """Random features plus explicit unpenalised columns kappa^l, l in S (the limit model);
    ``gamma`` and ``orders`` default to the theory's (:func:`theory`)."""
    from asymptotics.coefficients.functions import get_function
    from validation.protocol.montecarlo import sphere_rows

    if gamma is None or orders is None:
        th = theory(setting)
        gamma = th.gamma if gamma is None else gamma
        orders = th.orders if orders is None else orders
    c = COMMON
    rng = np.random.default_rng([SEED + rep, 11])
    sigma, g = get_function(setting["sigma"]), get_function(setting["target"])
    p, n = int(round(c["beta"] * d)), int(round(c["alpha"] * d))
    W = sphere_rows(rng, p, d)
    q, _ = np.linalg.qr(rng.standard_normal((d, 2)))
    theta, t = q[:, 0], q[:, 1]
    v = gamma * theta + math.sqrt(max(0.0, 1.0 - gamma * gamma)) * t

    def design(X):
        F = sigma(X @ W.T) / math.sqrt(p)
        kap = X @ v
        C = np.stack([kap**l for l in orders], axis=1) if orders else np.zeros((len(X), 0))
        return F, C

    X = rng.standard_normal((n, d))
    y = g(X @ theta)
    F, C = design(X)
    if C.shape[1]:
        Qc, _ = np.linalg.qr(C)
        Fp = F - Qc @ (Qc.T @ F)
        yp = y - Qc @ (Qc.T @ y)
    else:
        Fp, yp = F, y
    A = Fp.T @ Fp
    A[np.diag_indices_from(A)] += c["lam"]
    a = np.linalg.solve(A, Fp.T @ yp)
    b = np.linalg.lstsq(C, y - F @ a, rcond=None)[0] if C.shape[1] else np.zeros(0)
    Xt = rng.standard_normal((N_TEST, d))
    Ft, Ct = design(Xt)
    return float(np.mean((g(Xt @ theta) - Ft @ a - Ct @ b) ** 2))


KINDS = {"network": network_run, "columns": columns_run}


# ------------------------------------------------------------------------------------------------
# the limit model with the step's own gamma and independently derived orders


def divergent_orders(setting: dict, nodes: int = 120) -> tuple[int, ...]:
    """``S`` recomputed without the code under test: the orders ``l <= 2`` whose Hermite
    coefficient of sigma is nonzero (Gauss-Hermite quadrature, ``numpy.polynomial``) and whose
    relative penalty ``p^(-(1 - l (1 - 2a)))`` vanishes (THEORY.md §13.2-13.3)."""
    from asymptotics.coefficients.functions import get_function

    z, w = np.polynomial.hermite_e.hermegauss(nodes)
    w = w / w.sum()
    s = get_function(setting["sigma"])(z)
    he = (np.ones_like(z), z, z * z - 1)
    return tuple(l for l in range(3) if abs(float(w @ (s * he[l]))) > 1e-6
                 and 1 - l * (1 - 2 * setting["a"]) > 0)


def step_gamma(setting: dict, d: int, rep: int) -> float:
    """``|<v, theta>|`` of the simulated step: ``v`` the top right singular vector of
    ``W1 - W0`` of repetition ``rep`` of the network (the same step as :func:`network_run`)."""
    from scipy.sparse.linalg import svds

    from validation.spectrum.model import StepConfig, simulate

    c = COMMON
    sim = simulate(StepConfig(d=d, a1=setting["a"], beta=c["beta"], alpha0=c["alpha0"],
                              sigma=setting["sigma"], target=setting["target"], eta1=c["eta"],
                              readout="gaussian", delta=c["delta"], seed=SEED + rep))
    _, _, vt = svds(sim.W1 - sim.W0, k=1, random_state=0)
    return abs(float(vt[0] @ sim.theta[0]))


CHECK_SCHEMA = Schema.of(setting=str, sigma=str, target=str, a=float, d=int, rep=int,
                         gamma=float, gamma_theory=float, orders=str, risk=float, theory=float,
                         seconds=float)


def _check_task(job: tuple[dict, int, int]) -> list[dict]:
    s, d, rep = job
    t0 = time.perf_counter()
    gamma, orders, th = step_gamma(s, d, rep), divergent_orders(s), theory(s)
    risk = columns_run(s, d, rep, gamma=gamma, orders=orders)
    return [dict(setting=s["name"], sigma=s["sigma"], target=s["target"], a=s["a"], d=d,
                 rep=rep, gamma=gamma, gamma_theory=th.gamma,
                 orders=",".join(map(str, orders)), risk=risk, theory=th.risk,
                 seconds=time.perf_counter() - t0)]


def check_campaign(ds=CHECK_DS, seeds: int = CHECK_SEEDS,
                   settings=tuple(s for s in SETTINGS if s["name"] in CHECK_SETTINGS)
                   ) -> Campaign:
    """The limit model fed with the step's own gamma (:func:`step_gamma`) and the orders of
    :func:`divergent_orders`: one task per (setting, d, repetition)."""
    jobs = tuple((s, int(d), rep) for s in settings for d in ds for rep in range(seeds))
    names = [s["name"] for s in SETTINGS]
    return Campaign("polynomial_spikes_check", jobs, _check_task, CHECK_SCHEMA,
                    key_columns=("setting", "d", "rep"),
                    key=lambda j: (j[0]["name"], j[1], j[2]),
                    rank=lambda r: (names.index(r["setting"]) if r["setting"] in names
                                    else len(names), r["d"], r["rep"]),
                    record=lambda j: {"job": j, "common": COMMON, "n_test": N_TEST,
                                      "seed": SEED})


def check(save: bool = True, progress: bool | None = True, n_jobs: int = 1) -> pd.DataFrame:
    """The rows of :func:`check_campaign` (run what the store lacks; exported to
    ``data/polynomial_spikes_check.csv`` like the runs)."""
    c = check_campaign()
    read, write = data_file(CHECK, "validation", "reports", "data")
    return run_rows(c, read, write, save=save, n_jobs=n_jobs, progress=progress)


def paths() -> tuple[pathlib.Path, pathlib.Path]:
    """``(read, write)`` of the runs' CSV (:func:`validation.paths.data_file`)."""
    return data_file(RUNS, "validation", "reports", "data")


def load_runs() -> pd.DataFrame:
    read = paths()[0]
    if read.exists():
        return pd.read_csv(read)
    return pd.DataFrame(columns=COLUMNS)


def _task(job: tuple[dict, int, str, int]) -> list[dict]:
    """The row of one repetition ``rep`` of ``kind`` for ``setting`` at ``d``."""
    s, d, kind, rep = job
    t0 = time.perf_counter()
    risk = KINDS[kind](s, d, rep)
    return [dict(setting=s["name"], sigma=s["sigma"], target=s["target"], a=s["a"], d=d,
                 p=int(round(COMMON["beta"] * d)), kind=kind, rep=rep, risk=risk,
                 seconds=time.perf_counter() - t0)]


def _rank(row) -> tuple:
    """The export's order: the settings' order, d, network before columns, repetition."""
    names = [s["name"] for s in SETTINGS]
    kinds = list(KINDS)
    return (names.index(row["setting"]) if row["setting"] in names else len(names), row["d"],
            kinds.index(row["kind"]) if row["kind"] in kinds else len(kinds), row["rep"])


def campaign(ds: list[int], seeds: list[int], kinds=("network", "columns"),
             settings=SETTINGS) -> Campaign:
    """One task per (setting, d, kind, repetition); its record holds the setting, d, kind,
    repetition and the common parameters (:data:`COMMON`, :data:`N_TEST`, :data:`SEED`)."""
    jobs = tuple((s, int(d), kind, rep) for s in settings for d, ns in zip(ds, seeds, strict=True)
                 for kind in kinds for rep in range(ns))
    return Campaign("polynomial_spikes_runs", jobs, _task, SCHEMA,
                    key_columns=("setting", "d", "kind", "rep"),
                    key=lambda j: (j[0]["name"], j[1], j[2], j[3]), rank=_rank,
                    record=lambda j: {"job": j, "common": COMMON, "n_test": N_TEST,
                                      "seed": SEED, "k_nodes": K_NODES})


def simulate(ds: list[int], seeds: list[int], kinds=("network", "columns"),
             settings=SETTINGS, save: bool = True, progress: bool | None = True,
             n_jobs: int = 1) -> pd.DataFrame:
    """Run the repetitions the store lacks (:func:`validation.campaign.run_campaign`) and return
    the plan's rows. ``save``: the store is the SQLite file beside the runs' CSV (it starts
    from the CSV and its keys file) and every stored run is exported to the CSV; else nothing
    is kept. ``progress``: the run's progress on stderr."""
    c = campaign(ds, seeds, kinds, settings)
    read, write = paths()
    return run_rows(c, read, write, save=save, n_jobs=n_jobs, progress=progress)


def table(df: pd.DataFrame, settings=SETTINGS) -> pd.DataFrame:
    """One row per (setting, d): theory, network and columns mean ± s.e., z-scores, K-group, RF."""
    out = []
    for s in settings:
        th = theory(s)
        sub = df[df.setting == s["name"]]
        for d in sorted(sub.d.unique()):
            row = dict(setting=s["name"], sigma=s["sigma"], target=s["target"], a=s["a"],
                       ell=th.ell, orders=",".join(map(str, th.orders)), d=int(d),
                       theory=th.risk, rf=th.risk_rf)
            for kind in ("network", "columns"):
                x = sub[(sub.d == d) & (sub.kind == kind)].risk.to_numpy(dtype=float)
                m = float(np.mean(x)) if x.size else math.nan
                se = float(np.std(x, ddof=1) / math.sqrt(x.size)) if x.size > 1 else math.nan
                row[f"{kind}_n"] = int(x.size)
                row[f"{kind}_mean"], row[f"{kind}_se"] = m, se
                row[f"{kind}_z"] = (m - th.risk) / se if se > 0 else math.nan
            row["kgroup"] = kgroup(s, int(round(COMMON["beta"] * d)))
            out.append(row)
    return pd.DataFrame(out)


def load_check() -> pd.DataFrame | None:
    read = data_file(CHECK, "validation", "reports", "data")[0]
    return pd.read_csv(read) if read.exists() else None
