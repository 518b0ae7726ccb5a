"""Multi-step experiments: what a few giant steps learn of a multi-index target (THEORY.md §8).

The data and analysis of the experiments (the figures and the command that writes the report,
``python -m figures.multistep_report [--quick] [--force]``, are in
:mod:`figures.multistep_report`):

* (i) ``staircase``: ``g = z1 + z1 z2 + z1 z2 z3``, ``n = 16 d``, three steps;
* (ii) ``he2_linear``: ``g = He2(z1)`` (leap 2) with ``n = 16 d`` (three steps; step 1 is the
  one-step experiment) and ``he2_quadratic``: one step with ``n = d^2``;
* (iii) ``leap4``: ``g = z1 z2 z3 z4`` (leap 4), ``n = 16 d``, five steps;
* ``activations``: (i) at one ``d`` with other activations / readout (why the activation matters);

each over ``d`` and seeds, compares the measured overlaps with the prediction of
:mod:`asymptotics.coefficients.hermite`, keeps the per-repetition rows as a
:class:`validation.campaign.Campaign` (one task per repetition, a SQLite store) exported sorted
to ``validation/reports/data/multistep_<name>.csv`` (cells ``%.10g``; reused when every needed
row is there),
and builds the text of ``validation/reports/MULTISTEP.md`` from the numbers (``--quick``: small
sizes, files named ``multistep_quick_*``).

Conventions: :mod:`validation.multistep.simulator` (learning rate ``eta_t = eta_tilde_t p
d^((kappa-1)/2)``,
readout ``+-1/sqrt p`` halves, ``p = d``). Activation ``erf(z - 1)``: the staircase needs an
activation whose derivatives have non-zero Gaussian means up to the staircase's height
(``E sigma'``, ``E sigma''``, ``E sigma'''`` for three steps, since the step-``t`` signal along
``theta_t`` is ``E[z1..z_(t-1) sigma'(w.x)] = m_1..m_(t-1) E sigma^(t)(w.x)``); ``tanh`` (odd:
``E sigma'' = 0``) and ``relu`` (``E sigma''' = 0``) fail at steps 2 and 3, which the
``activations`` table shows.
"""

from __future__ import annotations

import math
import pathlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from asymptotics.coefficients.hermite import hermite_expansion
from asymptotics.multiindex.staircase import staircase
from validation.campaign import Campaign, Schema
from validation.campaign import load_or_run as load_or_run_campaign
from validation.campaign.report import table_lines
from validation.multistep.simulator import MultiStepConfig, run_repetitions
from validation.paths import data_file
from validation.protocol.rows import g10_cell

REPORTS = pathlib.Path(__file__).resolve().parents[1] / "reports"
SIGMA = "erf(z-1)"
STAIRCASE = "z1 + z1*z2 + z1*z2*z3"
HE2 = "He2(z1)"
LEAP4 = "z1*z2*z3*z4"
ETA3 = (2.0, 8.0, 16.0)
ETA5 = (2.0, 8.0, 16.0, 16.0, 16.0)
ALPHA0 = 16.0
#: the ridge penalty of the committed campaigns (their records carry it): 1e-3, chosen before the
#: parameter table's default (0.01, now ``MultiStepConfig``'s) so that the ridge readout after the
#: steps is close to ridgeless; the campaigns keep it so that their stored runs stay valid
CAMPAIGN_LAM = 1e-3
ORDER_ONE = -0.2  # fitted slope of log(overlap) vs log(d) above this: "order one"
VANISHING = -0.35  # below this: "vanishes" (pure noise has slope -1/2)


@dataclass(frozen=True)
class Plan:
    """Sizes of one run of the experiments."""

    ds: tuple[int, ...]
    ds_quadratic: tuple[int, ...]
    seeds: int
    ridge_max_d: int
    side_d: int
    side_seeds: int
    leap4_seeds: int
    n_test: int
    prefix: str


FULL = Plan(ds=(64, 128, 256, 512, 1024), ds_quadratic=(32, 64, 128, 256), seeds=5,
            ridge_max_d=256, side_d=512, side_seeds=3, leap4_seeds=3, n_test=4000,
            prefix="multistep")
QUICK = Plan(ds=(32, 64), ds_quadratic=(16, 32), seeds=2, ridge_max_d=64, side_d=64,
             side_seeds=2, leap4_seeds=2, n_test=1000, prefix="multistep_quick")


def plan_for(quick: bool) -> Plan:
    return QUICK if quick else FULL


def configs(name: str, plan: Plan) -> list[tuple[MultiStepConfig, int]]:
    """``(config, root seed)`` pairs of experiment ``name``; the root seed is
    ``1000 * (experiment number) + d`` (+ a variant number for ``activations``)."""
    def ridge(d: int) -> float:
        return 8.0 if d <= plan.ridge_max_d else 0.0

    if name == "staircase":
        return [(MultiStepConfig(d=d, target=STAIRCASE, sigma=SIGMA, steps=3, alpha0=ALPHA0,
                                 eta=ETA3, ridge_alpha=ridge(d), n_test=plan.n_test,
                                 lam=CAMPAIGN_LAM), 1000 + d)
                for d in plan.ds]
    if name == "he2_linear":
        return [(MultiStepConfig(d=d, target=HE2, sigma=SIGMA, steps=3, alpha0=ALPHA0, eta=ETA3,
                                 n_test=plan.n_test, lam=CAMPAIGN_LAM), 2000 + d) for d in plan.ds]
    if name == "he2_quadratic":
        return [(MultiStepConfig(d=d, target=HE2, sigma=SIGMA, steps=1, alpha0=1.0, kappa=2.0,
                                 eta=1.0, n_test=plan.n_test, lam=CAMPAIGN_LAM), 3000 + d)
                for d in plan.ds_quadratic]
    if name == "leap4":
        return [(MultiStepConfig(d=d, target=LEAP4, sigma=SIGMA, steps=5, alpha0=ALPHA0,
                                 eta=ETA5, n_test=plan.n_test, lam=CAMPAIGN_LAM), 4000 + d)
                for d in plan.ds]
    if name == "activations":
        variants = [("tanh", "hypercube"), ("relu", "hypercube"), (SIGMA, "hypercube"),
                    (SIGMA, "constant")]
        return [(MultiStepConfig(d=plan.side_d, target=STAIRCASE, sigma=s, steps=3,
                                 alpha0=ALPHA0, eta=ETA3, readout=r, n_test=plan.n_test,
                                 lam=CAMPAIGN_LAM),
                 5000 + 10 * i + plan.side_d) for i, (s, r) in enumerate(variants)]
    raise ValueError(f"unknown experiment {name!r}; known: {', '.join(EXPERIMENTS)}")


EXPERIMENTS = ("staircase", "he2_linear", "he2_quadratic", "leap4", "activations")
KEYS = ["d", "target", "sigma", "steps", "alpha0", "kappa", "beta", "eta", "readout",
        "ridge_alpha", "seed"]
#: the rows of every experiment: one per (repetition, step, direction), every parameter
SCHEMA = Schema.of(d=int, target=str, sigma=str, steps=int, alpha0=float, kappa=float,
                   beta=float, eta=str, readout=str, delta=float, ridge_alpha=float, lam=float,
                   n_test=int, p=int, n=int, k=int, repetition=int, step=int, direction=int,
                   mean_overlap=float, max_overlap=float, median_overlap=float,
                   subspace_fraction=float, weight_norm=float, train_loss=float,
                   test_error=float, target_power=float, seconds=float, seed=int)


def seeds_for(name: str, plan: Plan) -> int:
    """Repetitions per configuration of experiment ``name``."""
    return {"activations": plan.side_seeds, "leap4": plan.leap4_seeds}.get(name, plan.seeds)


def _task(job: tuple[MultiStepConfig, int, int]) -> list[dict]:
    """The rows of repetition ``rep`` of ``config`` (child ``rep`` of ``SeedSequence(seed)``)."""
    config, seed, rep = job
    (run,) = run_repetitions(config, np.random.SeedSequence(seed).spawn(rep + 1), [rep])
    table = run.table()
    table["seed"] = seed
    return table.to_dict("records")


def campaign(name: str, plan: Plan) -> Campaign:
    """Experiment ``name`` of ``plan`` as a campaign: one task per repetition of a configuration
    (``(steps + 1) k`` rows), keyed by the configuration's parameters, seed and repetition."""
    jobs = tuple((config, seed, rep) for config, seed in configs(name, plan)
                 for rep in range(seeds_for(name, plan)))
    return Campaign(f"{plan.prefix}_{name}", jobs, _task, SCHEMA,
                    key_columns=(*KEYS, "repetition"), cell=g10_cell,
                    key=lambda j: (*(j[0].record()[k] for k in KEYS[:-1]), j[1], j[2]))


def load_or_run(name: str, plan: Plan, *, force: bool = False, n_jobs: int = 1,
                log: Callable[[str], None] = print,
                progress: bool | None = True) -> pd.DataFrame:
    """Per-repetition rows of experiment ``name``, in the order of its configurations and
    repetitions, from its CSV (``validation/reports/data/<prefix>_<name>.csv``) when that holds
    every repetition; else the missing ones are simulated into the campaign's SQLite store
    beside the CSV (which starts from the CSV's runs; :func:`validation.campaign.run_campaign`,
    one transaction per repetition, so an interrupted run resumes) and the CSV is exported
    again. ``force``: simulate everything afresh; ``progress``: the simulations' progress on
    stderr."""
    read, write = data_file(REPORTS / "data" / f"{plan.prefix}_{name}.csv", "reports", "data")
    c = campaign(name, plan)
    return load_or_run_campaign(c, read, write, ordered=_ordered, force=force, n_jobs=n_jobs,
                                log=log, what=name, done="repetitions simulated",
                                progress=progress)


def _ordered(path: pathlib.Path, c: Campaign, wanted: list[str]) -> pd.DataFrame | None:
    """The rows of the tasks ``wanted`` in that order (each task's rows in the file's order),
    or None if the CSV lacks one of them."""
    df = pd.read_csv(path)
    cells = pd.read_csv(path, dtype=str, keep_default_na=False, usecols=list(c.key_columns))
    order = {k: i for i, k in enumerate(wanted)}
    rank = pd.Series([order.get(c.row_key(r), -1) for r in cells.to_dict("records")],
                     index=df.index)
    if set(rank) - {-1} != set(range(len(wanted))):
        return None
    keep = rank[rank >= 0].sort_values(kind="stable").index
    return df.loc[keep].reset_index(drop=True)


# ------------------------------------------------------------------------------------------------
# analysis


def summary(df: pd.DataFrame, by: tuple[str, ...] = ("d", "step", "direction")) -> pd.DataFrame:
    """Mean and standard error over repetitions of mean/max overlap (and test error)."""
    cols = ["mean_overlap", "max_overlap", "subspace_fraction", "test_error", "target_power",
            "seconds"]
    g = df.groupby(list(by), sort=True)[cols]
    n = g.count()
    out = g.mean().add_suffix("_mean").join(
        (g.std(ddof=1) / np.sqrt(n.where(n > 1))).add_suffix("_se"))
    return out.reset_index()


def fit_slope(d: np.ndarray, mean: np.ndarray, se: np.ndarray) -> tuple[float, float]:
    """Weighted least-squares slope of ``log(mean)`` against ``log(d)`` (weights from the
    standard errors of ``log(mean)``, ``se/mean``) and its standard error."""
    x, y = np.log(np.asarray(d, float)), np.log(np.asarray(mean, float))
    s = np.asarray(se, float) / np.asarray(mean, float)
    s = np.where(np.isfinite(s) & (s > 0), s, np.nanmedian(s[s > 0]) if np.any(s > 0) else 1.0)
    w = 1.0 / s**2
    X = np.stack([np.ones_like(x), x], axis=1)
    A = X.T @ (w[:, None] * X)
    beta = np.linalg.solve(A, X.T @ (w * y))
    cov = np.linalg.inv(A)
    resid = y - X @ beta
    dof = max(len(x) - 2, 1)
    chi2 = float(np.sum(w * resid**2) / dof)
    return float(beta[1]), float(math.sqrt(cov[1, 1] * max(chi2, 1.0)))


def verdict(slope: float) -> str:
    """``order one`` / ``vanishes`` / ``unclear`` from the fitted exponent (see constants)."""
    if slope > ORDER_ONE:
        return "order one"
    if slope < VANISHING:
        return "vanishes"
    return "unclear"


def predicted_learned(target: str, steps: int, kappa: float) -> np.ndarray:
    """``(steps + 1) x k`` booleans: direction ``j`` predicted learned after step ``t`` by
    :mod:`asymptotics.coefficients.hermite` (staircase for ``kappa = 1``; one step with ``n ~
    d^kappa``
    reaches ``span(V_1..V_kappa)``; further steps at ``kappa > 1`` are not predicted here)."""
    ex = hermite_expansion(target)
    sc = staircase(ex)
    out = np.zeros((steps + 1, ex.k), dtype=bool)
    if kappa == 1:
        learned = np.zeros((0, ex.k))
        for t in range(1, steps + 1):
            if t <= len(sc.steps):
                learned = np.vstack([learned, sc.steps[t - 1]])
            out[t] = _in_span(learned, ex.k)
    else:
        reach = dict(sc.one_step).get(int(kappa), np.zeros((0, ex.k)))
        out[1:] = _in_span(reach, ex.k)
    return out


def _in_span(B: np.ndarray, k: int) -> np.ndarray:
    """Whether each axis direction ``theta_j`` has a non-zero component in ``span(B)``."""
    if B.shape[0] == 0:
        return np.zeros(k, dtype=bool)
    return np.linalg.norm(B, axis=0) > 1e-6


def scaling_table(df: pd.DataFrame, target: str, kappa: float,
                  directions: str = "each") -> pd.DataFrame:
    """Per (step, direction): mean overlap at each d (mean +- s.e. over seeds), the fitted
    exponent, the verdict and the prediction. ``directions='pooled'`` averages directions."""
    s = summary(df) if directions == "each" else summary(
        df.groupby(["d", "repetition", "step"], as_index=False)[
            ["mean_overlap", "max_overlap", "subspace_fraction", "test_error", "target_power",
             "seconds"]].mean().assign(direction=0))
    steps = int(df["step"].max())
    pred = predicted_learned(target, steps, kappa)
    rows = []
    for (t, j), grp in s.groupby(["step", "direction"]):
        grp = grp.sort_values("d")
        slope, slope_se = fit_slope(grp["d"], grp["mean_overlap_mean"], grp["mean_overlap_se"])
        row = {"step": int(t), "direction": "all" if j == 0 else f"theta{int(j)}"}
        for _, r in grp.iterrows():
            row[f"d={int(r['d'])}"] = f"{r['mean_overlap_mean']:.3f} ± {r['mean_overlap_se']:.3f}"
        row["exponent"] = f"{slope:+.2f} ± {slope_se:.2f}"
        row["measured"] = verdict(slope) if t > 0 else "(init)"
        p = pred[t].any() if j == 0 else pred[t, int(j) - 1]
        row["predicted"] = ("learned" if p else "not learned") if t > 0 else "-"
        row["_slope"], row["_slope_se"] = slope, slope_se
        row["_agree"] = (t == 0) or (row["measured"] == ("order one" if p else "vanishes"))
        rows.append(row)
    return pd.DataFrame(rows)


def markdown(df: pd.DataFrame) -> str:
    """A pipe table of ``df`` (columns starting with ``_`` dropped; ``d=`` columns sorted), by the
    campaigns' markdown writer (:func:`validation.campaign.report.table_lines`)."""
    cols = [c for c in df.columns if not str(c).startswith("_")]
    dcols = sorted((c for c in cols if str(c).startswith("d=")), key=lambda c: int(c[2:]))
    if dcols:
        first = cols.index(next(c for c in cols if str(c).startswith("d=")))
        rest = [c for c in cols if not str(c).startswith("d=")]
        cols = rest[:first] + dcols + rest[first:]
    return "\n".join(table_lines(df[cols].astype(object)))


def theory_states(cfg: MultiStepConfig):
    """The K-group mapping of several steps (docs/THEORY.md §12) at the experiment's parameters
    (``kappa = 1`` only; ``hypercube`` is the readout ``pm1``: two halves of opposite sign)."""
    from asymptotics.multiindex.steps import steps_mapping

    if cfg.kappa != 1.0:
        raise ValueError("the several-steps theory covers n = alpha0 d (kappa = 1)")
    readout = "pm1" if cfg.readout in ("pm1", "hypercube") else "constant"
    return steps_mapping(cfg.sigma, cfg.target, steps=cfg.steps, alpha0=cfg.alpha0,
                         eta=cfg.eta, delta=cfg.delta, readout=readout)


def theory_overlaps(cfg: MultiStepConfig) -> pd.DataFrame:
    """Rows (step, direction, theory): the mean overlap ``|<w_k, theta_j>| / |w_k|`` as
    d -> infinity after each step (0 where the direction is not learned: the measured value
    is then the initial level ~ sqrt(2/(pi d)))."""
    mp = theory_states(cfg)
    rows = [dict(step=t, direction=j + 1, theory=float(v))
            for t, st in enumerate(mp.states)
            for j, v in enumerate(st.mean_overlaps(mp.readout.weights))]
    return pd.DataFrame(rows)


def theory_test_error(cfg: MultiStepConfig) -> pd.DataFrame:
    """Rows (step, theory): the risk of the ridge readout after each step by the K-group
    (sRF) theory of THEORY.md §12 (``p -> infinity``; the report's row) at the experiment's
    ``ridge_alpha`` and ``lam``."""
    from asymptotics.api.by_step import risk_by_step

    readout = "pm1" if cfg.readout in ("pm1", "hypercube") else "constant"
    df = risk_by_step([cfg.ridge_alpha], steps=cfg.steps, sigma=cfg.sigma, target=cfg.target,
                      alpha0=cfg.alpha0, eta=cfg.eta, lam=cfg.lam, beta=cfg.beta,
                      delta=cfg.delta, readout=readout, model="srf")
    return df[["step", "risk"]].rename(columns={"risk": "theory"})
