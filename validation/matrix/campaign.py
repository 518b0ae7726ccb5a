"""The validation matrix: >= 40 settings, theory vs ``srf`` and ``network`` simulations.

Two steps, so the heavy part can run where there are cores and the report where the theory is:

    python -m validation.matrix run    --store validation/data/matrix_runs.csv --n-jobs 16
    python -m validation.matrix report --store validation/data/matrix_runs.csv

``run`` stores the rows of each (setting, model, d, seed) repetition, one row per point (all
parameters, the risk, timings), and skips the repetitions already stored, so it can be stopped
and resumed: a :class:`validation.campaign.Campaign` (one task per repetition) run by
:func:`validation.campaign.run_campaign` into a SQLite store beside the CSV (``--store``), which
starts from the CSV's rows and is exported back to it, sorted, after each round. A first round
gives every setting ``--seeds`` repetitions; ``--target-se`` adds repetitions to the settings
whose standard error is still above it (up to ``--max-seeds``).
``report`` aggregates, solves the theory and writes ``validation/REPORT.md`` and its figures.
Repetition ``i`` of a setting uses ``SeedSequence(setting_seed, spawn_key=(i,))`` (the ``i``-th
child of ``SeedSequence(setting_seed)``), so rounds, workers and restarts give the same values.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..campaign import Campaign, Schema, Store, run_campaign
from ..protocol.simulator import Setting, simulate_grid_once

SIGMAS = ("tanh", "erf", "relu")
TARGETS = ("tanh", "sin", "relu", "he2")
BETAS = (0.5, 1.0, 2.0)
ALPHA0S = (0.5, 2.0, 20.0)
ETAS = (0.0, 1.0, 3.0)
LAMS = (0.01, 0.1)
ALPHAS = (0.2, 1.0, 2.5, 5.0)
#: random stream of the samples (validation.protocol.simulator.Setting.stream): the store was drawn
# with
#: the sequential stream 1, kept so that every stored repetition can be re-run exactly
STREAM = 1
#: test-error estimator of new repetitions (validation.protocol.estimators): control variates. The
#: repetitions of sessions 1-3 are plain Monte Carlo ("mc" in the store's estimator column); both
#: estimate the same test error of the same trained network, so they pool (unequal noise does not
#: bias the mean, nor the usual s.e. of it)
ESTIMATOR = "cv"
PILOT = 3  # repetitions of a new estimator before its spread sets the count
REPLAN_SECONDS = 600.0  # --target-se runs re-read the store and re-plan this often
D_SCALING = (500, 1000, 2000, 4000)


@dataclass(frozen=True)
class MatrixSetting:
    """One row of the matrix: everything but alpha and lam (both swept inside a repetition)."""

    sigma: str
    target: str
    beta: float
    alpha0: float
    eta: float

    @property
    def key(self) -> str:
        return (f"{self.sigma}/{self.target} beta={self.beta:g} alpha0={self.alpha0:g} "
                f"eta={self.eta:g}")

    def models(self) -> tuple[str, ...]:
        """``eta = 0``: no step, the three models coincide and ``rf`` is simulated once."""
        return ("rf",) if self.eta == 0 else ("srf", "network")


def matrix_settings() -> list[MatrixSetting]:
    """48 settings: for each of the 12 (sigma, g) pairs, random features (``eta = 0``, one beta)
    and three one-step settings; the 36 one-step settings cover each of the 18 combinations of
    (eta > 0, beta, alpha0) twice, spread over the activations."""
    combos = list(itertools.product(ETAS[1:], BETAS, ALPHA0S))
    out = []
    for i, (sigma, target) in enumerate(itertools.product(SIGMAS, TARGETS)):
        out.append(MatrixSetting(sigma, target, beta=BETAS[i % 3], alpha0=2.0, eta=0.0))
        for k in range(3):
            eta, beta, alpha0 = combos[(3 * i + k) % len(combos)]
            out.append(MatrixSetting(sigma, target, beta=beta, alpha0=alpha0, eta=eta))
    return out


def scaling_settings() -> list[tuple[MatrixSetting, tuple[int, ...], tuple[str, ...]]]:
    """Settings followed over d (network-vs-theory gap, and the persistent srf miss of the
    matrix): each with its dimensions and models (the costliest stop early on a 2-core budget)."""
    tt = MatrixSetting("tanh", "tanh", 0.5, 20.0, 1.0)
    return [(MatrixSetting("tanh", "tanh", 1.0, 2.0, 1.0), D_SCALING, ("srf", "network")),
            (MatrixSetting("relu", "tanh", 1.0, 2.0, 1.0), D_SCALING, ("srf", "network")),
            (tt, (500, 1000, 2000), ("srf", "network")), (tt, (4000,), ("srf",)),
            (MatrixSetting("erf", "sin", 2.0, 2.0, 0.0), (500, 1000, 2000), ("rf",))]


def setting_seed(ms: MatrixSetting, model: str, d: int) -> int:
    """A stable root entropy from the parameters (independent of the order of the matrix)."""
    text = json.dumps([ms.sigma, ms.target, ms.beta, ms.alpha0, ms.eta, model, d])
    return int(hashlib.sha256(text.encode()).hexdigest()[:12], 16)


#: the rows: one per point (alpha, lam) of a repetition of a (setting, model, d)
SCHEMA = Schema.of(key=str, sigma=str, target=str, beta=float, alpha0=float, eta=float, model=str,
                   d=int, seed_root=int, rep=int, alpha=float, lam=float, risk=float,
                   seconds=float, estimator=str)
FIELDS = list(SCHEMA.names)


def _task(ms: MatrixSetting, model: str, d: int, rep: int,
          estimator: str = ESTIMATOR) -> list[dict]:
    """One repetition: all alphas x lams of a (setting, model, d)."""
    root = setting_seed(ms, model, d)
    base = Setting(model=model, sigma=ms.sigma, target=ms.target, alpha=1.0, alpha0=ms.alpha0,
                   eta=ms.eta, lam=LAMS[0], beta=ms.beta, d=d, stream=STREAM,
                   estimator=estimator)
    t0 = time.perf_counter()
    risks = simulate_grid_once(base, ALPHAS, LAMS, np.random.SeedSequence(root, spawn_key=(rep,)))
    dt = time.perf_counter() - t0
    return [dict(key=ms.key, sigma=ms.sigma, target=ms.target, beta=ms.beta, alpha0=ms.alpha0,
                 eta=ms.eta, model=model, d=d, seed_root=root, rep=rep, alpha=a, lam=lam,
                 risk=float(risks[i, j]), seconds=dt, estimator=estimator)
            for i, a in enumerate(ALPHAS) for j, lam in enumerate(LAMS)]


def campaign(jobs: Sequence[tuple] = ()) -> Campaign:
    """The repetitions ``jobs`` (``(setting, model, d, rep, estimator)``) as a campaign: one task
    per repetition (all alphas x lams), keyed by (key, model, d, rep), exported in that order."""
    return Campaign("matrix_runs", tuple(jobs), _repetition, SCHEMA,
                    key_columns=("key", "model", "d", "rep"),
                    key=lambda j: (j[0].key, j[1], j[2], j[3]),
                    record=lambda j: {"job": j, "alphas": ALPHAS, "lams": LAMS, "stream": STREAM})


def sqlite_path(store_path: Path) -> Path:
    """The SQLite store beside the CSV of the repetitions (not committed)."""
    return Path(store_path).with_suffix(".sqlite")


def read_store(path: Path):
    """The repetitions of the CSV (the store's export) as a DataFrame."""
    import pandas as pd

    path = Path(path)
    if not path.exists() or path.stat().st_size == 0:
        return pd.DataFrame(columns=FIELDS)
    df = pd.read_csv(path)
    if list(df.columns) != FIELDS:
        raise ValueError(f"{path} has other columns than the matrix store's: "
                         f"{list(df.columns)[:6]}...")
    return df


def naive_spike(sigma: str, target: str, alpha0: float, eta: float):
    """THEORY.md §3 verbatim (residual taken as y, i.e. mu0 ignored): the mapping to compare
    the mu0-aware one of ``asymptotics.step.srf`` against on activations with E sigma != 0."""
    from asymptotics import SpikeMapping, ge_coefficients

    k = ge_coefficients(sigma, target)
    u = math.sqrt(k.mu1_star**2 + k.mu2_star / alpha0)
    gamma = k.mu1_star / u
    return SpikeMapping(r=eta * k.dmu1 * u, c=1 + eta**2 * k.mu2_star * k.s2 / alpha0,
                        gamma=gamma, rho=math.sqrt(max(0.0, 1 - gamma**2)), scale=1.0,
                        residual_mean=k.mu0_star, residual_second_moment=k.mu2_star, u_norm=u)


def aggregate(store, first_reps: int | None = None, progress: bool | None = None):
    """Mean, s.e. and count per point, each model against the theory of the same model.

    ``theory`` is the theory of the row's model: ``srf`` and ``rf`` (eta = 0) the equations at
    p = infinity, ``network`` the network theory (``model="network"``, population measure) at
    the simulated width p = beta d (docs/DERIVATIONS.md §7-8); ``z`` and ``rel_gap`` use it.
    ``theory_srf`` (the sRF equations at p = infinity for every row, with ``z_srf``) and the naive
    mapping of THEORY.md §3 for relu (``theory_naive``, ``z_naive``) stand beside it.
    ``progress``: a report per setting whose theory is solved, on stderr (False: none)."""
    import pandas as pd

    from asymptotics import risk_curve
    from asymptotics.core.progress import Progress

    keys = ["key", "sigma", "target", "beta", "alpha0", "eta", "model", "d", "alpha", "lam"]
    if first_reps is not None:  # the planned repetitions only (confirmations excluded)
        store = store[store["rep"] < first_reps]
    g = store.groupby(keys)["risk"]
    agg = g.agg(sim_mean="mean", sim_sd=lambda v: v.std(ddof=1), seeds="count").reset_index()
    agg["sim_se"] = agg["sim_sd"] / np.sqrt(agg["seeds"])

    def curve(table, key, **kw) -> None:
        df = risk_curve(ALPHAS, progress=False, **kw)
        for a, r, ok in zip(df["alpha"], df["risk"], df["converged"], strict=True):
            table[key + (a,)] = r if ok else math.nan

    theory, naive, network = {}, {}, {}
    groups = agg.groupby(["sigma", "target", "beta", "alpha0", "eta", "lam"])
    with Progress(groups.ngroups, "matrix theory", unit="settings", enabled=progress) as bar:
        for (sigma, target, beta, alpha0, eta, lam), sub in bar.iter(groups):
            key = (sigma, target, beta, alpha0, eta, lam)
            common = dict(sigma=sigma, target=target, alpha0=alpha0, lam=lam, beta=beta, eta=eta)
            curve(theory, key, model="srf", **common)
            if eta > 0 and sigma == "relu":
                curve(naive, key, spike=naive_spike(sigma, target, alpha0, eta), model="srf",
                      **common)
            for d in sorted(sub.loc[sub["model"] == "network", "d"].unique()):
                curve(network, key + (int(d),), model="network", p=float(beta) * int(d), **common)

    def lookup(table, row, *extra):
        return table.get((row.sigma, row.target, row.beta, row.alpha0, row.eta, row.lam)
                         + extra + (row.alpha,), math.nan)

    agg["theory_srf"] = [lookup(theory, r) for r in agg.itertuples()]
    agg["theory"] = [lookup(network, r, int(r.d)) if r.model == "network" else lookup(theory, r)
                     for r in agg.itertuples()]
    agg["theory_naive"] = [lookup(naive, r) for r in agg.itertuples()]
    agg["z"] = (agg["sim_mean"] - agg["theory"]) / agg["sim_se"]
    agg["rel_gap"] = (agg["sim_mean"] - agg["theory"]) / agg["theory"]
    agg["z_srf"] = (agg["sim_mean"] - agg["theory_srf"]) / agg["sim_se"]
    agg["z_naive"] = (agg["sim_mean"] - agg["theory_naive"]) / agg["sim_se"]
    return pd.DataFrame(agg)


def _needed(sd_old: float, n_old: int, sd_new: float, target_se: float, cap: int) -> int:
    """Repetitions ``n`` (old ones included) with ``(n_old sd_old^2 + (n - n_old) sd_new^2) / n^2
    <= target_se^2``: the variance of a mean of values of unequal noise; at most ``cap``."""
    n = max(n_old, 1)
    while n < cap and (n_old * sd_old**2 + (n - n_old) * sd_new**2) > (target_se * n) ** 2:
        n += 1
    return n


def plan(store, target_se: float, seeds: int, max_seeds: int,
         groups: Sequence[tuple[MatrixSetting, str, int]],
         estimator: str = ESTIMATOR) -> list[tuple]:
    """Repetitions still to run: up to ``seeds`` for every group, then more where the largest
    standard error over a group's points exceeds ``target_se`` (the count that the observed
    spread of each estimator says is needed, capped at ``max_seeds``; the new repetitions use
    ``estimator``, whose spread is measured on a pilot of ``PILOT`` repetitions first)."""
    todo = []
    for ms, model, d in groups:
        sub = store[(store["key"] == ms.key) & (store["model"] == model) & (store["d"] == d)]
        done = set(sub["rep"].unique().tolist())
        want = seeds
        if len(done) >= 2 and target_se > 0:
            want = max(seeds, len(done))
            for _, point in sub.groupby(["alpha", "lam"]):
                old = point[point["estimator"] != estimator]["risk"]
                new = point[point["estimator"] == estimator]["risk"]
                sd_old = float(old.std(ddof=1)) if len(old) >= 2 else 0.0
                if len(new) < PILOT:  # spread of the new estimator not measured yet: a pilot
                    if _needed(sd_old, len(old), sd_old, target_se, max_seeds) > len(old):
                        want = max(want, min(max_seeds, len(old) + PILOT))
                    continue
                want = max(want, _needed(sd_old, len(old), float(new.std(ddof=1)), target_se,
                                         max_seeds))
        todo += [(ms, model, d, rep) for rep in range(want) if rep not in done]
    return todo


def check_selection(models: Sequence[str], targets: Sequence[str], only: Sequence[str]) -> None:
    """Refuse a selection that names no model, target or setting of the matrix (it would
    otherwise run the whole matrix or nothing without a word)."""
    known_models = ("srf", "network", "rf")
    bad = [m for m in models if m not in known_models]
    if bad:
        raise ValueError(f"models (--models): unknown model {', '.join(bad)}; choose from "
                         f"{', '.join(known_models)}")
    bad = [t for t in targets if t not in TARGETS]
    if bad:
        raise ValueError(f"targets (--targets): unknown target {', '.join(bad)}; choose from "
                         f"{', '.join(TARGETS)}")
    keys = {ms.key for ms in matrix_settings()} | {ms.key for ms, _, _ in scaling_settings()}
    bad = [o for o in only if o not in keys]
    if bad:
        raise ValueError(f"only (--only): no matrix setting {bad[0]!r}; keys look like "
                         f"{sorted(keys)[0]!r}")


def run(store_path: Path, *, d: int, seeds: int, max_seeds: int, target_se: float,
        n_jobs: int, scaling: bool, time_budget: float, scaling_seeds: int = 4,
        confirm_seeds: int = 0, models: Sequence[str] = ("srf", "network", "rf"),
        targets: Sequence[str] = TARGETS, estimator: str = ESTIMATOR,
        only: Sequence[str] = (), progress: bool = True) -> None:
    """Run the repetitions the plan asks for, appending to the store as they finish, and plan
    again (with ``target_se``) until no point asks for more or the time budget is spent.

    Workers: :func:`validation.protocol.pool.run_tasks` (spawned processes, one BLAS thread each).
    ``progress``: the campaign's progress lines on stderr (False: none)."""
    from asymptotics.core.progress import shown

    progress = shown(progress)

    def by_cost(t):
        return -(t[2] ** 2) * t[0].beta * (1 + t[0].alpha0 * (t[1] == "network"))

    check_selection(models, targets, only)
    store_path.parent.mkdir(parents=True, exist_ok=True)
    groups = [(ms, m, d) for ms in matrix_settings() for m in ms.models()
              if m in models and ms.target in targets and (not only or ms.key in only)]

    def make_todo(store) -> list[tuple]:
        todo = sorted(plan(store, target_se, seeds, max_seeds, groups, estimator), key=by_cost)
        if confirm_seeds:  # fresh repetitions for the srf/rf groups with a point beyond 3 s.e.
            summary = aggregate(store[store["d"] == d])
            missed = summary[(summary["model"] != "network") & (summary["z"].abs() > 3)]
            keys = set(zip(missed["key"], missed["model"], strict=True))
            for ms, m, dd in groups:
                if (ms.key, m) in keys:
                    todo += [(ms, m, dd, rep) for rep in range(seeds, seeds + confirm_seeds)
                             if not ((store["key"] == ms.key) & (store["model"] == m)
                                     & (store["d"] == dd) & (store["rep"] == rep)).any()]
        if scaling:  # after the main matrix, with their own (smaller) number of repetitions
            main = set(matrix_settings())
            extra = [(ms, m, dd) for ms, ds, models in scaling_settings() for m in models
                     for dd in ds if dd != d or ms not in main]
            todo += sorted(plan(store, 0.0, scaling_seeds, scaling_seeds, extra, estimator),
                           key=by_cost)
        if math.isfinite(time_budget):  # finish whole groups first: cheapest work first
            todo = _cheapest_groups_first(todo, store)
        return todo

    t_end = time.time() + time_budget
    todo = make_todo(read_store(store_path))
    replan = REPLAN_SECONDS if target_se > 0 and not confirm_seeds else math.inf
    while todo:
        if progress:
            print(f"{len(todo)} repetitions to run", file=sys.stderr, flush=True)
        _execute(todo, store_path, n_jobs, min(t_end, time.time() + replan), estimator, progress)
        if time.time() >= t_end:
            print("time budget reached; rerun to resume", file=sys.stderr)
            return
        if math.isinf(replan):  # one pass: planned rounds, confirmations, d-scaling
            return
        todo = make_todo(read_store(store_path))  # the new repetitions sharpen the spreads


def _cheapest_groups_first(todo: list[tuple], store) -> list[tuple]:
    """Order repetitions by the total time their group still needs (the group's mean seconds
    per repetition in the store, else a size proxy), so that a time budget completes groups."""
    def seconds(ms: MatrixSetting, model: str, d: int) -> float:
        sub = store[(store["key"] == ms.key) & (store["model"] == model) & (store["d"] == d)]
        if len(sub):
            return float(sub.groupby("rep")["seconds"].first().mean())
        return 1e-6 * d**2 * ms.beta * (1 + ms.alpha0 * (model == "network"))

    count: dict[tuple, int] = {}
    for ms, model, d, _ in todo:
        count[(ms, model, d)] = count.get((ms, model, d), 0) + 1
    cost = {g: n * seconds(*g) for g, n in count.items()}
    return sorted(todo, key=lambda t: (cost[t[:3]], t[0].key, t[1], t[3]))


def _repetition(job: tuple) -> list[dict]:
    """:func:`_task` of one ``(setting, model, d, rep, estimator)`` (a pool task)."""
    return _task(*job)


def _execute(todo: list[tuple], store_path: Path, n_jobs: int, t_end: float,
             estimator: str, progress: bool = True) -> bool:
    """Run ``todo`` on ``n_jobs`` workers (:func:`validation.campaign.run_campaign` on
    :func:`validation.protocol.pool.run_tasks`: one BLAS thread each, ended with this process),
    storing
    each repetition in one transaction as it finishes, then export the store to the CSV
    ``store_path``. After ``t_end`` nothing new starts and the running ones are finished and
    kept; False when that left some of ``todo`` undone."""
    c = campaign([(*t, estimator) for t in todo])
    budget = None if math.isinf(t_end) else max(0.0, t_end - time.time())
    with Store(sqlite_path(store_path)) as st:
        if Path(store_path).exists():
            st.import_csv(c, store_path)
        out = run_campaign(c, st, n_jobs=n_jobs, budget=budget, progress=progress)
        st.export_csv(c, store_path)
    return out.complete

