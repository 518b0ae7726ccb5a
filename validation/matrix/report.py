"""``validation/REPORT.md`` from the matrix store: theory vs simulation, with statistics.

For every (setting, model, d, alpha, lam): the theory risk, the simulation mean over
repetitions, its standard error, ``z = (sim - theory)/se`` and the relative gap. The ``srf``
model is what the equations describe, so every ``|z| > 3`` there is listed as a miss to explain;
``network`` adds the error of the sRF mapping at finite d, followed over d for a few settings.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from .campaign import (  # noqa: F401  (aggregate, naive_spike: re-exported)
    ALPHAS,
    LAMS,
    aggregate,
    matrix_settings,
    naive_spike,
    read_store,
    scaling_settings,
)
from .notes import Context, render

FIG_DIR = Path("validation/figures")
SCALING_KEYS = {ms.key for ms, _, _ in scaling_settings()}


def _fmt(v: float, nd: int = 4) -> str:
    return "nan" if not np.isfinite(v) else f"{v:.{nd}f}"


def _figures(main, agg) -> list[Path]:
    from matplotlib.figure import Figure

    FIG_DIR.mkdir(parents=True, exist_ok=True)
    paths = []
    d = int(main["d"].iloc[0])
    colors = {"srf": "#0072B2", "network": "#D55E00", "rf": "#009E73"}
    fig = Figure(figsize=(10, 4), constrained_layout=True)
    axes = fig.subplots(1, 2)
    for model, sub in main.groupby("model"):
        axes[0].errorbar(sub["theory"], sub["sim_mean"], yerr=sub["sim_se"], fmt="o", ms=3,
                         alpha=0.7, color=colors[model], label=model)
    vals = main[["theory", "sim_mean"]].to_numpy()
    lim = [float(np.nanmin(vals)) * 0.8, float(np.nanmax(vals)) * 1.25]
    axes[0].plot(lim, lim, "k-", lw=0.8)
    axes[0].set_xscale("log")
    axes[0].set_yscale("log")
    axes[0].set_xlabel("theory risk")
    axes[0].set_ylabel("simulated risk (± s.e.)")
    axes[0].set_title(f"all matrix points, d = {d}")
    axes[0].legend(frameon=False)
    bins = np.linspace(-6, 6, 49)
    for model, sub in main.groupby("model"):
        axes[1].hist(np.clip(sub["z"], -6, 6), bins=bins, histtype="step", lw=1.5,
                     color=colors[model], label=f"{model} ({len(sub)} points)", density=True)
    zz = np.linspace(-6, 6, 200)
    axes[1].plot(zz, np.exp(-zz**2 / 2) / math.sqrt(2 * math.pi), "k--", lw=0.8, label="N(0,1)")
    axes[1].set_xlabel("z = (sim − theory) / s.e.  (clipped at ±6)")
    axes[1].legend(frameon=False, fontsize=8)
    path = FIG_DIR / f"matrix_overview_d{d}.png"
    fig.savefig(path, dpi=130, metadata={"Software": None})
    paths.append(path)

    scal = agg[agg["key"].isin(SCALING_KEYS)]
    if len(scal):
        fig = Figure(figsize=(9, 4.5), constrained_layout=True)
        ax = fig.subplots()
        styles = dict(zip(sorted(scal["key"].unique()), ["-", "--", "-.", ":", "-"], strict=False))
        for (key, model), sub in scal.groupby(["key", "model"]):
            s = sub.assign(abs_gap=(sub["sim_mean"] - sub["theory"]).abs()).groupby("d")
            gap = s["abs_gap"].mean()
            se = s["sim_se"].mean()
            ax.errorbar(gap.index, gap.to_numpy(), yerr=se.to_numpy(), marker="o", ms=4,
                        capsize=2, color=colors[model],
                        ls=styles[key], label=f"{model}: {key}")
        dd = np.array(sorted(scal["d"].unique()), dtype=float)
        ax.plot(dd, 0.05 * dd[0] ** 0.5 / dd**0.5 * 0.2, "k:", lw=0.8, label=r"$\propto d^{-1/2}$")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("d")
        ax.set_ylabel("|sim − theory| (mean over α, λ)")
        ax.legend(frameon=False, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        path = FIG_DIR / f"matrix_scaling_d{d}.png"
        fig.savefig(path, dpi=130, metadata={"Software": None})
        paths.append(path)
    return paths


def write_report(store_path: Path, out: Path, *, d: int = 2000, seeds: int = 8) -> None:
    """Aggregate the store, solve the theory, write the markdown report and its figures.

    Statistics use the first ``seeds`` repetitions of every setting (the planned ones); the
    confirmation repetitions (indices >= ``seeds``) are reported separately for the misses."""
    t0 = time.perf_counter()
    store = read_store(store_path)
    if store.empty:
        raise ValueError(f"the store {store_path} is empty; run `python -m validation.matrix run`")
    agg = aggregate(store, first_reps=seeds)
    pooled = aggregate(store)  # every repetition in the store
    notes_text = notes(store, agg, d, seeds, pooled)  # before any file is written: claims hold
    confirm = store[(store["rep"] >= seeds) & (store["d"] == d)]
    confirm = aggregate(confirm) if len(confirm) else None
    agg.to_csv(store_path.with_name("matrix_summary.csv"), index=False, float_format="%.8g")
    keys = {ms.key for ms in matrix_settings()}
    main = agg[(agg["d"] == d) & agg["key"].isin(keys)]
    figs = _figures(main, agg)
    n_settings = main.drop_duplicates(["key"]).shape[0]
    lines = ["# Validation report: theory vs Monte Carlo", "",
             "Generated by `python -m validation.matrix run` (simulations, resumable) then "
             "`python -m validation.matrix report` (this file). Raw per-repetition risks: "
             f"`{store_path}`; aggregated: `{store_path.with_name('matrix_summary.csv')}`.", "",
             f"- {n_settings} settings at d = {d}: sigma x g x beta x alpha0 x eta_tilde from "
             "`validation.matrix.campaign.matrix_settings()`, each simulated along alpha = "
             f"{', '.join(map(str, ALPHAS))} and lambda = {', '.join(map(str, LAMS))} "
             "(one first layer and test set per repetition, nested ridge batches).",
             f"- {len(store)} simulated points in the store; CPU time "
             f"{store.drop_duplicates(['key', 'model', 'd', 'rep'])['seconds'].sum() / 3600:.2f}"
             " core-hours.", ""]
    full = pooled[pooled["d"] == d]
    lines += _precision_section(full[full["key"].isin(keys)], store, d)
    lines += ["## Summary (planned repetitions)", "",
              f"The first {seeds} repetitions of every setting, chosen before any result was "
              "seen; the z of the misses below and of the scans are computed on these.", "",
              "| model | points | median seeds | median s.e. | max s.e. | "
              "share |z| <= 3 | median |rel gap| | max |rel gap| |",
              "|---|---|---|---|---|---|---|---|"]
    for model, sub in main.groupby("model"):
        lines.append(
            f"| {model} | {len(sub)} | {int(sub['seeds'].median())} | "
            f"{sub['sim_se'].median():.2e} | {sub['sim_se'].max():.2e} | "
            f"{(sub['z'].abs() <= 3).mean():.1%} | {sub['rel_gap'].abs().median():.2%} | "
            f"{sub['rel_gap'].abs().max():.2%} |")
    lines += ["", f"![overview](figures/matrix_overview_d{d}.png)", ""]
    lines += _misses_section(main, confirm, seeds, notes_text)
    lines += _network_section(full[full["key"].isin(keys)], pooled, store)
    lines += _mu0_section(main)
    lines += _scaling_section(agg, d)
    lines += _full_table(main)
    lines += ["", f"_Report written in {time.perf_counter() - t0:.0f} s; figures: "
              + ", ".join(str(p) for p in figs) + "._"]
    out.write_text("\n".join(lines) + "\n")


def _precision_section(full, store, d: int, target: float = 2e-3) -> list[str]:
    """The validation target is s.e. <= 2e-3: where it is reached with every repetition in the store
    (planned, confirmation and precision rounds pooled), what z says at that precision, and the
    seeds the observed spread says the other points need (``ceil((sd / target)^2)``)."""
    reps = store[store["d"] == d].drop_duplicates(["key", "model", "rep"])
    counts = reps["estimator"].value_counts()
    need = np.ceil((full["sim_sd"] / target) ** 2)
    lines = ["## Precision", "",
             f"d = {d}, every repetition in the store pooled: "
             + ", ".join(f"{int(n)} with the `{e}` test-error estimator" for e, n in counts.items())
             + " (`validation.protocol.estimators`: both estimate the test error of the same "
             "trained network, `cv` with control variates of known mean, so they pool; the s.e. "
             "of a mean of values of unequal noise is still sd/sqrt(n)). The validation target is "
             f"s.e. ≤ {target:g} at every point. `python -m validation.matrix run --target-se "
             f"{target:g}` adds repetitions, cheapest settings first, until it holds; where it is "
             "not reached, the pooled spread says how many repetitions it would take "
             f"(`ceil((sd / {target:g})^2)`). The z column uses the pooled mean and s.e.", "",
             f"| model | target g | points | median seeds | s.e. ≤ {target:g} | share |z| ≤ 3 | "
             "median seeds needed | max seeds needed | median s.e./risk |",
             "|---|---|---|---|---|---|---|---|---|"]
    for (model, is_he2), sub in full.groupby(["model", full["target"] == "he2"]):
        nd = need[sub.index]
        lines.append(f"| {model} | {'he2' if is_he2 else 'tanh, sin, relu'} | {len(sub)} | "
                     f"{int(sub['seeds'].median())} | {(sub['sim_se'] <= target).mean():.0%} | "
                     f"{(sub['z'].abs() <= 3).mean():.0%} | {int(nd.median())} | "
                     f"{int(nd.max())} | {(sub['sim_se'] / sub['sim_mean'].abs()).median():.2%} |")
    by_target = full.assign(need=need).groupby("target").agg(
        sd=("sim_sd", "median"), need=("need", "median"), risk=("sim_mean", "median"))
    lines += ["", "By target (all models): median per-repetition sd, median seeds needed, "
              "median risk — " + "; ".join(
                  f"{t}: sd {r.sd:.1e}, {int(r.need)} seeds, risk {r.risk:.3f}"
                  for t, r in by_target.iterrows()) + ".", ""]
    done = full[(full["model"] != "network") & (full["sim_se"] <= target)]
    miss = done[done["z"].abs() > 3].sort_values("z", key=np.abs, ascending=False)
    lines += [f"srf/rf points at s.e. ≤ {target:g}: {len(done)}, of which {len(miss)} with "
              "|z| > 3" + (":" if len(miss) else "."), ""]
    if len(miss):
        lines += ["| setting | model | alpha | lambda | seeds | theory | sim ± s.e. | z | "
                  "rel gap |", "|---|---|---|---|---|---|---|---|---|"]
        lines += [f"| {r.key} | {r.model} | {r.alpha:g} | {r.lam:g} | {r.seeds} | "
                  f"{_fmt(r.theory)} | {_fmt(r.sim_mean)} ± {_fmt(r.sim_se)} | {r.z:+.1f} | "
                  f"{r.rel_gap:+.2%} |" for r in miss.itertuples()]
        lines.append("")
    return lines


def notes_path(d: int) -> Path:
    """The notes template of the report at ``d`` (:mod:`validation.matrix.notes`)."""
    return Path(__file__).resolve().parents[1] / f"report_notes_d{int(d)}.md"


def notes(store, agg, d: int, seeds: int, pooled=None) -> str | None:
    """The investigation notes at ``d`` rendered from the store (every number computed, every
    claim checked: :mod:`validation.matrix.notes`), or None if there are none."""
    path = notes_path(d)
    if not path.exists():
        return None
    return render(path.read_text(), Context(store, agg, d, seeds, pooled).namespace(),
                  source=str(path.name)).strip()


def _misses_section(main, confirm, seeds: int, notes_text: str | None = None) -> list[str]:
    from scipy import stats

    srf = main[main["model"] != "network"]
    miss = srf[srf["z"].abs() > 3].sort_values("z", key=np.abs, ascending=False)
    chance = 2 * stats.t.sf(3, seeds - 1) * len(srf)
    lines = ["## srf and rf misses (|z| > 3)", "",
             f"{len(miss)} of {len(srf)} srf/rf points are outside 3 s.e. of the theory. With "
             f"{seeds} seeds z follows a Student t with {seeds - 1} degrees of freedom, so "
             f"{chance:.1f} such points are expected by chance alone. Every setting with a miss "
             "was re-simulated with fresh seeds (confirmation columns: repetitions not used "
             "to select it).", ""]
    if len(miss):
        lines += ["| setting | model | alpha | lambda | theory | sim ± s.e. | z | rel gap | "
                  "confirmation sim ± s.e. (seeds) | confirmation z |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for r in miss.itertuples():
            c = None
            if confirm is not None:
                hit = confirm[(confirm["key"] == r.key) & (confirm["model"] == r.model)
                              & np.isclose(confirm["alpha"], r.alpha)
                              & np.isclose(confirm["lam"], r.lam)]
                c = hit.iloc[0] if len(hit) else None
            ctext = "–" if c is None else (f"{_fmt(c['sim_mean'])} ± {_fmt(c['sim_se'])} "
                                           f"({int(c['seeds'])}) | {c['z']:+.1f}")
            if c is None:
                ctext += " | –"
            lines.append(f"| {r.key} | {r.model} | {r.alpha:g} | {r.lam:g} | {_fmt(r.theory)} | "
                         f"{_fmt(r.sim_mean)} ± {_fmt(r.sim_se)} | {r.z:+.1f} | "
                         f"{r.rel_gap:+.2%} | {ctext} |")
    if notes_text:  # the investigation: prose around numbers computed from the store
        lines += ["", notes_text]
    return lines + [""]


HE2_TREND = "relu/he2 beta=2 alpha0=20 eta=3"


def _network_section(main, pooled, store) -> list[str]:
    """The trained network against the network theory (model="network" at p = beta d) and against
    the sRF theory, by first-batch size; then the relu/he2 gap over d with its fitted rate."""
    net = main[main["model"] == "network"]
    lines = ["## The trained network against the network theory", ""]
    if not len(net):
        return lines + ["(no network points in the store)", ""]
    d = int(net["d"].iloc[0])
    pair = net["sigma"] + "/" + net["target"]
    lines += [f"d = {d}, every repetition in the store pooled. `theory` is "
              "`risk(..., model=\"network\", p=beta*d)` (the population measure of the "
              "trained first layer, docs/DERIVATIONS.md §7-8); `sRF` the spiked-random-"
              "features equations that the network was compared with before. relu/he2 is "
              "listed apart: its gap is a finite-d effect followed over d below.", "",
              "| points | theory | share |z| <= 3 | median |rel gap| | max |rel gap| |",
              "|---|---|---|---|---|"]

    def row(sub, label, z, th) -> str:
        rel = ((sub["sim_mean"] - sub[th]) / sub[th]).abs()
        return (f"| {label} | {th.replace('theory_srf', 'sRF').replace('theory', 'network')} | "
                f"{(sub[z].abs() <= 3).mean():.1%} | {rel.median():.2%} | {rel.max():.2%} |")

    core = net[pair != "relu/he2"]
    for label, sub in ((f"all but relu/he2 ({len(core)})", core),
                       *((f"alpha0 = {a0:g} ({len(s)})", s) for a0, s in core.groupby("alpha0")),
                       (f"relu/he2 ({int((pair == 'relu/he2').sum())})", net[pair == "relu/he2"])):
        if len(sub):
            lines += [row(sub, label, "z", "theory"), row(sub, label, "z_srf", "theory_srf")]
    worst = core.assign(abs_gap=core["rel_gap"].abs()).sort_values("abs_gap", ascending=False)
    lines += ["", "Largest gaps to the network theory (all but relu/he2):", "",
              "| setting | alpha | lambda | theory | sim ± s.e. | z | rel gap |",
              "|---|---|---|---|---|---|---|"]
    lines += [f"| {r.key} | {r.alpha:g} | {r.lam:g} | {_fmt(r.theory)} | {_fmt(r.sim_mean)} ± "
              f"{_fmt(r.sim_se)} | {r.z:+.1f} | {r.rel_gap:+.2%} |"
              for r in worst.head(8).itertuples()]
    lines += [""] + _he2_trend(pooled, store)
    return lines


def he2_trend(agg, store):
    """Per d: the gap of the relu/he2 network (HE2_TREND) to the network theory, (sim - theory) /
    theory averaged over the alpha x lambda points of each repetition, then mean and s.e. over the
    repetitions (points of one repetition share a network, so they are not independent); and the
    fitted power law |gap| ~ C d^-k (least squares in log-log, weights 1/s.e. of log |gap|, over
    the d with at least two repetitions; None with fewer than three such d or a gap of either
    sign)."""
    import pandas as pd

    a = agg[(agg["key"] == HE2_TREND) & (agg["model"] == "network")]
    theory = {(int(r.d), r.alpha, r.lam): r.theory for r in a.itertuples()}
    runs = store[(store["key"] == HE2_TREND) & (store["model"] == "network")]
    rows = []
    for dim, s in runs.groupby("d"):
        th = np.array([theory[(int(dim), al, lam)] for al, lam in zip(s["alpha"], s["lam"],
                                                                      strict=True)])
        per_rep = ((s["risk"].to_numpy() - th) / th)
        per_rep = pd.Series(per_rep, index=s.index).groupby(s["rep"]).mean()
        n = len(per_rep)
        rows.append(dict(d=int(dim), points=int(s.groupby(["alpha", "lam"]).ngroups), seeds=n,
                         mean_rel_gap=float(per_rep.mean()),
                         se=float(per_rep.std(ddof=1) / np.sqrt(n)) if n > 1 else math.nan))
    tab = pd.DataFrame(rows, columns=["d", "points", "seeds", "mean_rel_gap", "se"])
    rate = None
    fit = tab[(tab["seeds"] >= 2) & np.isfinite(tab["se"])]
    if len(fit) >= 3 and (fit["mean_rel_gap"] < 0).all():
        x, y = np.log(fit["d"].to_numpy(float)), np.log(-fit["mean_rel_gap"].to_numpy())
        w = (fit["mean_rel_gap"].abs() / fit["se"]).to_numpy()  # 1 / s.e. of log |gap|
        slope, _ = np.polyfit(x, y, 1, w=w)
        rate = -float(slope)
    return tab, rate


def _he2_trend(agg, store) -> list[str]:
    tab, rate = he2_trend(agg, store)
    lines = [f"### relu/he2 over d ({HE2_TREND}, network)", ""]
    if not len(tab):
        return lines + ["(no runs in the store)", ""]
    lines += ["With g = He2 and relu the trained network does better than the d = infinity "
              "network theory at d of a few thousand; the gap shrinks with d (a finite-d effect "
              "beyond conditional Gaussian equivalence, docs/DERIVATIONS.md §7). Mean signed "
              "relative gap over the alpha x lambda points, mean ± s.e. over the repetitions:", "",
              "| d | points | seeds | mean (sim − theory)/theory ± s.e. |", "|---|---|---|---|"]
    lines += [f"| {r.d} | {r.points} | {r.seeds} | {r.mean_rel_gap:+.1%} ± "
              + (f"{r.se:.1%} |" if np.isfinite(r.se) else "– (one repetition) |")
              for r in tab.itertuples()]
    if rate is not None:
        lines += ["", f"Fitted |gap| ~ d^-{rate:.2f} (weighted least squares in log-log over "
                  f"d = {', '.join(str(r.d) for r in tab.itertuples() if r.seeds >= 2)}; "
                  "the d with two or more repetitions)."]
    return lines + [""]


def _mu0_section(main) -> list[str]:
    net = main[(main["model"] == "network") & (main["sigma"] == "relu")]
    lines = ["## mu0 != 0 (relu): the residual at initialisation", "",
             "With E sigma(z) = mu0 != 0 the network output at initialisation is mu0 + O(p^-1/2), "
             "so the step sees the residual e = y - mu0, not y. `asymptotics.srf_mapping` uses "
             "it (r from E e^2, a rescaling s = 1 + eta c1 E e of W0 from the isotropic part, "
             "c = s^2 + eta^2 s2 E e^2 / alpha0; docs/DERIVATIONS.md §1). Below, the relu network "
             "simulations against that theory and against THEORY.md §3 verbatim (residual = y).",
             ""]
    if not len(net):
        return lines + ["(no relu network points in the store)", ""]
    lines += ["| targets | mapping | points | median |z| | share |z| <= 3 | median |rel gap| |",
              "|---|---|---|---|---|---|"]
    groups = (("odd g (tanh, sin)", net[net["target"].isin(["tanh", "sin"])]),
              ("g with a He2 part (relu, he2)", net[net["target"].isin(["relu", "he2"])]))
    for gname, sub in groups:
        for label, z, th in (("mu0-aware (asymptotics.srf_mapping)", "z_srf", "theory_srf"),
                             ("THEORY §3 verbatim (residual = y)", "z_naive", "theory_naive")):
            rel = ((sub["sim_mean"] - sub[th]) / sub[th]).abs()
            lines.append(f"| {gname} | {label} | {len(sub)} | {sub[z].abs().median():.1f} | "
                         f"{(sub[z].abs() <= 3).mean():.1%} | {rel.median():.2%} |")
    return lines + [""]


def _scaling_section(agg, d: int) -> list[str]:
    multi = agg[agg["key"].isin(SCALING_KEYS)]
    lines = ["## Network vs theory as d grows", ""]
    if not len(multi):
        return lines + ["(no d-scaling runs in the store)", ""]
    lines += ["Mean over the alpha x lambda points of each setting.", "",
              "| setting | model | d | seeds | mean (sim − theory) | mean |sim − theory| | "
              "mean s.e. |", "|---|---|---|---|---|---|---|"]
    for (key, model, dim), sub in multi.groupby(["key", "model", "d"]):
        diff = sub["sim_mean"] - sub["theory"]
        lines.append(f"| {key} | {model} | {dim} | {int(sub['seeds'].median())} | "
                     f"{diff.mean():+.2e} | {diff.abs().mean():.2e} | "
                     f"{sub['sim_se'].mean():.2e} |")
    return lines + ["", f"![scaling](figures/matrix_scaling_d{d}.png)", ""]


def _full_table(main) -> list[str]:
    lines = ["## All points", "", "| setting | model | alpha | lambda | seeds | theory | "
             "sim ± s.e. | z | rel gap |", "|---|---|---|---|---|---|---|---|---|"]
    for r in main.sort_values(["key", "model", "lam", "alpha"]).itertuples():
        lines.append(f"| {r.key} | {r.model} | {r.alpha:g} | {r.lam:g} | {r.seeds} | "
                     f"{_fmt(r.theory)} | {_fmt(r.sim_mean)} ± {_fmt(r.sim_se)} | "
                     f"{r.z:+.1f} | {r.rel_gap:+.2%} |")
    return lines
