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

caches one CSV row per simulation as ``validation/reports/data/spectra_<name>.csv`` (reused when
every needed row is there) and builds the text of ``validation/reports/SPECTRA.md`` from the
numbers (``--quick``: small sizes, files ``spectra_quick_*``).

Conventions: :mod:`validation.spectrum` (``eta_t = eta_tilde_t p^(1/2 + a_t)``, rows of ``W0`` on
the sphere, frozen Gaussian readout ``a_j = g_j / sqrt p``, ``beta = p/d = 1/2``,
``alpha0 = n/d = 1``), activation ``tanh(z + 1/2)`` (every Hermite coefficient nonzero, so the
generic count applies), ``eta_tilde = (1, 3)``. Seeds: common random numbers, replicate ``r``
uses seed ``r`` at every grid point.
"""

from __future__ import annotations

import math
import pathlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from asymptotics.multiindex.spikes import (
    boundary_gap,
    learnable_directions,
    two_step_ratio,
    two_step_term_exponents,
)
from validation.paths import data_file
from validation.spectrum import (
    StepConfig,
    run_spectrum,
    simulate,
    singular_values,
)
from validation.store import Layout, TableCache, g10_cell, g12_cell

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
KEYS = ["d", "steps", "a1", "a2", "beta", "alpha0", "sigma", "target", "eta1", "eta2", "batch",
        "readout", "seed"]


def _norm(text: str) -> str:
    """Cache-key form of a cell: numbers as ``%.10g`` (the CSV's format), else the text."""
    try:
        return f"{float(text):.10g}"
    except ValueError:
        return text


#: the data's blocks: one row per configuration
LAYOUT = Layout(block=lambda row: "|".join(_norm(row[k]) for k in KEYS), size=lambda row: 1,
                cell=g10_cell)


def _config_key(c: StepConfig) -> str:
    values = [c.d, c.steps, c.a1, c.a2, c.beta, c.alpha0, c.sigma, c.target, c.eta1, c.eta2,
              c.batch, c.readout, c.seed]
    return LAYOUT.key_of(dict(zip(KEYS, values, strict=True)))


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


def load_or_run(name: str, plan: Plan, *, force: bool = False,
                log: Callable[[str], None] = print) -> pd.DataFrame:
    """Rows of experiment ``name`` (in the order of the data): from the package's row store
    (:class:`validation.store.TableCache`, one block per configuration) where present, the
    missing ones simulated and appended one by one. ``force``: simulate everything afresh."""
    path, out = data_file(REPORTS / "data" / f"{plan.prefix}_{name}.csv", "reports", "data")
    wanted = configs(name, plan)
    with TableCache(path, out, LAYOUT, fresh=force, what="experiment data") as cache:
        todo = [c for c in wanted if cache.get(_config_key(c)) is None]
        if not todo:
            log(f"[{name}] cached: {path}")
        for i, c in enumerate(todo):
            row = simulate_row(c, taylor=name == "taylor")
            cache.add([row])
            log(f"[{name}] {i + 1}/{len(todo)} d={c.d} a1={c.a1:g} a2={c.a2} batch={c.batch} "
                f"target={c.target} seed={c.seed}: measured={row['measured']} "
                f"predicted={row['predicted']} ({row['seconds']:.1f} s)")
        keys = {_config_key(c) for c in wanted}
        return cache.frame([k for k in cache.blocks if k in keys])


# ------------------------------------------------------------------------------------------------
# analysis


def grid_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per (d, a1, a2): mean/min/max measured count over seeds, predicted count, ratio, gap."""
    g = df.groupby(["d", "a1", "a2"], sort=True)
    out = g.agg(measured_mean=("measured", "mean"), measured_min=("measured", "min"),
                measured_max=("measured", "max"), seeds=("measured", "size"),
                predicted=("predicted", "first"), edge=("edge", "mean"),
                seconds=("seconds", "mean")).reset_index()
    out["ratio"] = [two_step_ratio(a, b) for a, b in zip(out.a1, out.a2, strict=True)]
    out["gap"] = [round(boundary_gap(a, b), 10) for a, b in zip(out.a1, out.a2, strict=True)]
    out["agree"] = (out.measured_min == out.predicted) & (out.measured_max == out.predicted)
    return out


GAP_CLASSES = ((0.0, 0.025, "gap < 0.025 (on a boundary)"), (0.025, 0.075, "0.025 <= gap < 0.075"),
               (0.075, 1.0, "gap >= 0.075"))


def agreement_by_gap(table: pd.DataFrame) -> pd.DataFrame:
    """Share of grid points (every seed) with measured == predicted, by boundary gap class."""
    rows = []
    for d, t in table.groupby("d"):
        for lo, hi, label in GAP_CLASSES:
            s = t[(t.gap >= lo - 1e-12) & (t.gap < hi - 1e-12)]
            rows.append(dict(d=d, gap=label, points=len(s), agree=int(s.agree.sum()),
                             under=int((s.measured_mean < s.predicted).sum()),
                             over=int((s.measured_mean > s.predicted).sum())))
        rows.append(dict(d=d, gap="all", points=len(t), agree=int(t.agree.sum()),
                         under=int((t.measured_mean < t.predicted).sum()),
                         over=int((t.measured_mean > t.predicted).sum())))
    return pd.DataFrame(rows)


def signal_share(df: pd.DataFrame, m: int) -> np.ndarray:
    a, f = df[f"amp{m}"].to_numpy(), df[f"floor{m}"].to_numpy()
    return np.sqrt(np.clip(a * a - f * f, 0.0, None))


def exponent_table(df: pd.DataFrame, k_max: int = 3) -> pd.DataFrame:
    """Per (a1, a2) and Taylor order k: the fitted exponent of the signal amplitude on readout
    degree k + 1 (``sqrt(A^2 - F^2)``, mean over seeds) against log p, vs ``e_k``."""
    rows = []
    for (a1, a2), t in df.groupby(["a1", "a2"], sort=True):
        e = two_step_term_exponents(a1, a2, k_max)
        for k in range(k_max + 1):
            s = t.assign(sig=signal_share(t, k + 1)).groupby("p")["sig"].mean()
            ok = s > 0
            slope = (float(np.polyfit(np.log(s.index[ok]), np.log(s[ok]), 1)[0])
                     if ok.sum() >= 2 else math.nan)
            rows.append(dict(a1=a1, a2=a2, k=k, e_k=float(e[k]), fitted=slope,
                             **{f"A(p={p})": v for p, v in s.items()}))
    return pd.DataFrame(rows)


def counts_vs_d(df: pd.DataFrame) -> pd.DataFrame:
    t = df.groupby(["a1", "a2", "d"], sort=True).agg(
        measured_mean=("measured", "mean"), measured_min=("measured", "min"),
        measured_max=("measured", "max"), predicted=("predicted", "first"),
        second_sv=("second_sv", "mean"), threshold=("threshold", "mean"),
        seconds=("seconds", "mean")).reset_index()
    t["gap"] = [boundary_gap(a, b) for a, b in zip(t.a1, t.a2, strict=True)]
    return t


def reuse_table(df: pd.DataFrame) -> pd.DataFrame:
    names = {v: k for k, v in REUSE_TARGETS.items()}
    t = df.assign(target_name=df.target.map(names))
    g = t.groupby(["target_name", "batch"], sort=True)
    out = g.agg(outliers=("weight_outliers", "mean"),
                theta1=("subspace_theta1", "mean"), theta2=("subspace_theta2", "mean"),
                theta2_sd=("subspace_theta2", "std"), random=("subspace_random", "mean"),
                seeds=("seed", "size")).reset_index()
    return out


def reuse_summary(table: pd.DataFrame) -> str:
    """The reuse result in words, with the measured numbers."""
    t = table.set_index(["target_name", "batch"])

    def v(name: str, batch: str) -> str:
        r = t.loc[(name, batch)]
        return f"{r.theta2:.3f} +- {r.theta2_sd:.3f} (random {r.random:.3f})"

    a, b = list(REUSE_TARGETS)
    return (
        f"**Result.** `{b}`: `|P theta_2|` = {v(b, 'fresh')} with the fresh batch and "
        f"{v(b, 'reused')} with the reused one (mean +- sd over seeds): the information-exponent-2 "
        "direction enters the outliers only with the reused batch, as predicted (its `He_2 + "
        "He_3` profile is not even, so `E[g^2 z2] != 0` feeds the k = 1 term through the "
        f"self-interaction `y_i |x_i|^2 / n`). `{a}` (the issue's example): {v(a, 'fresh')} "
        f"fresh, {v(a, 'reused')} reused: **not learned with either batch**, in agreement with "
        "`learnable_directions` but not with the issue's expectation. Reason: `g` is even in "
        "`z2`, every quantity the second step correlates with `x` (`y`, `kappa`, the "
        "self-interaction) is even in `z2`, so `E[(...) z2] = 0` at every order k; batch reuse "
        "helps directions whose generative exponent is 1 (a non-even `He_2 + He_3`, or `He_3`), "
        "not even ones, at `n = O(d)`. Side observation, not explained here: at this point the "
        "fresh runs have a more inflated bulk (fitted edge 2.0-2.9) than the reused ones "
        "(1.74-1.83) and both have 1-5 outliers beyond the leading one against 2 predicted: "
        "these non-`z1` targets are not a test of the count.")


def reuse_theory(a1: float, a2: float) -> pd.DataFrame:
    rows = []
    targets = dict(REUSE_TARGETS)
    targets["z1 + He3(z2)"] = "z1 + z2**3 - 3*z2"
    for name, t in targets.items():
        for batch in ("fresh", "reused"):
            rep = learnable_directions(t, a1=a1, a2=a2, batch=batch, alpha0=ALPHA0)
            rows.append(dict(target=name, batch=batch, orders=str(rep.orders),
                             theta1=rep.learned[0], theta2=rep.learned[1],
                             first_order_theta2=rep.first_order[1],
                             moments_theta2=", ".join(f"{v:.3g}" for v in rep.moments[1])))
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------------------
# the data of the spectrum figure


#: the spectrum data: one block, the singular values of W0, W1, W2 of one configuration
SPECTRUM_KEYS = ("d", "p", "a1", "a2", "eta1", "eta2", "sigma", "readout", "seed")
SPECTRUM_LAYOUT = Layout(block=lambda row: "|".join(_norm(row[k]) for k in SPECTRUM_KEYS),
                         size=lambda row: 3 * min(int(row["p"]), int(row["d"])), cell=g12_cell)


def spectrum_data(quick: bool, force: bool = False) -> pd.DataFrame:
    plan = plan_for(quick)
    path, out = data_file(REPORTS / "data" / f"{plan.prefix}_spectrum.csv", "reports", "data")
    a1, a2 = REPRESENTATIVE
    cfg = _two_step(plan.spectrum_d, a1, a2, 0)
    common = dict(d=cfg.d, p=cfg.p, a1=a1, a2=a2, eta1=cfg.eta1, eta2=cfg.eta2, sigma=cfg.sigma,
                  readout=cfg.readout, seed=cfg.seed)
    key = SPECTRUM_LAYOUT.key_of(common)
    with TableCache(path, out, SPECTRUM_LAYOUT, fresh=force, what="experiment data") as cache:
        if cache.get(key) is None:
            sim = simulate(cfg)
            frames = [pd.DataFrame(dict(matrix=name, index=np.arange(min(cfg.p, cfg.d)),
                                        s=singular_values(M), **common))
                      for name, M in (("W0", sim.W0), ("W1", sim.W1), ("W2", sim.W2))]
            cache.add(pd.concat(frames, ignore_index=True).to_dict("records"))
        return cache.frame([key])
