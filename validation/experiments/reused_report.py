"""The report of the reused-batch campaign: Monte Carlo (:mod:`reused_batch`) against the theory
of docs/THEORY.md §14, written to ``validation/reports/REUSED.md`` with its figure.

``python -m validation.experiments.reused_report [--store FILE.sqlite]``: from the runs' CSV
exported by ``python -m validation.experiments.reused_batch run`` (the committed data, or the
written copy, :func:`validation.paths.data_file`), or from the rows of a campaign store.
"""

from __future__ import annotations

import math
import pathlib
import sys

import numpy as np
import pandas as pd

from asymptotics.multiindex.directions import step_directions
from asymptotics.multiindex.steps_risk import risk_steps

from .reused_batch import ALPHA, ALPHA0, LAM, RUNS, SIGMA, TARGETS, paths, stored

HERE = pathlib.Path(__file__).resolve().parents[1] / "reports"
DATA = RUNS
FIGURE = HERE / "figures" / "reused_batch.png"
REPORT = HERE / "REUSED.md"
ETA_LINE = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0)
QUANTITIES = ("risk", "overlap", "direction", "drift")  # and the paired "risk_gain"
MAIN_ETA = 1.0  # the main table's eta_tilde (the other values: the scan)
FIGURE_D = 1000  # the figure's d


def theory(target: str, readout: str, eta: float, d: int, batch: str,
           with_risk: bool = True) -> dict:
    """Every compared quantity after steps 1 and 2 (keys ``(quantity + j, step)``)."""
    text, ro = TARGETS[target], "pm1" if readout == "pm1" else "constant"
    out = {}
    if with_risk:
        mp_kw = dict(sigma=SIGMA, target=text, alpha0=ALPHA0, eta=eta, lam=LAM, beta=1.0,
                     readout=ro, batch=batch)
        for t in (1, 2):
            res = risk_steps(ALPHA, steps=t, **mp_kw)
            out[("risk", t)] = res.risk if res.converged else math.nan
    rep = step_directions(SIGMA, text, alpha0=ALPHA0, eta=eta, d=d, batch=batch, readout=ro)
    for t in (1, 2):
        for j in range(rep.direction.shape[1]):
            out[(f"overlap{j + 1}", t)] = rep.row_overlap[t, j]
            out[(f"direction{j + 1}", t)] = rep.direction[t - 1, j]
            out[(f"drift{j + 1}", t)] = rep.drift[t - 1, j]
    return out


def compare(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (setting, d, batch, step, quantity): MC mean, s.e., theory, z."""
    rows = []
    step2 = df[df.step >= 1]
    cache: dict = {}
    for (name, d, batch, step), grp in step2.groupby(["setting", "d", "batch", "step"]):
        first = grp.iloc[0]
        batches = ("fresh", "reused") if batch == "both" else (batch,)
        for b in batches:
            key = (name, d, b)
            if key not in cache:
                cache[key] = theory(first.target, first.readout, float(first.eta), int(d), b,
                                    with_risk="risk" in grp and grp["risk"].notna().any())
            th = cache[key]
            for col in grp.columns:
                base = col.rstrip("0123456789")
                if base not in QUANTITIES or grp[col].isna().all():
                    continue
                x = grp[col].to_numpy(float)
                n = len(x)
                se = float(np.std(x, ddof=1) / math.sqrt(n)) if n > 1 else math.nan
                pred = th.get((col, int(step)), math.nan)
                z = (x.mean() - pred) / se if se > 0 else math.nan
                rows.append(dict(setting=name, target=first.target, readout=first.readout,
                                 eta=float(first.eta), d=int(d), batch=b if batch != "both"
                                 else "both", step=int(step), quantity=col, seeds=n,
                                 mc=float(x.mean()), se=se, theory=pred, z=z))
            if batch == "both":
                break  # step 1 is the same for both batches
    out = pd.DataFrame(rows)
    return pd.concat([out, _paired(df, cache)], ignore_index=True)


def _paired(df: pd.DataFrame, cache: dict) -> pd.DataFrame:
    """risk(reused) - risk(fresh) after step 2, per seed (the same W0, theta, first batch)."""
    rows = []
    two = df[(df.step == 2) & df["risk"].notna()] if "risk" in df else df.iloc[:0]
    for (name, d), grp in two.groupby(["setting", "d"]):
        wide = grp.pivot(index="seed", columns="batch", values="risk").dropna()
        if len(wide) < 2:
            continue
        x = (wide["reused"] - wide["fresh"]).to_numpy()
        se = float(np.std(x, ddof=1) / math.sqrt(len(x)))
        pred = cache[(name, d, "reused")][("risk", 2)] - cache[(name, d, "fresh")][("risk", 2)]
        first = grp.iloc[0]
        rows.append(dict(setting=name, target=first.target, readout=first.readout,
                         eta=float(first.eta), d=int(d), batch="paired", step=2,
                         quantity="risk_gain", seeds=len(x), mc=float(x.mean()), se=se,
                         theory=pred, z=(x.mean() - pred) / se if se > 0 else math.nan))
    return pd.DataFrame(rows)


def figure(df: pd.DataFrame, path: pathlib.Path) -> None:
    """Step-2 direction overlap, rows' overlap and risk vs eta_tilde (He3, constant readout,
    d = FIGURE_D): theory lines, simulation points with s.e."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d = FIGURE_D
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6), constrained_layout=True)
    sub = df[(df.target == "He3") & (df.readout == "constant") & (df.d == d) & (df.step == 2)]
    for batch, colour in (("fresh", "C0"), ("reused", "C3")):
        lines = [theory("He3", "constant", e, d, batch, with_risk=True) for e in ETA_LINE]
        for ax, q in zip(axes, ("direction1", "overlap1", "risk"), strict=True):
            ax.plot(ETA_LINE, [ln[(q, 2)] for ln in lines], color=colour, label=f"theory, {batch}")
            pts = sub[sub.batch == batch].groupby("eta")[q]
            m, se = pts.mean(), pts.std(ddof=1) / np.sqrt(pts.count())
            m = m.dropna()
            if len(m):
                ax.errorbar(m.index, m.values, yerr=se[m.index].values, fmt="o", color=colour,
                            capsize=3, label=f"simulation, {batch}")
    titles = (r"$|\langle u_2, \theta\rangle|$ (step-2 update)",
              r"mean $|\langle w_i, \theta\rangle|/|w_i|$ after step 2",
              rf"test error after step 2 ($\alpha$={ALPHA:g}, $\lambda$={LAM:g})")
    for ax, t in zip(axes, titles, strict=True):
        ax.set_xlabel(r"$\tilde\eta$ (both steps)")
        ax.set_title(t, fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, frameon=False)
    fig.suptitle(rf"tanh, $y = He_3(z)/\sqrt{{6}}$, constant readout, $\alpha_0$={ALPHA0:g}, "
                 f"d = p = {d}", fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)
    plt.close(fig)


def _fmt(x: float, nd: int = 4) -> str:
    """``x`` to ``nd`` decimals; a value that rounds to zero is "0.000..", unsigned (the
    theory's zeros by symmetry are +- rounding noise)."""
    return "nan" if not np.isfinite(x) else f"{round(x, nd) + 0.0:.{nd}f}"


def text(comp: pd.DataFrame, df: pd.DataFrame) -> str:
    """The markdown report."""
    main = comp[comp.eta == MAIN_ETA]
    ok = main.z.abs() <= 3
    lines = [
        "# Reused batch: the second giant step on the same data",
        "",
        "Generated by `python -m validation.experiments.reused_report` from the runs of "
        "`python -m validation.experiments.reused_batch run` (data: "
        "`validation/reports/data/reused_batch.csv`). Theory: docs/THEORY.md §14 "
        "(`steps_mapping(..., batch=\"reused\")`, `risk_steps`, `step_directions`).",
        "",
        f"Protocol: {SIGMA}, d = p, `alpha0 = {ALPHA0:g}`, `eta_tilde = {MAIN_ETA:g}` at both "
        "steps, frozen "
        "readout constant or pm1 (`eps = +-1` on two halves), targets `He3(z)/sqrt 6`, "
        "`z1 + He3(z2)/sqrt 6`, and the control `He2(z)/sqrt 2`; step 1 on batch B, step 2 on a "
        "fresh batch or on B again (paired: the same W0, theta, B). Risk: ridge on the readout "
        f"at `alpha = {ALPHA:g}`, `lam = {LAM:g}` (sum convention), the test power replaced by "
        "the exact `E g^2`. Overlaps: `overlap` = mean over rows of `|<w_i, theta_j>|/|w_i|` after "
        "the step, `direction` = `|<u_t, theta_j>|` for the leading right singular vector of "
        "`W_t - W_(t-1)`, `drift` = `mean_i eps_i <w_i(t) - w_i(t-1), theta_j>`. Theory at the "
        "run's d for the overlaps and the drift (finite-d fluctuations, THEORY.md §14.5), "
        "d -> infinity for the risk; `risk_gain` = risk(reused) - risk(fresh) after step 2, "
        "paired per seed. z = (simulation - theory) / s.e. over seeds.",
        "",
        f"**Within 3 s.e.: {int(ok.sum())} of {len(main)} points "
        f"({100 * ok.mean():.0f}%).** By quantity: "
        + ", ".join(f"{q} {int((g.z.abs() <= 3).sum())}/{len(g)}"
                    for q, g in main.groupby(main.quantity.str.rstrip("0123456789"))) + ".",
        "",
        "| target | readout | d | seeds | batch | step | quantity | simulation | s.e. | theory "
        "| z |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    order = ["target", "readout", "d", "step", "batch", "quantity"]
    for _, r in main.sort_values(order).iterrows():
        flag = "" if abs(r.z) <= 3 else " **"
        lines.append(f"| {r.target} | {r.readout} | {r.d} | {r.seeds} | {r.batch} | {r.step} | "
                     f"{r.quantity} | {_fmt(r.mc)} | {_fmt(r.se)} | {_fmt(r.theory)} | "
                     f"{r.z:+.1f}{flag} |")
    miss = main[~ok]
    lines += ["", "## Misses (|z| > 3) and the closure's gap", ""]
    if len(miss):
        lines += ["| target | readout | d | batch | step | quantity | simulation | theory | "
                  "gap (relative) | z |", "|---|---|---|---|---|---|---|---|---|---|"]
        for _, r in miss.iterrows():
            rel = (r.mc - r.theory) / abs(r.theory) if r.theory else math.nan
            lines.append(f"| {r.target} | {r.readout} | {r.d} | {r.batch} | {r.step} | "
                         f"{r.quantity} | {_fmt(r.mc)} | {_fmt(r.theory)} | {rel:+.1%} | "
                         f"{r.z:+.1f} |")
    else:
        lines.append("None.")
    scan = comp[(comp.eta != MAIN_ETA) & (comp.step == 2)]
    if len(scan):
        where = ", ".join("/".join(str(v) for v in sorted(scan[c].unique()))
                          for c in ("target", "readout"))
        lines += ["", f"## eta_tilde scan ({where} readout, d = "
                  f"{'/'.join(str(d) for d in sorted(scan.d.unique()))}, overlaps only)", "",
                  "| eta_tilde | batch | quantity | simulation | s.e. | theory | z |",
                  "|---|---|---|---|---|---|---|"]
        for _, r in scan.sort_values(["eta", "batch", "quantity"]).iterrows():
            lines.append(f"| {r.eta:g} | {r.batch} | {r.quantity} | {_fmt(r.mc)} | "
                         f"{_fmt(r.se)} | {_fmt(r.theory)} | {r.z:+.1f} |")
        sok = scan.z.abs() <= 3
        lines += ["", f"Scan: {int(sok.sum())} of {len(scan)} within 3 s.e."]
    lines += findings(comp)
    lines += ["", "![overlap and risk vs eta_tilde, fresh vs reused](figures/reused_batch.png)",
              "", "Figure: theory lines and simulation points (mean +- s.e. over seeds), "
              f"He3, constant readout, d = {FIGURE_D}.", ""]
    return "\n".join(lines)


def _row(comp: pd.DataFrame, target: str, quantity: str, batch: str, d: int,
         eta: float = MAIN_ETA, readout: str = "constant", step: int = 2):
    sel = comp[(comp.target == target) & (comp.readout == readout) & (comp.quantity == quantity)
               & (comp.batch == batch) & (comp.d == d) & (comp.eta == eta) & (comp.step == step)]
    return sel.iloc[0] if len(sel) else None


def _pm(r, nd: int = 3) -> str:
    return "n/a" if r is None else f"{_fmt(r.mc, nd)} +- {_fmt(r.se, nd)}"


def _th(r, nd: int = 4) -> str:
    return "n/a" if r is None else _fmt(r.theory, nd)


def findings(comp: pd.DataFrame) -> list[str]:
    """The findings, every number read from ``comp`` (constant readout, step 2)."""
    ds = sorted(comp.d.unique())
    lines = ["", "## Findings (constant readout, step 2)", ""]

    def both(target, q, batch, nd=3):
        rs = [_row(comp, target, q, batch, d) for d in ds]
        return (" and ".join(f"{_pm(r, nd)} (d = {d})" for r, d in zip(rs, ds, strict=True)),
                " / ".join(_th(r) for r in rs))

    for target, j, what in (("He3", 1, "He3"), ("z1+He3", 2, "z1 + He3(z2), along theta_2"),
                            ("He2", 1, "He2 (control)")):
        reu, reu_th = both(target, f"direction{j}", "reused")
        fre, fre_th = both(target, f"direction{j}", "fresh")
        lines.append(f"- {what}: the step-2 update's overlap `|<u_2, theta_{j}>|` is {reu} "
                     f"reused (theory {reu_th}) and {fre} fresh (theory {fre_th}).")
    drift, drift_th = both("He3", "drift1", "reused", 4)
    zs = ", ".join(f"z = {r.z:+.1f}" for r in (_row(comp, "He3", "drift1", "reused", d)
                                                for d in ds) if r is not None)
    lines.append(f"- He3, reused: the drift along theta is {drift} against {drift_th} ({zs}).")
    scan = comp[(comp.eta != MAIN_ETA) & (comp.step == 2) & (comp.batch == "reused")
                & (comp.quantity == "direction1")]
    if len(scan):
        parts = [f"{r.mc:.3f} +- {r.se:.3f} vs {r.theory:.3f} at eta_tilde = {r.eta:g} "
                 f"({(r.mc - r.theory) / abs(r.theory):+.0%}, z = {r.z:+.1f})"
                 for _, r in scan.sort_values("eta").iterrows()]
        lines.append("- Along eta_tilde (He3, reused, d = "
                     f"{', '.join(str(d) for d in sorted(scan.d.unique()))}): the update's "
                     "overlap is " + "; ".join(parts) + ".")
    return lines


def main(argv=None) -> int:
    """Collect, compare, write the report and the figure (module docstring)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m validation.experiments.reused_report",
                                     description="write validation/reports/REUSED.md")
    parser.add_argument("--store", help="a campaign store (.sqlite) to read the runs from "
                                        "(default: the runs' CSV)")
    store = parser.parse_args(argv).store
    if store is not None and not pathlib.Path(store).is_file():
        print(f"error: --store must name an existing .sqlite store, got {store}",
              file=sys.stderr)
        return 2
    df = stored(store) if store is not None else pd.read_csv(paths()[0])
    comp = compare(df)
    figure(df, FIGURE)
    REPORT.write_text(text(comp, df))
    print(f"wrote {REPORT} ({int((comp.z.abs() <= 3).sum())}/{len(comp)} within 3 s.e.)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
