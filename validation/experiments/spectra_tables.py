"""The analysis tables of the spectra experiments (:mod:`validation.experiments.spectra`): the
phase-diagram grid against the predicted outlier count, agreement by boundary gap, the signal
share and fitted exponents over d, and the batch-reuse tables with their theory
(``learnable_directions``, docs/THEORY.md §8)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from asymptotics.multiindex.spikes import (
    boundary_gap,
    learnable_directions,
    two_step_ratio,
    two_step_term_exponents,
)
from validation.experiments.spectra import ALPHA0, REUSE_TARGETS


def grid_table(df: pd.DataFrame, at_d: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per (d, a1, a2): mean/min/max measured count over seeds, predicted count (asymptotic),
    ratio, gap, and the count predicted at the simulated d (:func:`with_predicted_at_d`)."""
    g = df.groupby(["d", "a1", "a2"], sort=True)
    out = g.agg(measured_mean=("measured", "mean"), measured_min=("measured", "min"),
                measured_max=("measured", "max"), seeds=("measured", "size"),
                predicted=("predicted", "first"), edge=("edge", "mean"),
                seconds=("seconds", "mean")).reset_index()
    out["ratio"] = [two_step_ratio(a, b) for a, b in zip(out.a1, out.a2, strict=True)]
    out["gap"] = [round(boundary_gap(a, b), 10) for a, b in zip(out.a1, out.a2, strict=True)]
    out["agree"] = (out.measured_min == out.predicted) & (out.measured_max == out.predicted)
    return with_predicted_at_d(out, at_d)


def with_predicted_at_d(table: pd.DataFrame, at_d: pd.DataFrame | None) -> pd.DataFrame:
    """The count predicted at the simulated d (``at_d``: the rows of
    :mod:`validation.experiments.spectra_weights.twostep`, columns d, a1, a2, predicted_at_d,
    sv1..) as ``at_d``, with ``agree_d`` (every seed equal to it); NaN where not predicted."""
    out = table.copy()
    if at_d is None or not len(at_d):
        out["at_d"] = np.nan
        out["agree_d"] = False
        return out
    key = at_d.set_index(["d", "a1", "a2"])
    idx = list(zip(out.d, out.a1.round(10), out.a2.round(10), strict=True))
    key.index = pd.MultiIndex.from_tuples([(int(d), round(a, 10), round(b, 10))
                                           for d, a, b in key.index])
    out["at_d"] = [key.predicted_at_d.get((int(d), a, b), np.nan) for d, a, b in idx]
    out["agree_d"] = (out.measured_min == out.at_d) & (out.measured_max == out.at_d)
    return out


GAP_CLASSES = ((0.0, 0.025, "gap < 0.025 (on a boundary)"), (0.025, 0.075, "0.025 <= gap < 0.075"),
               (0.075, 1.0, "gap >= 0.075"))


def agreement_by_gap(table: pd.DataFrame) -> pd.DataFrame:
    """Share of grid points (every seed) with measured == predicted, by boundary gap class."""
    rows = []
    for d, t in table.groupby("d"):
        for lo, hi, label in GAP_CLASSES:
            s = t[(t.gap >= lo - 1e-12) & (t.gap < hi - 1e-12)]
            rows.append(dict(d=d, gap=label, **_shares(s)))
        rows.append(dict(d=d, gap="all", **_shares(t)))
    return pd.DataFrame(rows)


def _shares(s: pd.DataFrame) -> dict:
    out = dict(points=len(s), agree=int(s.agree.sum()),
               under=int((s.measured_mean < s.predicted).sum()),
               over=int((s.measured_mean > s.predicted).sum()))
    if "at_d" in s and s.at_d.notna().any():
        out.update(agree_at_d=int(s.agree_d.sum()),
                   under_at_d=int((s.measured_mean < s.at_d).sum()),
                   over_at_d=int((s.measured_mean > s.at_d).sum()))
    return out


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


