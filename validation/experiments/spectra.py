"""Spectra experiments: outliers of the first-layer weights after one and two large steps.

The data and analysis of the experiments (the figures and the command that writes the report,
``python -m figures.spectra_report [--quick] [--force] [--threads N]``, are in
:mod:`figures.spectra_report`):

* ``onestep``: the convention check, spikes of the features ``sigma(X W1^T)`` after one step vs
  ``#{l: a > (l-1)/(2l)}`` (``asymptotics.spikes.one_step_spike_count``);
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
import platform
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from asymptotics.spikes import (
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


def _key_of(values: Sequence) -> tuple:
    out = []
    for v in values:
        if isinstance(v, float) and math.isnan(v):
            out.append("nan")
        elif isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
            out.append(f"{float(v):.10g}")
        else:
            out.append(str(v))
    return tuple(out)


def _config_key(c: StepConfig) -> tuple:
    return _key_of([c.d, c.steps, c.a1, math.nan if c.a2 is None else c.a2, c.beta, c.alpha0,
                    c.sigma, c.target, c.eta1, c.eta2, c.batch, c.readout, c.seed])


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
    from asymptotics.functions import get_function
    from asymptotics.spikes import hermite_coefficients, target_function
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
    """Rows of experiment ``name``: from the CSV cache where present, the missing ones simulated
    and appended to the cache."""
    path, out = data_file(REPORTS / "data" / f"{plan.prefix}_{name}.csv", "reports", "data")
    wanted = configs(name, plan)
    cached = pd.read_csv(path) if path.exists() and not force else pd.DataFrame()
    have = set()
    if len(cached):
        have = {_key_of(list(r)) for r in cached[KEYS].itertuples(index=False)}
    todo = [c for c in wanted if _config_key(c) not in have]
    if not todo:
        log(f"[{name}] cached: {path}")
    rows = []
    for i, c in enumerate(todo):
        rows.append(simulate_row(c, taylor=name == "taylor"))
        log(f"[{name}] {i + 1}/{len(todo)} d={c.d} a1={c.a1:g} a2={c.a2} batch={c.batch} "
            f"target={c.target} seed={c.seed}: measured={rows[-1]['measured']} "
            f"predicted={rows[-1]['predicted']} ({rows[-1]['seconds']:.1f} s)")
    df = pd.concat([cached, pd.DataFrame(rows)], ignore_index=True) if rows else cached
    if rows:
        out.parent.mkdir(parents=True, exist_ok=True)
        df.to_csv(out, index=False, float_format="%.10g")
    keys = {_config_key(c) for c in wanted}
    mask = [_key_of(list(r)) in keys for r in df[KEYS].itertuples(index=False)]
    return df[np.asarray(mask, dtype=bool)].reset_index(drop=True)


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


def _signal(df: pd.DataFrame, m: int) -> np.ndarray:
    a, f = df[f"amp{m}"].to_numpy(), df[f"floor{m}"].to_numpy()
    return np.sqrt(np.clip(a * a - f * f, 0.0, None))


def exponent_table(df: pd.DataFrame, k_max: int = 3) -> pd.DataFrame:
    """Per (a1, a2) and Taylor order k: the fitted exponent of the signal amplitude on readout
    degree k + 1 (``sqrt(A^2 - F^2)``, mean over seeds) against log p, vs ``e_k``."""
    rows = []
    for (a1, a2), t in df.groupby(["a1", "a2"], sort=True):
        e = two_step_term_exponents(a1, a2, k_max)
        for k in range(k_max + 1):
            s = t.assign(sig=_signal(t, k + 1)).groupby("p")["sig"].mean()
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


def _spectrum_data(quick: bool, force: bool = False) -> pd.DataFrame:
    plan = plan_for(quick)
    path, out = data_file(REPORTS / "data" / f"{plan.prefix}_spectrum.csv", "reports", "data")
    a1, a2 = REPRESENTATIVE
    cfg = _two_step(plan.spectrum_d, a1, a2, 0)
    if path.exists() and not force:
        df = pd.read_csv(path)
        if len(df) and int(df.d.iloc[0]) == cfg.d:
            return df
    sim = simulate(cfg)
    frames = [pd.DataFrame(dict(matrix=name, index=np.arange(min(cfg.p, cfg.d)),
                                s=singular_values(M), d=cfg.d, p=cfg.p, a1=a1, a2=a2,
                                eta1=cfg.eta1, eta2=cfg.eta2, sigma=cfg.sigma,
                                readout=cfg.readout, seed=cfg.seed))
              for name, M in (("W0", sim.W0), ("W1", sim.W1), ("W2", sim.W2))]
    df = pd.concat(frames, ignore_index=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(out, index=False, float_format="%.12g")
    return df


def _md(df: pd.DataFrame, floatfmt: str = ".3g") -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(str(c) for c in cols) + " |",
             "|" + "|".join("---" for _ in cols) + "|"]
    for row in df.itertuples(index=False):
        cells = []
        for v in row:
            if isinstance(v, (float, np.floating)):
                cells.append("nan" if math.isnan(v) else format(float(v), floatfmt))
            else:
                cells.append(str(v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _grid_matrix(table: pd.DataFrame, d: int) -> pd.DataFrame:
    t = table[table.d == d]
    out = {}
    for a1, s in t.groupby("a1", sort=True):
        row = {}
        for r in s.itertuples(index=False):
            m = (f"{r.measured_min}" if r.measured_min == r.measured_max
                 else f"{r.measured_min}-{r.measured_max}")
            row[f"a2={r.a2:g}"] = f"{m}/{r.predicted}" + ("" if r.agree else " ✗")
        out[f"a1={a1:g}"] = row
    return pd.DataFrame(out).T.reset_index(names="")


def onestep_result(one: pd.DataFrame, check: bool = True) -> str:
    """The conclusion of section 1, written from the numbers; raises AssertionError when the data
    no longer support its verdict (order-1 spike everywhere, nothing beyond order 2)."""
    from asymptotics.functions import get_function
    from asymptotics.quadrature import gauss_hermite

    sigma = get_function(str(one["sigma"].iloc[0]))
    z, w = gauss_hermite(160)
    he = {2: z * z - 1, 3: z**3 - 3 * z}
    coef = {l: float(np.sum(w * sigma(z) * he[l])) / math.factorial(l) for l in (2, 3)}
    d = int(one["d"].iloc[0])
    p = int(round(BETA * d))
    fdeg = [c for c in one.columns if c.startswith("fdeg")]
    order1 = bool((one["measured"] >= 1).all())
    on_he1 = bool((one.get("fdeg1", pd.Series([1])) == 1).all())
    two = one[one["measured"] >= 2]
    where2 = ", ".join(f"a = {r.a1:g} with `eta_tilde_1 = {r.eta1:g}`" for r in two.itertuples())
    base = one[one["eta1"] == one["eta1"].min()]
    opened = "; ".join(
        f"l = {r.measured + 1}..{r.predicted} at a = {r.a1:g}" if r.predicted > r.measured + 1
        else f"l = {r.predicted} at a = {r.a1:g}"
        for r in base.itertuples() if r.predicted > r.measured)
    holds = order1 and (one["measured"] <= 2).all() and (one["predicted"] > one["measured"]).any()
    if check and not holds:
        raise AssertionError("the verdict of SPECTRA.md section 1 (order-1 spike at every a, no "
                             "order beyond 2 at this size) no longer matches the data:\n"
                             + one[["a1", "eta1", "measured", "predicted", *fdeg]].to_string())
    gain2, gain3 = 0.5 - 2 * (0.5 - 0.3), 0.5 - 3 * (0.5 - 0.36)
    return (
        ("" if holds else "(Not the full run: the verdict below is not supported by these data.) ")
        + f"**Result.** The order-1 spike (a > 0) is found at every a"
        f"{', with its left vector on the degree-1 Hermite feature' if on_he1 else ''}"
        + (f", and an order-2 spike (left vector on `He_2`) appears at {where2}" if where2 else "")
        + f"; but most of the orders that the asymptotic count opens ({opened}) are missing at "
        f"d = {d} (p = {p}). The order-l spike has norm `~ C_l p^(1/2 - l(1/2 - a))` relative to "
        "the bulk with `C_l ~ (E sigma^(l)/l!) (eta_tilde_1 E sigma' |u|)^l` small "
        f"(`E sigma^(2)/2 = {coef[2]:.3f}`, `E sigma^(3)/6 = {coef[3]:.3f}` here), while "
        f"`p^(1/2 - l(1/2 - a))` is only `{p}^{gain2:.2g} = {p ** gain2:.2g}` (l = 2, a = 0.3) or "
        f"`{p}^{gain3:.2g} = {p ** gain3:.2g}` (l = 3, a = 0.36). So the one-step count is "
        "**not** reproduced beyond l = 2 at this size: a finite-size limitation (constants), "
        "not a test of the thresholds. The exponents of the convention "
        "`eta = eta_tilde p^(1/2 + a)` are checked instead through the two-step term "
        "amplitudes (section 3).")


def build_report(data: dict[str, pd.DataFrame], plan: Plan, figs: list[pathlib.Path],
                 wall: float) -> str:
    grid = grid_table(data["grid"])
    share = agreement_by_gap(grid)
    counts = counts_vs_d(data["scaling"])
    exps = exponent_table(data["scaling"])
    reuse = reuse_table(data["reuse"])
    theory = reuse_theory(*plan.reuse_point)
    one = data["onestep"]
    d_max = max(plan.grid_ds)
    s_max = share[(share.d == d_max) & (share.gap == "all")].iloc[0]
    s_far = share[(share.d == d_max) & (share.gap == "gap >= 0.075")].iloc[0]
    rel = [f.relative_to(REPORTS) if f.is_relative_to(REPORTS) else f for f in figs]
    out = [
        "# Spectra after one and two large gradient steps",
        "",
        "Generated by `python -m figures.spectra_report` "
        f"({'quick' if plan is QUICK else 'full'} mode); raw rows in "
        f"`validation/reports/data/{plan.prefix}_*.csv`, figures: "
        + ", ".join(f"`{r}`" for r in rel) + ".",
        "",
        "## Setting",
        "",
        "Network and steps as in `validation/spectrum.py`: rows of `W0` uniform on the sphere, "
        "`f(x) = (1/sqrt p) sum_j a_j sigma(<w_j,x>)` with a frozen Gaussian readout "
        "`a_j = g_j/sqrt p`, two full-batch GD steps on the square loss with "
        "`eta_t = eta_tilde_t p^(1/2 + a_t)`, so the first step adds a spike of norm `~p^a1` "
        "(left vector `a`, right vector `u = X^T y / n`) and the second step's Taylor term of "
        "order k (in the first step's perturbation) has left vector `a^(k+1)` and norm "
        "`~p^(e_k)`, `e_k = a2 - k(1/2 - a1)` (`asymptotics/spikes.py`). "
        f"`sigma = {SIGMA}` (all Hermite coefficients nonzero), target `z1` unless stated, "
        f"`beta = p/d = {BETA:g}`, `alpha0 = n/d = {ALPHA0:g}`, `eta_tilde = ({ETA1:g}, "
        f"{ETA2:g})`. The measured count is the number of singular values of `W2` above the "
        "fitted bulk edge (`bulk_edge(method='fit', kappa=2)`, margin two local spacings, "
        "shrinking like `p^(-2/3)`) minus one (the leading outlier: the first step's spike, "
        "reinforced by the second step's k = 0 term). The prediction is Moniri & Hassani's (2026) "
        "`floor(a2/(1/2 - a1))` read as the number of outliers *beyond* the leading one "
        "(for `a1 = 0`, `a2 < 1/2` it is 0 while `W2` still has its leading spike).",
        "",
        "**Interpretation caveat.** Only the abstract of Moniri & Hassani 2026 (arXiv:2605.17767) "
        "was available to us; the reading "
        "'beyond the leading one' and the mechanism (Taylor terms with left vectors `a^(k+1)`) "
        "are our derivation, checked below by the term amplitudes.",
        "",
        "## 1. Convention check: one step, spikes of the features",
        "",
        "Outliers of the centred features `sigma(X W1^T)/sqrt n` on fresh inputs vs "
        "`#{l >= 1: a > (l-1)/(2l)}` (thresholds 0, 1/4, 1/3, 3/8, 2/5, ...). "
        f"d = {plan.onestep_d}, one seed. `fdeg` is the Hermite degree l maximising "
        "`|cos(u_i, He_l(X theta))|` for each feature outlier.",
        "",
        _md(one.assign(fdeg=[",".join(str(int(r[f"fdeg{i}"])) for i in range(1, 7)
                                      if f"fdeg{i}" in r and not pd.isna(r[f"fdeg{i}"]))
                             for _, r in one.iterrows()])
            [["d", "a1", "eta1", "measured", "predicted", "weight_outliers", "fsv1", "fdeg",
              "seconds"]].rename(columns={"a1": "a", "weight_outliers": "W1 outliers"})),
        "",
        onestep_result(one, check="quick" not in plan.prefix),
        "",
        "## 2. Phase diagram",
        "",
        f"Grid a1 in {list(plan.a1s)}, a2 in {list(plan.a2s)}; {plan.grid_seeds} seed(s) per "
        "point (common random numbers). Cells: measured (range over seeds) / predicted; ✗ marks "
        "a mismatch in any seed. The boundary gap `min_k |a2 - k(1/2 - a1)|` is the exponent "
        "of the marginal term: it is separated from the bulk by a factor `p^gap` only.",
        "",
    ]
    for d in plan.grid_ds:
        out += [f"**d = {d}** (p = {int(round(BETA * d))})", "", _md(_grid_matrix(grid, d)), ""]
    out += [
        "Agreement (measured == predicted in every seed), by boundary gap:",
        "",
        _md(share),
        "",
        f"At the largest d ({d_max}) the counts agree at {s_max.agree}/{s_max.points} grid "
        f"points overall and at {s_far.agree}/{s_far.points} points with gap >= 0.075.",
        "",
        "## 3. Counts and term amplitudes vs d",
        "",
        f"d in {list(plan.scaling_ds)}, {plan.scaling_seeds} seeds. Counts (min-max over seeds):",
        "",
        _md(counts[["a1", "a2", "gap", "d", "measured_min", "measured_max", "predicted",
                    "second_sv", "threshold", "seconds"]]),
        "",
        "Amplitude of each second-step term on its readout polynomial: `A_m = |h_m^T (W2 - W1)|`"
        " with `h_m` the degree-m polynomial of the readout orthonormalised against lower "
        "degrees, minus its noise floor `F_m` in quadrature (`polynomial_amplitudes`); term k "
        "lives on degree m = k + 1. Fitted exponent of `sqrt(A^2 - F^2)` (mean over seeds) "
        "against log p vs the predicted `e_k`:",
        "",
        _md(exps),
        "",
        "## 4. Fresh vs reused batch: a direction of information exponent 2",
        "",
        f"(a1, a2) = {plan.reuse_point} (two outliers predicted beyond the leading one), "
        f"d = {plan.reuse_d}, {plan.reuse_seeds} seeds, unit-variance targets "
        + ", ".join(f"`{k}` = `{v}`" for k, v in REUSE_TARGETS.items())
        + ". `theta_j` columns: `|P theta_j|`, the norm of the projection of `theta_j` on the "
        "span of the outliers' right singular vectors (leading one included); `random`: the "
        "same for a random direction, `sqrt(r/d)`.",
        "",
        _md(reuse),
        "",
        reuse_summary(reuse),
        "",
        "Theory (`asymptotics.spikes.learnable_directions`: `E[g z_j kappa^k] != 0` for some "
        "order k present, `kappa = <m1, z> + rho zeta (+ g/alpha0 if reused)`):",
        "",
        _md(theory),
        "",
    ]
    tay = data["taylor"]
    cols = {"eta1": tay.eta1, "rms eps*kappa": tay.expansion_rms}
    for m in range(1, 5):
        cols[f"A{m} sim"] = tay[f"amp{m}"]
        cols[f"A{m} Taylor"] = tay[f"taylor{m}"]
        cols[f"F{m}"] = tay[f"floor{m}"]
    out += [
        "## 5. The Taylor mechanism, term by term",
        "",
        f"(a1, a2) = {TAYLOR_POINT}, d = {plan.taylor_d}, `eta_tilde_2 = {ETA2:g}`: amplitudes "
        "`A_m = |h_m^T (W2 - W1)|` of the simulation vs the same projection of the Taylor "
        "surrogate `sum_{k<=4} eta_2 (a_j/sqrt p) (E sigma^(k+1)/k!) eps_j^k v_k^T` built on the "
        "simulation's own samples (`taylor_amplitudes`); `F_m`: noise floor of `A_m`; "
        "`rms eps*kappa`: the expansion parameter.",
        "",
        _md(pd.DataFrame(cols)),
        "",
    ]
    out.append(mismatch_notes(grid, max(plan.grid_ds)))
    out += ["", "## Runtime", "",
            _md(pd.DataFrame([dict(experiment=k, simulations=len(v),
                                   seconds_total=float(v.seconds.sum()),
                                   seconds_max=float(v.seconds.max()))
                              for k, v in data.items()])),
            "",
            "Total simulation + analysis time of the rows above: "
            f"{sum(float(v.seconds.sum()) for v in data.values()) / 60:.1f} min (single BLAS "
            "thread, on a machine shared with other jobs, so per-run times vary by up to 5x). "
            f"Wall time of this run (cached parts read from disk): {wall:.0f} s on "
            f"{platform.machine()}, numpy {np.__version__}, niced, 2 shared cores."]
    return "\n".join(out) + "\n"


def mismatch_notes(grid: pd.DataFrame, d: int) -> str:
    """The explanation section, with the measured bulk edges of the grid at size d."""
    t = grid[grid.d == d]
    edges = t.groupby("a2").edge.agg(["min", "max"])
    lo, hi = edges.iloc[0], edges.iloc[-1]
    return MISMATCH_NOTES.format(
        d=d, a2_lo=edges.index[0], a2_hi=edges.index[-1], lo_min=lo["min"], lo_max=lo["max"],
        hi_min=hi["min"], hi_max=hi["max"])


MISMATCH_NOTES = """## Why the finite-d counts deviate

At d = {d} every mismatch is in a cell whose boundary gap is below 0.075, and all but a few
single-seed cases are undercounts; the overcounts (single seeds, and the two far-from-boundary
cells (0.2, 0.4), (0.2, 0.45) at d = 1000) are marginal extra outliers in an inflated bulk.
Counts >= 2 can only be tested near boundaries on this grid (a count of 2 with gap >= 0.075
needs a1 <= 0.35; (0.35, 0.375) in section 3 is such a point and agrees from d = 1000 on). The
reasons:

1. **Near the boundaries** `a2/(1/2 - a1)` integer the marginal term has norm `C_k p^gap` with a
   small gap: at p = 1000, `p^0.05 = 1.4`, so whether it clears the BBP threshold
   (`beta^(1/4) = 0.84` in bulk units for a generic rank-one perturbation) is decided by its
   constant `C_k`, not by its exponent; `p^gap = 3` with gap 0.05 would need p ~ 4e9. On a
   boundary (gap 0) the asymptotic count itself depends on `C_k` (BBP), so `floor` is only one of
   the possible answers there. Rows `a1 >= 0.35` have gaps <= `(1/2 - a1)/2 <= 0.075` in every
   cell, so the whole right part of the diagram is in this regime at any reachable d.
2. **Small constants of the higher terms**: term k carries `E sigma^(k+1)/k!` (-0.168, -0.142,
   0.050, 0.018 for k = 1..4 with `tanh(z + 1/2)`), its left vector `a^(k+1)` overlaps `a^(k-1)`
   (Gaussian readout: `corr(g, g^3) = 0.77`) and its right vector `X^T (r kappa^k)/n` overlaps
   the lower terms' right vectors. Only the part orthogonal to the lower terms makes a new
   outlier, so the predicted counts 3 and 4 (a1 = 0.4) are reached at most in single seeds (3)
   at d = {d}, although the term amplitudes grow with the predicted exponents (section 3).
3. **Taylor regime**: the expansion needs the first step's per-entry perturbation
   `eps_j kappa`, `eps_j = eta_tilde_1 E sigma' p^(a1 - 1/2) g_j`, small. Section 5 compares the
   simulated amplitudes with the Taylor surrogate at (0.4, 0.35), d = 1000: at
   `eta_tilde_1 = 0.5` they agree within ~20% on degrees 2 and 3 once the noise floor is removed
   in quadrature, at `eta_tilde_1 = 1` the surrogate is 2-4 times too large on degrees 2-4 (its
   powers `eps_j^k` blow up on the rows with large `|g_j|` of the Gaussian readout, where
   `sigma'` saturates instead) and at `eta_tilde_1 = 2` it is off by 6-45. A larger
   `eta_tilde_1` therefore does not buy stronger higher terms; `eta_tilde_1 = 1` is a
   compromise between the Taylor regime and visible terms.
4. **Bulk inflation as a2 -> 1/2**: the second step's non-spike part has relative size
   `~ eta_tilde_2 p^(a2 - 1/2)`. At d = {d} the fitted bulk edge is {lo_min:.3f}-{lo_max:.3f} at
   a2 = {a2_lo:g} (MP: 1.707) and {hi_min:.3f}-{hi_max:.3f} at a2 = {a2_hi:g}: weak terms sink
   into the inflated bulk (the undercounts of the a2 = 0.45 column at a1 >= 0.3), and its
   fluctuating edge occasionally lets a singular value through just above the threshold (the
   overcounts, e.g. (0.2, 0.4) at d = 1000 and 4000: an extra value within 0.01 of the
   threshold). Asymptotically this part vanishes, at finite p it does not.

None of these contradicts the asymptotic count: the fitted amplitude exponents (section 3)
follow `e_k` to within 0.13 for k <= 2 (k = 0 runs 0.03-0.06 steeper; k = 3 sits at the noise
floor and is not resolved), and `floor(a2/(1/2 - a1))` is the number of k >= 1 with `e_k > 0`;
what is not reachable by simulation is the constant-free regime `p^(|e_k|) >> 1` near the
boundaries."""


