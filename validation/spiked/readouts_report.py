"""The report of the finite-support readout campaign (:mod:`validation.spiked.readouts`):
every simulated point against ``asymptotics.risk_readout`` at p = infinity and at the simulated p
(THEORY.md §11, §10.6), the paired pm1 - constant differences, the d-scan, and the discussion
rendered from ``validation/reports/readouts_notes.md``
(:func:`validation.campaign.template.render`):
``READOUTS.md``, a function of the runs' CSV."""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path

import numpy as np

from .readouts import MODELS, READOUTS, REPORT, SETTINGS, STORE, D, load


def add_theory(points, finite_p: bool = False, progress: bool | None = None):
    """``theory`` (p = infinity) or ``theory_p`` (the finite-width closure of THEORY.md §10.6 at
    the simulated p) at every (setting, readout, alpha) of ``points`` (:func:`risk_readout`).
    ``progress``: a report per point on stderr (False: none)."""
    from asymptotics.core.progress import Progress
    from asymptotics.spiked.readouts import risk_readout

    cache: dict = {}
    out = []
    desc = "readout theory" + (" at p" if finite_p else "")
    with Progress(len(points), desc, unit="points", enabled=progress) as bar:
        for row in bar.iter(points.itertuples(index=False)):
            p = int(round(row.beta * row.d)) if finite_p else None
            key = (row.sigma, row.target, row.eta, row.alpha0, row.lam, row.beta, row.readout,
                   row.alpha, p)
            if key not in cache:
                cache[key] = risk_readout(row.alpha, readout=row.readout, sigma=row.sigma,
                                          target=row.target, alpha0=row.alpha0, eta=row.eta,
                                          lam=row.lam, beta=row.beta, p=p).risk
            out.append(cache[key])
    points = points.copy()
    points["theory_p" if finite_p else "theory"] = out
    return points


def summarize(runs, progress: bool | None = None):
    """One row per (setting, model, readout, d, alpha): seeds, mean, s.e., theory, z, gap
    (``progress``: the theory's progress on stderr)."""
    keys = ["name", "model", "readout", "sigma", "target", "eta", "alpha0", "lam", "beta", "d",
            "alpha"]
    g = runs.groupby(keys, sort=False).risk
    pts = g.agg(seeds="size", mean="mean", sd="std").reset_index()
    pts["se"] = pts.sd / np.sqrt(pts.seeds)
    pts = add_theory(pts, progress=progress)
    pts["z"] = (pts["mean"] - pts.theory) / pts.se
    pts["gap"] = (pts["mean"] - pts.theory) / pts.theory
    pts = add_theory(pts, finite_p=True, progress=progress)
    pts["z_p"] = (pts["mean"] - pts.theory_p) / pts.se
    return pts


#: the theory cache of NETWORK_STEPS.md (``python -m validation.experiments.network_steps_report``)
NETWORK_CACHE = REPORT.parent / "data" / "network_steps_points_theory.csv"


def _network_key(sigma, target, readout, alpha0, eta, step, alpha, beta, lam, d) -> tuple:
    readout = "pm1" if readout == "hypercube" else str(readout)
    etas = tuple(float(e) for e in str(eta).split(","))
    return (str(sigma), str(target), readout, float(alpha0), etas, int(step), float(alpha),
            float(beta), float(lam), int(d))


@lru_cache(maxsize=1)
def _network_cache() -> dict:
    if not NETWORK_CACHE.is_file():
        return {}
    import pandas as pd

    df = pd.read_csv(NETWORK_CACHE, dtype={"eta": str})
    cols = ["sigma", "target", "readout", "alpha0", "eta", "step", "alpha", "beta", "lam", "d"]
    return {_network_key(*row): float(v)  # the last row of a key wins, as in its writer
            for row, v in zip(df[cols].itertuples(index=False), df["network"], strict=True)}


@lru_cache(maxsize=1024)
def network_risk(sigma: str, target: str, readout: str, alpha0: float, eta: str | float,
                 step: int, alpha: float, beta: float, lam: float, d: int) -> float:
    """The network theory of the trained network after ``step`` giant steps at the simulated
    width ``p = beta d`` (``asymptotics.risk(..., steps=step, readout=...)`` with the default
    ``model="network"``, THEORY.md §8, §15; NaN if not converged): read from the theory cache of
    NETWORK_STEPS.md, :data:`NETWORK_CACHE`, and computed by the same call where it lacks the
    point (``eta``: ``"2,8,16"``, one value per step; ``readout``: ``hypercube`` is ``pm1``)."""
    key = _network_key(sigma, target, readout, alpha0, eta, step, alpha, beta, lam, d)
    if key in _network_cache():
        return _network_cache()[key]
    import asymptotics as A

    etas = key[4][:step]
    res = A.risk(alpha, steps=step, readout=key[2], sigma=sigma, target=target, alpha0=alpha0,
                 eta=etas[0] if step == 1 and "z2" not in target else etas, lam=lam, beta=beta,
                 p=beta * d)
    return res.risk if res.converged else math.nan


def network_theory(points):
    """``theory_net``, ``z_net``, ``gap_net``: the network theory (:func:`network_risk`, one
    step, p = d) at the trained network's rows (NaN at the sRF model's, which it does not
    describe)."""
    points = points.copy()
    points["theory_net"] = [
        network_risk(r.sigma, r.target, r.readout, r.alpha0, r.eta, 1, r.alpha, r.beta, r.lam,
                     r.d) if r.model == "network" else math.nan
        for r in points.itertuples(index=False)]
    points["z_net"] = (points["mean"] - points.theory_net) / points.se
    points["gap_net"] = (points["mean"] - points.theory_net) / points.theory_net
    return points


def paired_differences(runs):
    """pm1 minus constant, per (setting, model, alpha), paired over repetitions (the two readouts
    of one repetition share the weights, the teacher and every sample stream)."""
    import pandas as pd

    keys = ["name", "model", "d", "alpha", "rep"]
    wide = runs.pivot_table(index=keys, columns="readout", values="risk").reset_index()
    wide = wide.dropna(subset=list(READOUTS))
    wide["diff"] = wide["pm1"] - wide["constant"]
    g = wide.groupby(["name", "model", "d", "alpha"], sort=False)["diff"]
    out = g.agg(seeds="size", mean="mean", sd="std").reset_index()
    out["se"] = out.sd / np.sqrt(out.seeds)
    return pd.DataFrame(out)


def _f(x: float, digits: int = 4) -> str:
    return "nan" if not np.isfinite(x) else f"{x:.{digits}f}"


def _d_scan(allpts) -> list[str]:
    """The points simulated at several d: mean ± s.e., the gap to the p = infinity theory and z
    against the finite-width theory at that d (THEORY.md §10.6)."""
    counts = allpts.groupby(["name", "readout", "model"]).d.nunique()
    keys = counts[counts > 1].index
    if len(keys) == 0:
        return []
    ds = sorted(allpts.d.unique())
    lines = ["", "## Dependence on d", "",
             "Network (and, where simulated, sRF) points at several d, p = d: mean ± s.e. "
             "(relative gap to the p = infinity theory; z against the theory at that p). A gap "
             "that shrinks like 1/d is a finite-size effect; one that stays is structural.", "",
             "| setting | readout | model | alpha | theory | "
             + " | ".join(f"d = {d}" for d in ds) + " |",
             "|---|---|---|---|---|" + "---|" * len(ds)]
    for name, readout, model in keys:
        sub = allpts[(allpts.name == name) & (allpts.readout == readout)
                     & (allpts.model == model)]
        for alpha, grp in sub.groupby("alpha"):
            cells = []
            for d in ds:
                r = grp[grp.d == d]
                cells.append("-" if r.empty else
                             f"{_f(r['mean'].iloc[0])} ± {_f(r.se.iloc[0])} "
                             f"({100 * r.gap.iloc[0]:+.1f}%, {r.z_p.iloc[0]:+.1f})")
            lines.append(f"| {name} | {readout} | {model} | {alpha:g} | "
                         f"{_f(grp.theory.iloc[0])} | " + " | ".join(cells) + " |")
    return lines


def notes_names(runs, allpts) -> dict:
    """What the discussion's placeholders and claims can use
    (:func:`validation.campaign.template.render`):
    ``pts`` (the points at :data:`D`), ``allpts`` (every d), ``diffs`` (pm1 - constant, paired,
    with the theory's difference ``theory`` and ``z``), ``P(name, readout, model, alpha, d)``
    (one point), ``sub(name=..., readout=..., model=..., d=...)`` (a selection) and the
    formatting helpers of :mod:`validation.matrix.notes`."""
    from ..campaign.template import num, pct, signed, span

    pts = allpts[allpts.d == D]
    diffs = paired_differences(runs[runs.d == D])
    th = pts.pivot_table(index=["name", "alpha"], columns="readout", values="theory",
                         aggfunc="first")
    diffs["theory"] = [float(th.loc[(n, a), "pm1"] - th.loc[(n, a), "constant"])
                       for n, a in zip(diffs.name, diffs.alpha, strict=True)]
    diffs["z"] = (diffs["mean"] - diffs.theory) / diffs.se

    def sub(frame=None, **eq):
        f = pts if frame is None else frame
        for col, v in eq.items():
            f = f[f[col].isin(v if isinstance(v, list | tuple) else [v])]
        return f

    def P(name: str, readout: str, model: str, alpha: float, d: int = D):
        return one_row(sub(allpts, name=name, readout=readout, model=model, alpha=alpha, d=d))

    names = dict(pts=pts, allpts=allpts, diffs=diffs, sub=sub, P=P, th=th, D=D, num=num,
                 pct=pct, signed=signed, span=span, np=np, math=math)
    for f in (len, min, max, abs, all, any, round, sorted, set, sum, int, float, str, zip):
        names[f.__name__] = f
    return names


def one_row(frame):
    if len(frame) != 1:
        raise ValueError(f"expected one point, got {len(frame)}")
    return frame.iloc[0]


def build_report(runs, progress: bool | None = None, allpts=None) -> str:
    """The text of READOUTS.md from the per-repetition rows (``progress``: the theory's;
    ``allpts``: :func:`summarize` with :func:`network_theory`, when computed already)."""
    if allpts is None:
        allpts = network_theory(summarize(runs, progress=progress))
    pts = allpts[allpts.d == D]
    lines = [
        "# One giant step with a finite-support readout: theory against Monte Carlo",
        "",
        "Generated by `python -m validation.spiked readouts report` from "
        "`validation/reports/data/readouts_runs.csv` (simulated by "
        "`python -m validation.spiked readouts run`; module `validation/spiked/readouts.py`). "
        "Theory: `asymptotics.risk_readout` (docs/THEORY.md §11, p = infinity), the K-group "
        "sRF model of the step. Two simulations per point: the trained network of THEORY.md §1 "
        "with `a0_j = eps_j/sqrt(p)`, `eps_j` i.i.d. (pm1: +-1 with probability 1/2; constant: "
        "1), and the K-group sRF model of the mapping (`validation/spiked/simulator.py`). "
        "Per repetition: one first layer, nested ridge batches along alpha, "
        "`n_test = max(10000, 2d)` test inputs. z = (mean - theory)/s.e.",
        "",
    ]
    d_vals = sorted(pts.d.unique())
    seeds = sorted(allpts.seeds.unique())
    hours = runs.drop_duplicates(["name", "model", "readout", "d", "rep"]).seconds.sum() / 3600
    others = sorted(set(allpts.d) - {D})
    lines += [f"d = {', '.join(map(str, d_vals))}"
              + (f" (the d-scan at d = {', '.join(map(str, others))} is its own section)"
                 if others else "")
              + ", beta = 1 (p = d), alpha0 = 2, lam = 0.01, "
              f"seeds per point: {', '.join(map(str, seeds))}. Simulation time: "
              f"{hours:.2f} hours of wall-clock summed over the repetitions (BLAS on at most "
              f"2 cores of a shared machine: at most {2 * hours:.2f} core-hours).", ""]
    tn = allpts[allpts.model == "network"]

    def _count(frame, z: str) -> str:
        return f"{int((frame[z].abs() <= 3).sum())}/{len(frame)}"

    lines += ["## Summary", "",
              f"**The trained network** ({len(tn[tn.d == D])} points at d = {D}, {len(tn)} at "
              f"every d): the network theory (`model=\"network\"`, p = d) within 3 s.e. at "
              f"{_count(tn[tn.d == D], 'z_net')} (every d: {_count(tn, 'z_net')}, median abs. "
              f"rel. gap {100 * tn.gap_net.abs().median():.2f}%, max "
              f"{100 * tn.gap_net.abs().max():.2f}%); the K-group sRF surrogate at "
              f"{_count(tn[tn.d == D], 'z')} at p = infinity and {_count(tn[tn.d == D], 'z_p')} "
              f"at p = d (every d: {_count(tn, 'z')} and {_count(tn, 'z_p')}).", "",
              "Theory at p = infinity; `within 3 s.e. (finite p)` counts the points within 3 "
              "s.e. of the surrogate's finite-width theory at the simulated p (THEORY.md §10.6, "
              "each group's mean channel priced); the last two columns, at the trained network's "
              "rows, the network theory at p = d (THEORY.md §8, §15; `-` at the sRF model's).",
              "",
              "| setting | readout | model | within 3 s.e. | median abs. rel. gap | "
              "max abs. rel. gap | within 3 s.e. (finite p) | network theory: within 3 s.e. | "
              "network theory: median abs. rel. gap |", "|---|---|---|---|---|---|---|---|---|"]

    def _row(label: str, readout: str, model: str, grp) -> str:
        gaps = grp.gap.abs()
        net = ("- | -" if model != "network" else
               f"{_count(grp, 'z_net')} | {100 * grp.gap_net.abs().median():.2f}%")
        return (f"| {label} | {readout} | {model} | {_count(grp, 'z')} | "
                f"{100 * gaps.median():.2f}% | {100 * gaps.max():.2f}% | "
                f"{_count(grp, 'z_p')} | {net} |")

    for (name, readout, model), grp in pts.groupby(["name", "readout", "model"], sort=False):
        lines.append(_row(name, readout, model, grp))
    for model in MODELS:
        lines.append(_row("**all**", "", model, pts[pts.model == model]))
    lines += ["", "## Points", "",
              "Theory: p = infinity; at p: the finite-width closure at the simulated p; "
              "network theory: `asymptotics.risk(..., readout=..., model=\"network\")`, the "
              "project's theory of the trained network, at p = d (z of the network against it "
              "in brackets).", "",
              "| setting | readout | alpha | theory | theory at p | network (z) | sRF (z) | "
              "network theory (z) |",
              "|---|---|---|---|---|---|---|---|"]
    for (name, readout, alpha), grp in pts.groupby(["name", "readout", "alpha"], sort=False):
        cells = {}
        for model in MODELS:
            r = grp[grp.model == model]
            cells[model] = ("-" if r.empty else
                            f"{_f(r['mean'].iloc[0])} ± {_f(r.se.iloc[0])} ({r.z.iloc[0]:+.1f})")
        net = grp[grp.model == "network"]
        tnet = math.nan if net.empty else float(net.theory_net.iloc[0])
        zn = ("-" if not np.isfinite(tnet) else f"{_f(tnet)} ({net.z_net.iloc[0]:+.1f})")
        lines.append(f"| {name} | {readout} | {alpha:g} | {_f(grp.theory.iloc[0])} | "
                     f"{_f(grp.theory_p.iloc[0])} | {cells['network']} | {cells['srf']} | "
                     f"{zn} |")
    diffs = paired_differences(runs[runs.d == D])
    if not diffs.empty:
        th = pts.pivot_table(index=["name", "d", "alpha"], columns="readout",
                             values="theory", aggfunc="first")
        lines += ["", "## pm1 minus constant", "",
                  "The change of the risk from the constant to the pm1 readout, paired over "
                  "repetitions (both readouts of one repetition share `W0`, the teacher and "
                  "every sample stream), against the theory's difference.", "",
                  "| setting | alpha | theory | network (z) | sRF (z) |", "|---|---|---|---|---|"]
        for (name, d, alpha), grp in diffs.groupby(["name", "d", "alpha"], sort=False):
            t = th.loc[(name, d, alpha)]
            tdiff = round(float(t["pm1"] - t["constant"]), 10) + 0.0  # no "-0.0000"
            cells = {}
            for model in MODELS:
                r = grp[grp.model == model]
                if r.empty:
                    cells[model] = "-"
                    continue
                m, se = float(r["mean"].iloc[0]), float(r.se.iloc[0])
                z = (m - tdiff) / se if se > 0 else math.nan
                cells[model] = f"{m:+.4f} ± {se:.4f} ({z:+.1f})"
            lines.append(f"| {name} | {alpha:g} | {tdiff:+.4f} | {cells['network']} | "
                         f"{cells['srf']} |")
    if others:
        lines += _d_scan(allpts)
    lines += ["", "## Settings", ""]
    for c in SETTINGS:
        lines.append(f"- `{c.name}`: sigma = {c.sigma}, g = {c.target}, eta_tilde = {c.eta:g}"
                     + (f" ({c.purpose})" if c.purpose else ""))
    return "\n".join(lines) + "\n"


def write_report(out: str | Path | None = None, store: str | Path | None = None,
                 notes: str = "", figure: bool = True, progress: bool | None = None) -> Path:
    """Write READOUTS.md (``notes``: the discussion appended at the end, a template whose
    numbers and claims are computed from the points, :func:`notes_names`); ``figure``:
    show ``validation/reports/figures/readouts.png`` (``python -m figures.fig_readouts``);
    ``progress``: the theory's progress on stderr (False: none)."""
    runs = load(store)
    if runs.empty:
        raise ValueError(f"no runs in {store or STORE}; run `python -m validation.spiked readouts "
                         "run` first")
    allpts = network_theory(summarize(runs, progress=progress))
    text = build_report(runs, allpts=allpts)
    if figure:  # drawn by the figures layer (python -m figures.fig_readouts), not from here
        text += ("\n## Figure\n\nRisk vs alpha: theory (lines, p = infinity), network (filled "
                 "circles) and K-group sRF model (open squares), mean ± 1 s.e. Drawn from the "
                 "same rows by `python -m figures.fig_readouts` (`figures/fig_readouts.py`)."
                 "\n\n![risk vs alpha, constant vs pm1](figures/readouts.png)\n")
    if notes:
        from ..campaign.template import render

        text += "\n" + render(notes, notes_names(runs, allpts), source="readouts_notes.md")
    from ..campaign.report import report_dir

    path = Path(out) if out is not None else report_dir(None) / REPORT.name
    path.write_text(text, encoding="utf-8")
    return path
