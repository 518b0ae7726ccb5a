"""Spectra experiments: outliers of the first-layer weights after one and two large steps.

The data and analysis of the experiments (the figures and the command that writes the report,
``python -m figures.spectra_report [--quick] [--force] [--threads N]``, are in
:mod:`figures.spectra_report`):

* ``onestep``: the convention check, spikes of the features ``sigma(X W1^T)`` after one step vs
  ``#{l: a > (l-1)/(2l)}`` (``asymptotics.multiindex.spikes.one_step_spike_count``);
* ``grid``: the phase diagram, outliers of ``W2`` beyond the leading one over a grid of
  ``(a1, a2)`` at two sizes, vs Moniri & Hassani's ``floor(a2 / (1/2 - a1))``;
* ``scaling``: counts vs ``d`` (up to 4000) at a few ``(a1, a2)``, with the amplitude of each
  second-step Taylor term on its readout polynomial, whose growth exponent is compared with
  ``e_k = a2 - k (1/2 - a1)`` (the mechanism behind the count);
* ``reuse``: targets with a second direction of information exponent 2, fresh vs reused second
  batch: the overlap of the outliers' right singular subspace with ``theta_2``;

keeps one row per simulation as a :class:`validation.campaign.Campaign` (one task per
configuration, a fixed :data:`SCHEMAS` per experiment, a SQLite store) exported sorted to
``validation/reports/data/spectra_<name>.csv`` (cells ``%.10g``; reused when every needed row is
there; the spectrum figure's singular values likewise, ``%.12g``), and builds the text of
``validation/reports/SPECTRA.md`` from the numbers, the rows in the plan's order
(:func:`configs`), not the file's (``--quick``: small sizes, files ``spectra_quick_*``).
A one-step run has no ``a2``: its ``a2`` cell is NaN (empty in the CSV) and its task key holds
the token ``NAN_KEY`` (``"nan"``) there (``Campaign.nan_key``).

Conventions: :mod:`validation.spectrum` (``eta_t = eta_tilde_t p^(1/2 + a_t)``, rows of ``W0`` on
the sphere, frozen Gaussian readout ``a_j = g_j / sqrt p``, ``beta = p/d = 1/2``,
``alpha0 = n/d = 1``), activation ``tanh(z + 1/2)`` (every Hermite coefficient nonzero, so the
generic count applies), ``eta_tilde = (1, 3)``. Seeds: common random numbers, replicate ``r``
uses seed ``r`` at every grid point.
"""

from __future__ import annotations

import csv
import math
import pathlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from validation.campaign import Campaign, Schema, Store
from validation.campaign import load_or_run as load_or_run_campaign
from validation.campaign.store import keys_path, read_keys
from validation.paths import data_file
from validation.protocol.rows import g10_cell, g12_cell
from validation.spectrum import (
    StepConfig,
    run_spectrum,
    simulate,
    singular_values,
)

REPORTS = pathlib.Path(__file__).resolve().parents[1] / "reports"
SIGMA = "tanh(z+0.5)"
READOUT = "gaussian"
ETA1, ETA2 = 1.0, 3.0
BETA, ALPHA0 = 0.5, 1.0
# unit-variance targets with a second direction of information exponent 2 (He2 = z^2 - 1,
# He3 = z^3 - 3z): even in z2 (the example), and not even (learnable with reuse)
HE2 = "(z1 + z2**2 - 1)/sqrt(3)"
HE23 = "(z1 + z2**2 - 1 + z2**3 - 3*z2)/3"
REUSE_TARGETS = {"z1 + He2(z2)": HE2, "z1 + He2(z2) + He3(z2)": HE23}
REPRESENTATIVE = (0.35, 0.35)  # the histogram figure: ratio 2.33, two outliers predicted


@dataclass(frozen=True)
class Plan:
    """Sizes of one run of the experiments."""

    grid_ds: tuple[int, ...]
    grid_seeds: int
    a1s: tuple[float, ...]
    a2s: tuple[float, ...]
    scaling_ds: tuple[int, ...]
    scaling_seeds: int
    scaling_points: tuple[tuple[float, float], ...]
    reuse_d: int
    reuse_seeds: int
    reuse_point: tuple[float, float]
    onestep_d: int
    onestep_as: tuple[float, ...]
    onestep_etas: tuple[float, ...]
    spectrum_d: int
    taylor_d: int
    prefix: str


FULL = Plan(
    grid_ds=(1000, 2000), grid_seeds=2,
    a1s=(0.0, 0.1, 0.2, 0.3, 0.35, 0.4),
    a2s=(0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45),
    scaling_ds=(500, 1000, 2000, 4000), scaling_seeds=2,
    scaling_points=((0.1, 0.2), (0.2, 0.4), (0.3, 0.3), (0.35, 0.375), (0.2, 0.3)),
    reuse_d=2000, reuse_seeds=3, reuse_point=(0.35, 0.35),
    onestep_d=2000, onestep_as=(0.1, 0.3, 0.36, 0.42), onestep_etas=(1.0, 2.0),
    spectrum_d=2000, taylor_d=1000, prefix="spectra")
QUICK = Plan(
    grid_ds=(200,), grid_seeds=1, a1s=(0.0, 0.2, 0.35), a2s=(0.1, 0.3, 0.45),
    scaling_ds=(200, 400), scaling_seeds=1, scaling_points=((0.1, 0.2), (0.35, 0.375)),
    reuse_d=300, reuse_seeds=1, reuse_point=(0.35, 0.35),
    onestep_d=300, onestep_as=(0.1, 0.36), onestep_etas=(1.0,),
    spectrum_d=300, taylor_d=300, prefix="spectra_quick")


def plan_for(quick: bool) -> Plan:
    return QUICK if quick else FULL


def _two_step(d: int, a1: float, a2: float, seed: int, *, target: str = "z1",
              batch: str = "fresh") -> StepConfig:
    return StepConfig(d=d, a1=a1, a2=a2, beta=BETA, alpha0=ALPHA0, sigma=SIGMA, target=target,
                      eta1=ETA1, eta2=ETA2, batch=batch, readout=READOUT, seed=seed)


def configs(name: str, plan: Plan) -> list[StepConfig]:
    """The simulations of experiment ``name``."""
    if name == "onestep":
        return [StepConfig(d=plan.onestep_d, a1=a, beta=BETA, alpha0=ALPHA0, sigma=SIGMA,
                           eta1=eta, readout=READOUT, seed=0)
                for eta in plan.onestep_etas for a in plan.onestep_as]
    if name == "grid":
        return [_two_step(d, a1, a2, s) for d in plan.grid_ds for s in range(plan.grid_seeds)
                for a1 in plan.a1s for a2 in plan.a2s]
    if name == "scaling":
        return [_two_step(d, a1, a2, s) for (a1, a2) in plan.scaling_points
                for d in plan.scaling_ds for s in range(plan.scaling_seeds)]
    if name == "reuse":
        a1, a2 = plan.reuse_point
        return [_two_step(plan.reuse_d, a1, a2, s, target=t, batch=b)
                for t in REUSE_TARGETS.values() for b in ("fresh", "reused")
                for s in range(plan.reuse_seeds)]
    if name == "taylor":
        a1, a2 = TAYLOR_POINT
        return [StepConfig(d=plan.taylor_d, a1=a1, a2=a2, beta=BETA, alpha0=ALPHA0, sigma=SIGMA,
                           eta1=eta, eta2=ETA2, readout=READOUT, seed=0)
                for eta in TAYLOR_ETAS]
    raise ValueError(f"unknown experiment {name!r}; known: {', '.join(EXPERIMENTS)}")


EXPERIMENTS = ("onestep", "grid", "scaling", "reuse", "taylor")
TAYLOR_POINT = (0.4, 0.35)
TAYLOR_ETAS = (0.5, 1.0, 2.0)
KEYS = ("d", "steps", "a1", "a2", "beta", "alpha0", "sigma", "target", "eta1", "eta2", "batch",
        "readout", "seed")
#: the token a NaN key cell (the ``a2`` of a one-step run) stands for in a task's key text
NAN_KEY = "nan"

#: the columns of :meth:`SpectrumRun.record` present in every row, with their types
_BASE = Schema.of(
    d=int, p=int, n=int, beta=float, alpha0=float, steps=int, a1=float, a2=float, eta1=float,
    eta2=float, sigma=str, target=str, batch=str, readout=str, delta=float, seed=int,
    measured=int, predicted=int, predicted_activation=int, weight_outliers=int, edge=float,
    threshold=float, top_sv=float, second_sv=float, seconds=float).columns
#: the columns after them in the committed CSVs' headers (the order the old row store met them)
_COMMITTED = {
    "onestep": "sv1,ov1_theta1,deg1,subspace_theta1,subspace_random,feature_outliers,"
               "feature_threshold,fsv1,fdeg1,fsv2,fdeg2",
    "grid": "sv1,ov1_theta1,deg1,subspace_theta1,subspace_random,sv2,ov2_theta1,deg2,sv3,"
            "ov3_theta1,deg3,sv4,ov4_theta1,deg4",
    "scaling": "sv1,ov1_theta1,deg1,subspace_theta1,subspace_random,sv2,ov2_theta1,deg2,sv3,"
               "ov3_theta1,deg3",
    "reuse": "sv1,ov1_theta1,ov1_theta2,deg1,sv2,ov2_theta1,ov2_theta2,deg2,sv3,ov3_theta1,"
             "ov3_theta2,deg3,sv4,ov4_theta1,ov4_theta2,deg4,sv5,ov5_theta1,ov5_theta2,deg5,sv6,"
             "ov6_theta1,ov6_theta2,deg6,subspace_theta1,subspace_theta2,subspace_random",
    "taylor": "sv1,ov1_theta1,deg1,sv2,ov2_theta1,deg2,subspace_theta1,subspace_random,"
              "expansion_rms,taylor1,taylor2,taylor3,taylor4,taylor5,sv3,ov3_theta1,deg3",
}
MAX_OUTLIERS = 6  # SpectrumRun.record and simulate_row keep at most six outliers


def _possible(name: str) -> list[str]:
    """Every column beyond the base ones a row of experiment ``name`` can hold: per outlier
    (at most six) its singular value, overlaps with each ``theta_j`` and Hermite degree, the
    subspace overlaps, and the Taylor (``taylor``) or feature (``onestep``) columns."""
    k = 2 if name == "reuse" else 1  # directions of the experiment's targets
    cols = [c for i in range(1, MAX_OUTLIERS + 1)
            for c in (f"sv{i}", *(f"ov{i}_theta{j}" for j in range(1, k + 1)), f"deg{i}")]
    cols += [f"subspace_theta{j}" for j in range(1, k + 1)] + ["subspace_random"]
    if name == "taylor":
        cols += ["expansion_rms", *(f"taylor{m}" for m in range(1, 6))]
    if name == "onestep":
        cols += ["feature_outliers", "feature_threshold",
                 *(c for i in range(1, MAX_OUTLIERS + 1) for c in (f"fsv{i}", f"fdeg{i}"))]
    return cols


def _schema(name: str) -> Schema:
    """The fixed columns of experiment ``name``: the base ones (amplitudes ``amp``/``floor`` 1..5
    included), then the committed CSV's columns in its header's order, then the other columns a
    row can hold (:func:`_possible`), appended; every one but the base ones a float (NaN where a
    row has no such outlier), ``feature_outliers`` an integer."""
    amps = [(f"{w}{m}", float) for m in range(1, 6) for w in ("amp", "floor")]
    rest = _COMMITTED[name].split(",")
    rest += [c for c in _possible(name) if c not in rest]
    assert set(rest) == set(_possible(name)), name
    return Schema((*_BASE, *amps,
                   *((c, int if c == "feature_outliers" else float) for c in rest)))


#: the fixed schema of each experiment's rows (one row per configuration)
SCHEMAS = {name: _schema(name) for name in EXPERIMENTS}
#: the order of each exported CSV (then the task key): the plan's order where it sorts
ORDERS = {"onestep": ("eta1", "a1"), "grid": ("d", "seed", "a1", "a2"),
          "scaling": ("a1", "a2", "d", "seed"), "reuse": ("target", "batch", "seed"),
          "taylor": ("eta1",)}


def _key(c: StepConfig) -> tuple:
    """A configuration's values in the key columns ``KEYS`` (``a2`` NaN for one step)."""
    return (c.d, c.steps, c.a1, math.nan if c.a2 is None else c.a2, c.beta, c.alpha0, c.sigma,
            c.target, c.eta1, c.eta2, c.batch, c.readout, c.seed)


def _task(job: tuple[str, StepConfig]) -> list[dict]:
    """The row of one configuration of experiment ``name`` (:func:`simulate_row`), every column
    of its schema filled (NaN where the run has no such outlier)."""
    name, config = job
    row = simulate_row(config, taylor=name == "taylor")
    schema = SCHEMAS[name]
    extra = sorted(set(row) - set(schema.names))
    if extra:
        raise ValueError(f"experiment {name}: a row has columns {extra} outside its schema "
                         "(validation.experiments.spectra._possible)")
    return [{c: row.get(c, math.nan) for c in schema.names}]


def campaign(name: str, plan: Plan) -> Campaign:
    """Experiment ``name`` of ``plan`` as a campaign: one task (one row) per configuration,
    keyed by ``KEYS``; a NaN ``a2`` (one step) is the token ``NAN_KEY`` in the key text."""
    if name not in SCHEMAS:
        raise ValueError(f"unknown experiment {name!r}; known: {', '.join(EXPERIMENTS)}")
    jobs = tuple((name, c) for c in configs(name, plan))
    return Campaign(f"{plan.prefix}_{name}", jobs, _task, SCHEMAS[name], key_columns=KEYS,
                    key=lambda j: _key(j[1]), order=ORDERS[name], cell=g10_cell,
                    nan_key=NAN_KEY)


def simulate_row(config: StepConfig, *, taylor: bool = False) -> dict:
    """One CSV row: :meth:`SpectrumRun.record` plus the subspace overlaps of the outliers' right
    vectors with each ``theta_j``; after one step, the feature outliers' Hermite degrees; with
    ``taylor``, the Taylor-surrogate amplitudes (:func:`taylor_amplitudes`)."""
    run = run_spectrum(config)
    row = run.record()
    w = run.weights
    for j in range(w.right_overlaps.shape[1]):
        row[f"subspace_theta{j + 1}"] = float(np.sqrt(np.sum(w.right_overlaps[:, j] ** 2)))
    row["subspace_random"] = math.sqrt(w.n_outliers / config.d)  # E |P v|, v uniform: ~sqrt(r/d)
    if taylor:
        amps, expansion = taylor_amplitudes(config)
        row["expansion_rms"] = expansion
        for m, v in enumerate(amps, start=1):
            row[f"taylor{m}"] = float(v)
    if run.features is not None:
        f = run.features
        row["feature_outliers"] = f.n_outliers
        row["feature_threshold"] = f.edge.threshold
        for i in range(min(f.n_outliers, 6)):
            row[f"fsv{i + 1}"] = float(f.outliers[i])
            row[f"fdeg{i + 1}"] = int(np.argmax(f.hermite_overlaps[i, 0]) + 1)
    return row


def taylor_amplitudes(config: StepConfig, k_max: int = 4) -> tuple[np.ndarray, float]:
    """Amplitudes ``|h_m^T L|`` (m = 1..5) of the Taylor surrogate of the second step,
    ``L = sum_{k <= k_max} eta_2 (a_j / sqrt p) (E sigma^(k+1)/k!) eps_j^k v_k^T`` with
    ``eps_j = eta_tilde_1 E sigma' p^(a1 - 1/2) g_j``, ``kappa = X2 u``, ``u = X1^T (y1 - f0)/n``,
    ``v_k = X2^T ((y2 - f1) kappa^k)/n``, on the simulation's own samples; and the rms of
    ``eps_j kappa_i`` (the expansion parameter)."""
    from asymptotics.coefficients.functions import get_function
    from asymptotics.multiindex.spikes import hermite_coefficients, target_function
    from validation.spectrum import draw_batch, polynomial_amplitudes, rng_for

    sim = simulate(config)
    sigma = get_function(config.sigma)
    g_fn, _ = target_function(config.target)
    p, n = config.p, config.n
    X1, y1 = draw_batch(rng_for(config.seed, "batch1"), n, sim.theta, g_fn, config.delta)
    if config.batch == "fresh":
        X2, y2 = draw_batch(rng_for(config.seed, "batch2"), n, sim.theta, g_fn, config.delta)
    else:
        X2, y2 = X1, y1
    c = hermite_coefficients(config.sigma, k_max + 2)
    moments = [c[l] * math.sqrt(math.factorial(l)) for l in range(k_max + 2)]  # E sigma^(l)
    g = sim.a * math.sqrt(p)
    u = X1.T @ (y1 - sigma(X1 @ sim.W0.T) @ sim.a / math.sqrt(p)) / n
    eps = config.eta1 * moments[1] * p ** (config.a1 - 0.5) * g
    kappa = X2 @ u
    r2 = y2 - sigma(X2 @ sim.W1.T) @ sim.a / math.sqrt(p)
    eta2 = config.learning_rates[1]
    L = np.zeros_like(sim.W0)
    for k in range(k_max + 1):
        v = X2.T @ (r2 * kappa**k) / n
        L += np.outer(eta2 * sim.a / math.sqrt(p) * moments[k + 1] / math.factorial(k) * eps**k,
                      v)
    amps, _ = polynomial_amplitudes(L, sim.a, 5)
    return amps, float(np.sqrt(np.mean(eps**2)) * np.sqrt(np.mean(kappa**2)))


def load_or_run(name: str, plan: Plan, *, force: bool = False, n_jobs: int = 1,
                log: Callable[[str], None] = print,
                progress: bool | None = True) -> pd.DataFrame:
    """Rows of experiment ``name``, in the order of its configurations (:func:`configs`), from
    its CSV (``validation/reports/data/<prefix>_<name>.csv``) when that holds every one; else
    the missing ones are simulated into the campaign's SQLite store beside the CSV (which starts
    from the CSV's rows; :func:`validation.campaign.run_campaign`, one transaction per
    configuration, so an interrupted run resumes) and the CSV is exported again, sorted.
    ``force``: simulate everything afresh; ``progress``: the simulations' progress on stderr."""
    read, write = data_file(REPORTS / "data" / f"{plan.prefix}_{name}.csv", "reports", "data")
    c = campaign(name, plan)
    return load_or_run_campaign(c, read, write, ordered=_ordered, import_csv=_import,
                                force=force, n_jobs=n_jobs, log=log, what=name,
                                done="simulations", show_paths=True, progress=progress)


def _cells(path: pathlib.Path, c: Campaign) -> tuple[list[str], list[dict]]:
    """The CSV's header and its rows as values of the campaign's column types (a column of the
    schema the file lacks -- a file written by the old row store, whose header grew as columns
    appeared -- is NaN; empty float cells are NaN)."""
    types = dict(c.schema.columns)
    with open(path, newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, [])
        unknown = [h for h in header if h not in types]
        if unknown:
            raise ValueError(f"{path}: columns {unknown} are not in the schema of {c.name}")
        rows = []
        for line in reader:
            cells = dict(zip(header, line, strict=True))
            rows.append({col: _parse(cells.get(col, ""), t) for col, t in c.schema.columns})
    return header, rows


def _parse(text: str, t: type):
    if t is float:
        return math.nan if text == "" else float(text)
    return t(text)


def _import(st: Store, c: Campaign, path: pathlib.Path) -> int:
    """Store the tasks of the CSV ``path`` that ``st`` lacks (:func:`_cells`: also a CSV of the
    old row store); returns how many."""
    _, rows = _cells(path, c)
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(c.row_key(r), []).append(r)
    return st.import_tasks(c, groups, read_keys(keys_path(path)))


def _ordered(path: pathlib.Path, c: Campaign, wanted: list[str]) -> pd.DataFrame | None:
    """The rows of the tasks ``wanted`` in that order (each task's rows in the file's order), as
    ``pandas.read_csv`` reads the file, or None if the CSV lacks one of them."""
    _, rows = _cells(path, c)
    df = pd.read_csv(path)
    order = {k: i for i, k in enumerate(wanted)}
    rank = pd.Series([order.get(c.row_key(r), -1) for r in rows], index=df.index, dtype=int)
    if set(rank) - {-1} != set(range(len(wanted))):
        return None
    keep = rank[rank >= 0].sort_values(kind="stable").index
    return df.loc[keep].reset_index(drop=True)


# ------------------------------------------------------------------------------------------------
# the data of the spectrum figure


#: the spectrum data: one task, the singular values of W0, W1, W2 of one configuration
SPECTRUM_KEYS = ("d", "p", "a1", "a2", "eta1", "eta2", "sigma", "readout", "seed")
SPECTRUM_SCHEMA = Schema.of(matrix=str, index=int, s=float, d=int, p=int, a1=float, a2=float,
                            eta1=float, eta2=float, sigma=str, readout=str, seed=int)


def _spectrum_key(cfg: StepConfig) -> tuple:
    return (cfg.d, cfg.p, cfg.a1, cfg.a2, cfg.eta1, cfg.eta2, cfg.sigma, cfg.readout, cfg.seed)


def _spectrum_task(cfg: StepConfig) -> list[dict]:
    """The singular values of W0, W1, W2 (``3 min(p, d)`` rows, in that order)."""
    sim = simulate(cfg)
    common = dict(zip(SPECTRUM_KEYS, _spectrum_key(cfg), strict=True))
    return [dict(matrix=name, index=i, s=float(v), **common)
            for name, M in (("W0", sim.W0), ("W1", sim.W1), ("W2", sim.W2))
            for i, v in enumerate(singular_values(M))]


def spectrum_campaign(plan: Plan) -> Campaign:
    """The spectrum figure's data as a campaign of one task (cells ``%.12g``)."""
    a1, a2 = REPRESENTATIVE
    cfg = _two_step(plan.spectrum_d, a1, a2, 0)
    return Campaign(f"{plan.prefix}_spectrum", (cfg,), _spectrum_task, SPECTRUM_SCHEMA,
                    key_columns=SPECTRUM_KEYS, key=_spectrum_key, cell=g12_cell)


def spectrum_data(quick: bool, force: bool = False) -> pd.DataFrame:
    plan = plan_for(quick)
    read, write = data_file(REPORTS / "data" / f"{plan.prefix}_spectrum.csv", "reports", "data")
    return load_or_run_campaign(spectrum_campaign(plan), read, write, ordered=_ordered,
                                import_csv=_import, force=force, n_jobs=1,
                                log=lambda _m: None, what="spectrum", done="simulations",
                                show_paths=True)
