"""The text of validation/reports/SPECTRA.md, written from the numbers of
:mod:`validation.experiments.spectra` (its verdicts asserted against them)."""

from __future__ import annotations

import math
import pathlib
import platform

import numpy as np
import pandas as pd

from validation.experiments.spectra import (
    ALPHA0,
    BETA,
    ETA1,
    ETA2,
    QUICK,
    REPORTS,
    REUSE_TARGETS,
    SIGMA,
    TAYLOR_POINT,
    Plan,
)
from validation.experiments.spectra_tables import (
    agreement_by_gap,
    counts_vs_d,
    exponent_table,
    grid_table,
    reuse_summary,
    reuse_table,
    reuse_theory,
)


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
            if "at_d" in t and t.at_d.notna().any():
                row[f"a2={r.a2:g}"] = (f"{m}/{int(r.at_d)}/{r.predicted}"
                                       + ("" if r.agree_d else " ✗d")
                                       + ("" if r.agree else " ✗a"))
            else:
                row[f"a2={r.a2:g}"] = f"{m}/{r.predicted}" + ("" if r.agree else " ✗")
        out[f"a1={a1:g}"] = row
    return pd.DataFrame(out).T.reset_index(names="")


def onestep_result(one: pd.DataFrame, check: bool = True) -> str:
    """The conclusion of section 1, written from the numbers; raises AssertionError when the data
    no longer support its verdict (order-1 spike everywhere, nothing beyond order 2)."""
    from asymptotics.coefficients.functions import get_function
    from asymptotics.coefficients.quadrature import gauss_hermite

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
    from validation.experiments.spectra_weights import twostep as spectra_twostep

    grid = grid_table(data["grid"], None if plan is QUICK else spectra_twostep.load())
    has_d = bool(grid.at_d.notna().any())
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
        "`~p^(e_k)`, `e_k = a2 - k(1/2 - a1)` (`asymptotics/multiindex/spikes.py`). "
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
        "point (common random numbers). "
        + ("Cells: measured (range over seeds) / predicted at the simulated d / asymptotic "
           "(Moniri & Hassani's count); ✗d and ✗a mark a mismatch in any seed with the count at d "
           "and with the asymptotic count. " if has_d else
           "Cells: measured (range over seeds) / predicted; ✗ marks a mismatch in any seed. ")
        + "The boundary gap `min_k |a2 - k(1/2 - a1)|` is the exponent "
        "of the marginal term: it is separated from the bulk by a factor `p^gap` only.",
        "",
    ]
    if has_d:
        out += [at_d_text(), ""]
    for d in plan.grid_ds:
        out += [f"**d = {d}** (p = {int(round(BETA * d))})", "", _md(_grid_matrix(grid, d)), ""]
    out += [
        ("Agreement (measured == predicted in every seed: `agree` the asymptotic count, "
         "`agree_at_d` the count at d), by boundary gap:" if has_d else
         "Agreement (measured == predicted in every seed), by boundary gap:"),
        "",
        _md(share),
        "",
        f"At the largest d ({d_max}) the counts agree at {s_max.agree}/{s_max.points} grid "
        f"points overall and at {s_far.agree}/{s_far.points} points with gap >= 0.075.",
        "",
    ]
    if has_d:
        out += [at_d_result(grid, share), "",
                at_d_locations(data["grid"], spectra_twostep.load()), ""]
    out += [
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
        "Theory (`asymptotics.multiindex.spikes.learnable_directions`: `E[g z_j kappa^k] != 0` "
        "for some order k present, `kappa = <m1, z> + rho zeta (+ g/alpha0 if reused)`):",
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
boundaries. The count at the simulated d of section 2 (docs/THEORY.md §16.7) carries all four
effects: the BBP threshold at the simulated p (1), the overlaps of the left vectors and the
batch noise that gives each order its own right vector (2), the exact `h_g` in place of the
Taylor terms (3) and the rows' inflated variances (4)."""




def at_d_text() -> str:
    """How the count at the simulated d is predicted (docs/THEORY.md §16.7)."""
    return (
        "**The count at the simulated d** (`asymptotics.spectra.twostep.two_step_weights`, "
        "docs/THEORY.md §16.7; `python -m validation.experiments.spectra_weights.twostep` writes "
        "`validation/reports/data/spectra_grid_theory.csv`): given the readout g, every row of "
        "`W2` is a common vector `R(g) = eps1 E sigma' g u + eps2 g (1/n) sum e h_g(kappa) x` "
        "(`h_g(kappa) = E_zeta sigma'(s(g) zeta + eps1 E sigma' g kappa)`, the whole Taylor "
        "series of the second step in the first step's shift) plus an isotropic part of variance "
        "`c(g)` (the rescaled `W0` row and both batches' noise). So `W2 = D^(1/2) G + P Q^T`: a "
        "row-variance Marchenko-Pastur bulk with the rows' variances at the p readouts' expected "
        "order statistics, and a finite-rank perturbation whose right vectors carry, besides "
        "their means in span(theta, u), the batch noise `(d/n) E[e^2 h_g h_g']`, distinct for "
        "each order of g (what lets several outliers out). The outliers solve the "
        "Benaych-Georges-Nadakuditi equation; the count is the number of predicted singular "
        "values above the predicted edge plus two fitted spacings (the measurement's own rule, "
        "applied to the predicted quantiles), minus the leading one.")


def at_d_result(grid: pd.DataFrame, share: pd.DataFrame) -> str:
    """The agreement of the count at d, written from the numbers."""
    parts = []
    for d, t in grid.groupby("d"):
        al = share[(share.d == d) & (share.gap == "all")].iloc[0]
        bd = share[(share.d == d) & (share.gap == "gap < 0.025 (on a boundary)")].iloc[0]
        inr = int(((t.measured_min <= t.at_d) & (t.at_d <= t.measured_max)).sum())
        parts.append(
            f"d = {d}: {int(al.agree_at_d)}/{int(al.points)} cells agree with the count at d in "
            f"every seed ({inr} within the seeds' range; under {int(al.under_at_d)}, over "
            f"{int(al.over_at_d)}), against {int(al.agree)} for the asymptotic count; on a "
            f"boundary (gap < 0.025) {int(bd.agree_at_d)}/{int(bd.points)} against "
            f"{int(bd.agree)}")
    return "**Count at the simulated d.** " + "; ".join(parts) + "."


def at_d_locations(runs: pd.DataFrame, at_d: pd.DataFrame) -> str:
    """The predicted singular values and theta overlaps against every simulated run (one row
    per (d, a1, a2, seed) of the grid), written from the numbers."""
    key = ["d", "a1", "a2"]
    m = runs.assign(**{k: runs[k].round(10) for k in key[1:]}).merge(
        at_d.assign(**{k: at_d[k].round(10) for k in key[1:]}), on=key,
        suffixes=("_sim", "_th"))
    rel1 = (m.sv1_sim / m.sv1_th - 1.0).abs()
    dth = (m.ov1_theta1 ** 2 - m.theta1).abs()
    nxt = []
    for k in (2, 3, 4):
        if f"sv{k}_sim" in m and f"sv{k}_th" in m:
            both = m[m[f"sv{k}_sim"].notna() & m[f"sv{k}_th"].notna()
                     & (m[f"sv{k}_th"] > m["threshold_th"])]
            nxt.append((both[f"sv{k}_sim"] / both[f"sv{k}_th"] - 1.0).abs())
    nxt = pd.concat(nxt) if nxt else pd.Series(dtype=float)
    return (f"**Locations at the simulated d.** Over the {len(m)} simulated runs of the grid: "
            f"the leading singular value within {100 * rel1.median():.1f}% of the predicted one "
            f"(median; largest {100 * rel1.max():.1f}%), the squared overlap of its right vector "
            f"with theta within {dth.median():.3f} (median; largest {dth.max():.3f}; predicted "
            f"{m.theta1.min():.2f}-{m.theta1.max():.2f}); the next outliers, where one is "
            f"predicted above the threshold and one is measured ({len(nxt)} pairs, in order), "
            f"within {100 * nxt.median():.1f}% (median; largest {100 * nxt.max():.1f}%).")
