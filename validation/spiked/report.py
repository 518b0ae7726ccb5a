"""The report of the K-group, r-spike campaign: every simulated point against the theory
(:func:`asymptotics.spiked.risk_spiked`, at p = infinity and at the simulated width p), the
aggregate agreement, every miss with its trend in d, the small-risk settings, and the
cross-check of the theory's solver against the semi-empirical reference
(:mod:`validation.spiked.reference`). A function of the runs' CSV, written with the campaigns'
markdown writer and plots (:mod:`validation.campaign.report`, :mod:`validation.campaign.plots`)
as ``SPIKED.md`` and ``figures/spiked_agreement.png`` into the directory the user chooses
(``--out``; ``validation/reports`` by default in a source checkout).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from ..campaign import plots
from ..campaign.report import Markdown, write_text
from . import campaign

Z_MISS = 3.0
#: Gauss-Hermite nodes per kappa dimension for the theory (r = 1: the theory's own default);
#: the theory's defaults for r >= 2 are checked against these in the report
THEORY_NODES = {1: None, 2: 60, 3: 40}
QUAD_FLAG = 0.005  # report a point where the default quadrature is off by more than this


def summarize(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (setting, d, alpha): seeds, mean, s.e. and the parameters."""
    keys = ["name", "d", "alpha"]
    params = ["sigma", "target", "K", "r", "k", "loadings", "bulk", "fractions", "overlaps",
              "lam", "beta", "p", "delta"]
    g = runs.groupby(keys, sort=False)
    out = g[params].first()
    out["seeds"] = g["risk"].size()
    out["mean"] = g["risk"].mean()
    out["se"] = g["risk"].std(ddof=1) / np.sqrt(out["seeds"])
    out = out.reset_index()
    # the campaign's order (settings as listed, then d, then alpha), whatever the rows' order
    rank = {c.name: i for i, c in enumerate(campaign.SETTINGS)}
    order = out["name"].map(lambda n: rank.get(n, len(rank)))
    return out.assign(_rank=order).sort_values(["_rank", "d", "alpha"], kind="stable").drop(
        columns="_rank").reset_index(drop=True)


def _theory_kwargs(row) -> dict:
    return dict(sigma=row["sigma"], target=row["target"], loadings=json.loads(row["loadings"]),
                bulk=json.loads(row["bulk"]), fractions=json.loads(row["fractions"]),
                overlaps=json.loads(row["overlaps"]), lam=float(row["lam"]),
                beta=float(row["beta"]), delta=float(row["delta"]))


def theory_function() -> Callable:
    """``asymptotics.spiked.risk_spiked`` (ImportError with a clear message if it is missing)."""
    return theory_module().risk_spiked


def theory_module():
    """``asymptotics.spiked``, checked to belong to the imported ``asymptotics`` (an editable
    install can otherwise serve it from another checkout than the rest of the package)."""
    import asymptotics

    try:
        import asymptotics.spiked as spiked
    except ImportError as exc:  # pragma: no cover - depends on the installed theory
        raise ImportError("the report needs the K-group theory asymptotics.spiked.risk_spiked; "
                          f"it could not be imported ({exc})") from None
    root = Path(asymptotics.__file__).resolve().parent
    here = Path(spiked.__file__).resolve().parent.parent
    if here != root:
        raise ImportError(f"asymptotics.spiked comes from {here}, the rest of asymptotics from "
                          f"{root} (a mixed installation); put one checkout first on the path")
    return spiked


def add_theory(points: pd.DataFrame, finite_p: bool = True,
               progress: bool | None = None) -> pd.DataFrame:
    """Theory at p = infinity (``theory``) and at the simulated p (``theory_p``), NaN where the
    solver did not converge; ``z``, ``gap`` (relative) and ``z_p``, ``gap_p``. ``progress``: a
    report per point on stderr (False: none)."""
    import inspect

    from asymptotics.core.progress import Progress

    risk_spiked = theory_function()
    has_nodes = "n_kappa" in inspect.signature(risk_spiked).parameters
    th, thp, th0, status = [], [], [], []
    with Progress(len(points), "spiked theory", unit="points", enabled=progress) as bar:
        for _, row in bar.iter(points.iterrows()):
            kw = _theory_kwargs(row)
            a = float(row["alpha"])
            nodes = THEORY_NODES.get(int(row["r"]), 40)
            fine = dict(n_kappa=nodes) if (has_nodes and nodes is not None) else {}
            res = risk_spiked(a, **kw, **fine)
            th.append(float(res.risk))
            status.append(str(getattr(res, "status", "")))
            th0.append(float(risk_spiked(a, **kw).risk) if fine else float(res.risk))
            thp.append(float(risk_spiked(a, p=float(row["p"]), **kw, **fine).risk)
                       if finite_p else math.nan)
    out = points.copy()
    out["theory"], out["theory_p"], out["status"] = th, thp, status
    out["theory_default"] = th0
    out["z"] = (out["mean"] - out["theory"]) / out["se"]
    out["gap"] = (out["mean"] - out["theory"]) / out["theory"]
    out["z_p"] = (out["mean"] - out["theory_p"]) / out["se"]
    out["gap_p"] = (out["mean"] - out["theory_p"]) / out["theory_p"]
    return out


def aggregate(points: pd.DataFrame, z: str = "z", gap: str = "gap") -> dict:
    """Points, share within 3 s.e., median and max |relative gap| (converged theory only)."""
    ok = points[np.isfinite(points[z])]
    a = np.abs(ok[gap].to_numpy())
    return dict(points=len(points), compared=len(ok),
                within=float(np.mean(np.abs(ok[z]) <= Z_MISS)) if len(ok) else math.nan,
                median_gap=float(np.median(a)) if len(a) else math.nan,
                max_gap=float(np.max(a)) if len(a) else math.nan)


# ------------------------------------------------------------------------------------------------
# text


def _f(x: float, digits: int = 4) -> str:
    if not math.isfinite(x):
        return "n/a"
    return f"{x:.{digits}g}"


def _pm(mean: float, se: float) -> str:
    return f"{mean:.4g} ± {se:.2g}"


def _z(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"{x:+.1f}"


def _pc(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"{100 * x:+.2f}%"


def _apc(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"{100 * x:.2f}%"


def _matrix_text(text: str) -> str:
    m = json.loads(text)
    if isinstance(m[0], list):
        return "[" + "; ".join(" ".join(f"{v:g}" for v in row) for row in m) + "]"
    return "[" + " ".join(f"{v:.3g}" for v in m) + "]"


POINT_COLUMNS = ["setting", "K", "r", "σ", "g", "β", "λ", "α", "seeds", "theory p=∞",
                 "sim ± s.e.", "z", "rel gap"]
SUMMARY_COLUMNS = ["theory", "points", "converged", "within 3 s.e.", "median abs rel gap",
                   "max abs rel gap"]


def _point_table(points: pd.DataFrame, with_p: bool) -> pd.DataFrame:
    """One line per point, its cells as text."""
    rows = []
    for _, r in points.iterrows():
        row = [r["name"], r["K"], r["r"], r["sigma"], f"`{r['target']}`", f"{r['beta']:g}",
               f"{r['lam']:g}", f"{r['alpha']:g}", r["seeds"], _f(r["theory"]),
               _pm(r["mean"], r["se"]), _z(r["z"]), _pc(r["gap"])]
        if with_p:
            row += [_f(r["theory_p"]), _z(r["z_p"]), _pc(r["gap_p"])]
        rows.append(row)
    cols = POINT_COLUMNS + (["theory at p", "z (p)", "rel gap (p)"] if with_p else [])
    return pd.DataFrame(rows, columns=cols)


def _summary(rows: list[tuple[str, dict]]) -> pd.DataFrame:
    return pd.DataFrame([[label, agg["points"], agg["compared"], _apc(agg["within"]),
                          _apc(agg["median_gap"]), _apc(agg["max_gap"])] for label, agg in rows],
                        columns=SUMMARY_COLUMNS)


def reference_table(path: Path | None = None) -> pd.DataFrame | None:
    """The stored semi-empirical reference values (None if there are none)."""
    from . import reference_runs

    df = reference_runs.load(path)
    return df if len(df) else None


def build_report(runs: pd.DataFrame, *, finite_p: bool = True,
                 reference: pd.DataFrame | None = None, figure: str | None = None) -> str:
    """The markdown text of the report from the stored runs (``figure``: the path of the
    agreement figure relative to the report, linked when given)."""
    pts = add_theory(summarize(runs), finite_p=finite_p)
    return build_text(runs, pts, finite_p=finite_p, reference=reference, figure=figure)


def build_text(runs: pd.DataFrame, pts: pd.DataFrame, *, finite_p: bool = True,
               reference: pd.DataFrame | None = None, figure: str | None = None) -> str:
    """The report from the runs and their points with the theory (:func:`add_theory`)."""
    base = pts[pts["d"] == campaign.D]
    names = [c.name for c in campaign.SETTINGS if c.name in set(base["name"])]
    base = base.set_index("name").loc[names].reset_index()
    core_h = campaign.core_seconds(runs) / 3600
    seeds = sorted(set(base["seeds"]))
    md = Markdown("K-group, r-spike spiked random features: theory vs Monte Carlo")
    md.para("Generated by `python -m validation.spiked run` (simulations, resumable) then "
            "`python -m validation.spiked report` (this file). Raw per-repetition risks: "
            "`validation/reports/data/spiked_runs.csv` (one row per repetition and alpha, every "
            "parameter, matrices as JSON).")
    md.para("Model (`validation/spiked/simulator.py`): p = beta d neurons in K groups (group g: "
            "round(pi_g p) rows, the last the remainder), rows `w_i = sqrt(c_g) G_i + V u_g` "
            "with `G_i` uniform on the unit sphere, `V` a Haar d x r orthonormal basis, `u_g` the "
            "rows of the loadings; target `g(theta_1.x, ..., theta_k.x)` with `theta_j = V "
            "Gamma[:, j] + rho_j t_j`; ridge readout with the SUM loss `sum_i (y_i - f(x_i))^2 + "
            "lam |a|^2` on n = alpha d fresh samples; risk `E (g - f)^2` on max(10^4, 2d) fresh "
            "noiseless inputs (unbiased sample mean). Fresh bulk, V and T for every repetition.")
    md.bullets([
        f"{len(names)} settings fixed before any comparison (`validation.spiked.campaign`), "
        f"{len(base)} points at d = {campaign.D} (p = beta d = "
        f"{', '.join(str(int(p)) for p in sorted(set(base['p'])))}), "
        f"{', '.join(map(str, seeds))} repetitions per point; the settings that miss are re-run "
        "at other d (below).",
        "d = p >= 1000 holds for beta >= 1; the beta = 0.5 settings run at d = 1000, p = 500 "
        "(the input dimension kept at 1000, the width halved), and again at d = 2000, p = 1000 "
        "where the store has them (\"Other settings re-run at another d\", below).",
        f"Compute of the stored runs: {core_h:.2f} core-hours (wall time of the repetitions, "
        "one thread each; an upper bound on CPU time on a shared machine).",
        "Theory: `asymptotics.spiked.risk_spiked` at p = infinity (the deterministic block "
        "resolvent) and at the simulated p (its finite-width form, `p=`). NaN/n/a: not "
        "converged (never reported as a number)."])
    md.heading("Summary")
    md.para(f"d = {campaign.D}, every point of the campaign; a miss is |z| > {Z_MISS:g} "
            "(z = (simulation - theory) / s.e.).")
    md.table(_summary([("p = infinity", aggregate(base))]
                      + ([("finite p (the simulated width)", aggregate(base, "z_p", "gap_p"))]
                         if finite_p else [])))
    small = base[base["name"].str.startswith("small-")]
    rest = base[~base["name"].str.startswith("small-")]
    md.para("Without the small-risk settings (where the p = infinity theory floors, below):")
    md.table(_summary([("p = infinity", aggregate(rest))]
                      + ([("finite p", aggregate(rest, "z_p", "gap_p"))] if finite_p else [])))
    if figure:
        md.para(f"![simulation against the theory at d = {campaign.D}]({figure})")
    md.heading(f"Every point (d = {campaign.D})")
    md.table(_point_table(base, finite_p))
    # misses and their trend in d
    miss = base[~(np.abs(base["z"]) <= Z_MISS)]
    md.heading("Misses and their trend in d")
    if not len(miss):
        md.para(f"No point with |z| > {Z_MISS:g} against the p = infinity theory.")
    else:
        md.para(f"{len(miss)} points with |z| > {Z_MISS:g} (or no converged theory) "
                f"against the p = infinity theory at d = {campaign.D}. Each missing setting "
                "is re-run at the other d in the store (same seeds, same settings, only d "
                "changed; p = beta d). The column p (sim - theory p=∞) is constant in d "
                "where the gap is a 1/p finite-width effect; p (theory at p - theory p=∞) is "
                "the part of it the finite-width theory accounts for.")
        rows = []
        for _, m in miss.iterrows():
            trend = pts[(pts["name"] == m["name"]) & (pts["alpha"] == m["alpha"])]
            for _, r in trend.sort_values("d").iterrows():
                rows.append([r["name"], f"{r['alpha']:g}", r["d"], r["p"], r["seeds"],
                             _f(r["theory"]), _f(r["theory_p"]), _pm(r["mean"], r["se"]),
                             _z(r["z"]), _pc(r["gap"]),
                             f"{r['p'] * (r['mean'] - r['theory']):.3g} ± "
                             f"{r['p'] * r['se']:.2g}",
                             _f(r["p"] * (r["theory_p"] - r["theory"]), 3), _z(r["z_p"]),
                             _pc(r["gap_p"])])
        md.table(pd.DataFrame(rows, columns=[
            "setting", "α", "d", "p", "seeds", "theory p=∞", "theory at p", "sim ± s.e.", "z",
            "rel gap", "p (sim - theory p=∞)", "p (theory at p - theory p=∞)", "z (p)",
            "rel gap (p)"]))
    if len(miss) and finite_p:
        md.para("The 1/p coefficient of each missing point, pooled over d (inverse-variance "
                "mean of p (sim - theory p=∞)), against the finite-width theory's p (theory at "
                "p - theory p=∞) at the largest simulated p:")
        rows = []
        for _, m in miss.iterrows():
            tr = pts[(pts["name"] == m["name"]) & (pts["alpha"] == m["alpha"])]
            coef, err = tr["p"] * (tr["mean"] - tr["theory"]), tr["p"] * tr["se"]
            wts = 1.0 / err**2
            c = float(np.sum(wts * coef) / np.sum(wts))
            ce = float(1.0 / np.sqrt(np.sum(wts)))
            top = tr.loc[tr["p"].idxmax()]
            tc = float(top["p"] * (top["theory_p"] - top["theory"]))
            rows.append([m["name"], f"{m['alpha']:g}", f"{m['beta']:g}",
                         ", ".join(str(v) for v in sorted(tr["d"])), f"{c:.3g} ± {ce:.2g}",
                         f"{tc:.3g}", f"{100 * tc / c:.0f}%"])
        md.table(pd.DataFrame(rows, columns=[
            "setting", "α", "β", "d simulated", "p (sim - theory p=∞)", "finite-p theory",
            "share accounted for"]))
    if finite_p:
        miss_p = base[~(np.abs(base["z_p"]) <= Z_MISS)]
        md.para(f"Against the theory at the simulated p, {len(miss_p)} of {len(base)} points "
                f"at d = {campaign.D} miss"
                + (": " + "; ".join(f"{r['name']} at alpha = {r['alpha']:g} (z = "
                                    f"{r['z_p']:+.1f}, {100 * r['gap_p']:+.2f}%)"
                                    for _, r in miss_p.iterrows()) if len(miss_p) else "")
                + ".")
    other_d = pts[(pts["d"] != campaign.D) & ~pts["name"].isin(set(miss["name"]))]
    if len(other_d):
        md.para("Other settings re-run at another d:")
        md.table(_point_table(other_d.assign(name=other_d["name"] + " (d="
                                             + other_d["d"].astype(str) + ")"), finite_p))
    # finite width
    md.heading("Finite width")
    md.para("The small-risk settings: the spikes span the target directions (Gamma = I), "
            "large alpha, lam = 0.001. The p = infinity theory and the theory at the simulated "
            "p side by side:")
    md.table(_point_table(small, finite_p))
    if finite_p and len(base):
        d_gap = np.abs(base["gap_p"]) - np.abs(base["gap"])
        better = int(np.sum(d_gap < 0))
        md.para(f"Over all {len(base)} points the finite-p theory is closer to the "
                f"simulation at {better} and farther at {len(base) - better}; median "
                f"|theory at p - theory p=∞| / theory = "
                f"{_apc(float(np.median(np.abs(base['theory_p'] / base['theory'] - 1))))}.")
    # quadrature of the theory
    quad = base.assign(qgap=base["theory_default"] / base["theory"] - 1)
    flagged = quad[~(np.abs(quad["qgap"]) <= QUAD_FLAG)]
    md.heading("Quadrature of the theory")
    md.para("The theory is evaluated with Gauss-Hermite tensor rules of "
            + ", ".join(f"{n} nodes per kappa dimension at r = {r}"
                        for r, n in THEORY_NODES.items() if n is not None)
            + " (r = 1: the theory's default rule). With the theory's default rules, "
            f"{len(flagged)} of {len(quad)} points move by more than {100 * QUAD_FLAG:g}%"
            + (":" if len(flagged) else "."))
    if len(flagged):
        md.table(pd.DataFrame(
            [[r["name"], r["r"], f"{r['alpha']:g}", _f(r["theory_default"], 5),
              _f(r["theory"], 5), _pc(r["qgap"]), _z((r["mean"] - r["theory_default"]) / r["se"])]
             for _, r in flagged.iterrows()],
            columns=["setting", "r", "α", "theory, default rule", "theory, finer rule", "change",
                     "z with the default rule"]))
    # parameters
    md.heading("Settings")
    rows = []
    for c in campaign.SETTINGS:
        s = c.setting.as_dict()
        rows.append([c.name, _matrix_text(s["loadings"]), _matrix_text(s["bulk"]),
                     _matrix_text(s["fractions"]), _matrix_text(s["overlaps"]),
                     ", ".join(f"{a:g}" for a in c.alphas), c.purpose])
    md.table(pd.DataFrame(rows, columns=["setting", "loadings (K x r)", "bulk c", "fractions",
                                         "overlaps Gamma (r x k)", "alphas", "purpose"]))
    if reference is not None and len(reference):
        md.heading("The theory's solver against the semi-empirical reference")
        reference_text(md, reference, pts)
    md.regenerate(REGENERATE)
    return md.text()


def reference_text(md: Markdown, reference: pd.DataFrame, pts: pd.DataFrame) -> None:
    """The semi-empirical reference (numpy, on the bulks of one or a few repetitions) beside the
    deterministic theory and the simulation."""
    md.para("`validation.spiked.reference` solves the semi-empirical equations (the exact p x p "
            "resolvent of one sampled bulk G at the simulated d, written independently of the "
            "theory package) on the bulk of repetition 0 (and of repetitions 1-3 where the "
            "column bulks says so; then their mean ± s.e.). The deterministic theory is its "
            "d -> infinity limit, so the two differ by the fluctuation of a sampled bulk.")
    ref = reference[np.isfinite(reference["risk"].astype(float))]
    g = ref.groupby(["name", "d", "alpha"], sort=False)["risk"]
    stats = pd.DataFrame(dict(n=g.size(), mean=g.mean(), sd=g.std(ddof=1))).reset_index()
    rank = {c.name: i for i, c in enumerate(campaign.SETTINGS)}  # the campaign's order
    stats = stats.assign(_rank=stats["name"].map(lambda n: rank.get(n, len(rank)))).sort_values(
        ["_rank", "d", "alpha"], kind="stable")
    rel, rows = [], []
    for _, r in stats.iterrows():
        m = pts[(pts["name"] == r["name"]) & (pts["alpha"] == r["alpha"])
                & (pts["d"] == r["d"])]
        if not len(m):
            continue
        m = m.iloc[0]
        rg = r["mean"] / m["theory"] - 1 if math.isfinite(m["theory"]) else math.nan
        rel.append(rg)
        val = (_f(r["mean"], 5) if r["n"] == 1
               else f"{r['mean']:.5g} ± {r['sd'] / math.sqrt(r['n']):.2g}")
        rows.append([r["name"], f"{r['alpha']:g}", r["d"], m["p"], r["n"], val,
                     _f(m["theory"], 5), _f(m["theory_p"], 5), _pc(rg),
                     _pm(m["mean"], m["se"])])
    md.table(pd.DataFrame(rows, columns=["setting", "α", "d", "p", "bulks", "reference",
                                         "theory p=∞", "theory at p", "ref / theory - 1",
                                         "sim ± s.e."]))
    a = np.abs(np.asarray(rel, dtype=float))
    a = a[np.isfinite(a)]
    if len(a):
        md.para(f"{len(a)} points: median |ref / theory - 1| = {_apc(float(np.median(a)))}, "
                f"max {_apc(float(np.max(a)))}.")


def draw(pts: pd.DataFrame, out: str | Path) -> Path:
    """The agreement figure (``out/figures/spiked_agreement.png``): simulation / theory - 1 at
    d = 1000 against the theory, p = infinity and the simulated p; returns its path relative
    to ``out``."""
    base = pts[pts["d"] == campaign.D]
    fig, axes = plots.figure(2, 1, width=5.0, height=3.8)
    for ax, col, title in ((axes[0, 0], "theory", "theory at p = infinity"),
                           (axes[0, 1], "theory_p", "theory at the simulated p")):
        for k, r in enumerate(sorted(set(base["r"]))):
            sub = base[base["r"] == r]
            plots.agreement(ax, sub[col], sub["mean"], sub["se"], k=k, label=f"r = {r}")
        ax.set_xscale("log")
        ax.set_title(title)
        ax.legend(fontsize=8)
    return plots.save(fig, out, "spiked_agreement")


REGENERATE = "python -m validation.spiked report --out validation/reports"


def write_report(out: str | Path, *, runs: str | Path | None = None,
                 finite_p: bool = True, progress: bool | None = None) -> Path:
    """Write ``SPIKED.md`` and its figure into ``out`` from the runs' CSV (default: the
    committed one); returns the report's path. ``progress``: the theory's progress on stderr."""
    df = campaign.load(runs)
    if not len(df):
        raise ValueError("the spiked runs hold nothing; run `python -m validation.spiked run`")
    pts = add_theory(summarize(df), finite_p=finite_p, progress=progress)
    fig = draw(pts, out)
    text = build_text(df, pts, finite_p=finite_p, reference=reference_table(),
                      figure=fig.as_posix())
    return write_text(out, "SPIKED.md", text)
