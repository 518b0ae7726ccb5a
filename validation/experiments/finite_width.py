"""Finite-width theory against sRF simulations (docs/DERIVATIONS.md §8).

``python -m validation.experiments.finite_width [--simulate] [--ds 1000,2000] [--seeds 16]
[--budget-s S]`` runs sRF repetitions (``validation.simulator``, model ``srf``, control-variate
test error) at ``d = p`` (beta = 1) with eta_tilde chosen so that ``r sqrt(p)`` is 0.3, 1, 3 and
10, for two activation/target pairs, caching one CSV row per repetition in
``validation/reports/data/finite_width_runs.csv`` (resumable: a repetition already there is never
re-run; repetition ``i`` is child ``i`` of ``SeedSequence(SEED)``, so adding seeds extends a
point). Without ``--simulate`` it only reads the cache. It then writes
``validation/reports/FINITE_WIDTH.md`` (the table: simulation mean ± s.e. against the finite-p
theory, the p = infinity theory and random features, each with its distance in s.e.) and
``validation/reports/figures/finite_width_*.png`` (the collapse on ``r sqrt(p)`` and the
crossover in eta_tilde at the simulated p, p = 1e5 and infinity).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import pathlib
import sys
import time

import numpy as np
import pandas as pd

from asymptotics.api.risk import build_problem, solve_point
from validation.store import Layout, Store

REPORTS = pathlib.Path(__file__).resolve().parents[1] / "reports"
RUNS = REPORTS / "data" / "finite_width_runs.csv"
MATRIX = pathlib.Path(__file__).resolve().parents[1] / "data" / "matrix_summary.csv"
MATRIX_OUT = REPORTS / "data" / "finite_width_matrix.csv"
SEED = 16016
ALPHA = 2.0
PAIRS = (
    dict(sigma="tanh", target="tanh", alpha0=2.0, lam=0.01, beta=1.0),
    dict(sigma="erf", target="sin", alpha0=2.0, lam=0.01, beta=1.0),
)
RSQP = (0.3, 1.0, 3.0, 10.0)
COLUMNS = ["sigma", "target", "alpha0", "lam", "beta", "d", "p", "eta", "rsqp", "alpha", "rep",
           "risk", "seconds"]


def r_per_eta(pair: dict) -> float:
    """r / eta_tilde of the one-step map (r is linear in eta_tilde, THEORY.md §3)."""
    return build_problem(eta=1.0, **pair).spike.r


def eta_for(pair: dict, rsqp: float, p: int) -> float:
    """eta_tilde giving spike strength r with r sqrt(p) = rsqp."""
    return rsqp / (math.sqrt(p) * r_per_eta(pair))


def theory(pair: dict, eta: float, p: float | None, alpha: float = ALPHA) -> float:
    """Risk of the finite-p theory (p = None: the p -> infinity limit); NaN if unconverged."""
    problem = build_problem(eta=eta, **pair)
    return solve_point(dataclasses.replace(problem, p=p), alpha).risk


def _load() -> pd.DataFrame:
    if RUNS.exists():
        return pd.read_csv(RUNS)
    return pd.DataFrame(columns=COLUMNS)


#: the runs' blocks (validation.store): one repetition of one (pair, d, r sqrt(p)), one row
LAYOUT = Layout(block=lambda row: "|".join(
    f"{float(row[k]):.10g}" if k == "rsqp" else row[k] for k in ("sigma", "target", "d", "rsqp",
                                                                  "rep")), size=lambda row: 1)


def simulate(ds: list[int], seeds: int, budget_s: float) -> None:
    """Run the missing repetitions (cheapest sizes first) until done or out of budget."""
    with Store(RUNS, COLUMNS, LAYOUT) as store:
        _simulate(store, ds, seeds, budget_s)


def _simulate(store: Store, ds: list[int], seeds: int, budget_s: float) -> None:
    from validation.simulator import Setting, simulate_grid_once

    children = np.random.SeedSequence(SEED).spawn(seeds)
    t_start = time.perf_counter()
    for rep in range(seeds):
        for d in sorted(ds):
            for pair in PAIRS:
                for rsqp in RSQP:
                    key = LAYOUT.key_of(dict(pair, d=d, rsqp=rsqp, rep=rep))
                    if key in store.blocks:
                        continue
                    if time.perf_counter() - t_start > budget_s:
                        print("budget spent", flush=True)
                        return
                    p = int(round(pair["beta"] * d))
                    eta = eta_for(pair, rsqp, p)
                    s = Setting(model="srf", sigma=pair["sigma"], target=pair["target"],
                                alpha=ALPHA, alpha0=pair["alpha0"], eta=eta, lam=pair["lam"],
                                beta=pair["beta"], d=d, estimator="cv")
                    t0 = time.perf_counter()
                    value = float(simulate_grid_once(s, [ALPHA], [pair["lam"]],
                                                     children[rep])[0, 0])
                    row = dict(sigma=pair["sigma"], target=pair["target"],
                               alpha0=pair["alpha0"], lam=pair["lam"], beta=pair["beta"], d=d,
                               p=p, eta=eta, rsqp=rsqp, alpha=ALPHA, rep=rep, risk=value,
                               seconds=time.perf_counter() - t0)
                    store.add([row])
                    print(f"d={d} {pair['sigma']}/{pair['target']} r*sqrt(p)={rsqp} rep={rep}: "
                          f"{value:.5f} ({row['seconds']:.1f} s)", flush=True)


def table() -> pd.DataFrame:
    """Per point: simulation mean, s.e., seeds; theories at p, at infinity and RF (eta = 0)."""
    df = _load()
    rows = []
    for (sigma, target, d, rsqp), g in df.groupby(["sigma", "target", "d", "rsqp"]):
        if len(g) < 2:  # no standard error yet
            continue
        pair = next(q for q in PAIRS if q["sigma"] == sigma and q["target"] == target)
        n = len(g)
        mean, se = g.risk.mean(), g.risk.std(ddof=1) / math.sqrt(n) if n > 1 else math.nan
        eta, p = float(g.eta.iloc[0]), int(g.p.iloc[0])
        t_p, t_inf, t_rf = theory(pair, eta, p), theory(pair, eta, None), theory(pair, 0.0, None)
        rows.append(dict(pair=f"{sigma}/{target}", d=int(d), p=p, rsqp=rsqp, eta=eta, seeds=n,
                         sim=mean, se=se, theory_p=t_p, theory_inf=t_inf, rf=t_rf,
                         z_p=(mean - t_p) / se, z_inf=(mean - t_inf) / se,
                         z_rf=(mean - t_rf) / se))
    return pd.DataFrame(rows)


def matrix_table() -> pd.DataFrame:
    """The validation matrix (validation/data/matrix_summary.csv) with the finite-p theory at each
    simulated width p = beta d beside the p = infinity one (``theory_p``, ``z_p``)."""
    import functools

    df = pd.read_csv(MATRIX)

    @functools.cache
    def problem(sigma, target, beta, alpha0, eta, lam, p):
        base = build_problem(model="srf", sigma=sigma, target=target, alpha0=alpha0, eta=eta,
                             lam=lam,
                             beta=beta)
        return dataclasses.replace(base, p=p)

    values = []
    for r in df.itertuples():
        eta = 0.0 if r.model == "rf" else float(r.eta)
        pr = problem(r.sigma, r.target, float(r.beta), float(r.alpha0), eta, float(r.lam),
                     float(r.beta) * int(r.d))
        values.append(solve_point(pr, float(r.alpha)).risk)
    df["theory_p"] = values
    df["z_p"] = (df.sim_mean - df.theory_p) / df.sim_se
    return df


def matrix_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Share within 3 s.e. and median |relative gap|, p = infinity vs finite p, by model and d
    (he2 targets apart: their s.e. are too large to discriminate)."""
    rows = []
    for (model, d), g in df[df.target != "he2"].groupby(["model", "d"]):
        rows.append(dict(model=model, d=int(d), points=len(g),
                         within3_inf=f"{(g.z_srf.abs() <= 3).mean():.1%}",
                         within3_p=f"{(g.z_p.abs() <= 3).mean():.1%}",
                         med_rel_gap_inf=f"{(g.theory_srf / g.sim_mean - 1).abs().median():.2%}",
                         med_rel_gap_p=f"{(g.theory_p / g.sim_mean - 1).abs().median():.2%}"))
    return pd.DataFrame(rows)


def draw(tab: pd.DataFrame, outdir: pathlib.Path) -> list[pathlib.Path]:
    from matplotlib.figure import Figure

    outdir.mkdir(parents=True, exist_ok=True)
    paths = []
    # collapse: risk against r sqrt(p), theory at p = 1e3, 1e4, 1e5 (one curve if it collapses)
    fig = Figure(figsize=(10, 4))
    axes = fig.subplots(1, len(PAIRS))
    xs = np.geomspace(0.1, 30, 40)
    for ax, pair in zip(axes, PAIRS, strict=True):
        name = f"{pair['sigma']}/{pair['target']}"
        rpe = r_per_eta(pair)
        for p, ls in ((1e3, "-"), (1e4, "--"), (1e5, ":")):
            ys = [theory(pair, x / (math.sqrt(p) * rpe), p) for x in xs]
            ax.plot(xs, ys, ls, color="C0", label=f"finite-p theory, p = {p:.0e}")
        ax.axhline(theory(pair, 0.0, None), color="C3", lw=1, label="random features")
        sub = tab[tab.pair == name]
        for k, (d, g) in enumerate(sub.groupby("d")):
            ax.errorbar(g.rsqp, g.sim, yerr=2 * g.se, fmt="os^"[k % 3], ms=4, capsize=2,
                        color=f"C{k + 1}", label=f"sRF simulation d = p = {d} (±2 s.e.)")
        ax.set_xscale("log")
        ax.set_xlabel("r sqrt(p)")
        ax.set_ylabel(f"test error (alpha = {ALPHA:g})")
        ax.set_title(name)
        ax.legend(fontsize=7)
    fig.tight_layout()
    paths.append(outdir / "finite_width_collapse.png")
    fig.savefig(paths[-1], dpi=120)
    # crossover: risk against eta_tilde at the simulated p, p = 1e5 and infinity
    fig = Figure(figsize=(10, 4))
    axes = fig.subplots(1, len(PAIRS))
    etas = np.geomspace(1e-3, 3, 40)
    for ax, pair in zip(axes, PAIRS, strict=True):
        name = f"{pair['sigma']}/{pair['target']}"
        for k, p in enumerate((1e3, 2e3, 4e3, 1e5, None)):  # the simulated widths first
            ys = [theory(pair, e, p) for e in etas]
            label = "theory p = " + ("inf" if p is None else f"{p:g}")
            ax.plot(etas, ys, color=f"C{k}", label=label)
        sub = tab[tab.pair == name]
        for k, (d, g) in enumerate(sub.groupby("d")):
            ax.errorbar(g.eta, g.sim, yerr=2 * g.se, fmt="os^"[k % 3], ms=4, capsize=2,
                        color=f"C{k}", label=f"sRF d = p = {d}")
        ax.set_xscale("log")
        ax.set_xlabel("eta_tilde")
        ax.set_ylabel(f"test error (alpha = {ALPHA:g})")
        ax.set_title(name)
        ax.legend(fontsize=7)
    fig.tight_layout()
    paths.append(outdir / "finite_width_crossover.png")
    fig.savefig(paths[-1], dpi=120)
    return paths


def draw_phase(outdir: pathlib.Path, n: int = 30) -> pathlib.Path:
    """Gain over random features R_RF(alpha) - R(alpha, eta_tilde) of tanh/tanh at p = 1e3, 1e4
    and infinity on a log eta_tilde axis: at finite p the gain switches on where r sqrt(p) ~ 1."""
    from matplotlib.colors import TwoSlopeNorm
    from matplotlib.figure import Figure

    from asymptotics.api.risk import risk_curve

    pair = PAIRS[0]
    alphas = np.linspace(0.2, 5.0, n)
    etas = np.geomspace(1e-3, 3.0, n)
    rf = risk_curve(alphas, eta=0.0, progress=False, model="srf", **pair)["risk"].to_numpy()
    widths = (1e3, 1e4, None)
    gains = []
    for p in widths:
        gains.append(np.array([rf - risk_curve(alphas, eta=e, progress=False, p=p, model="srf",
                                               **pair)["risk"].to_numpy() for e in etas]))
    span = max(float(np.nanmax(np.abs(g))) for g in gains)
    fig = Figure(figsize=(13, 3.8), constrained_layout=True)
    axes = fig.subplots(1, 3)
    for ax, p, g in zip(axes, widths, gains, strict=True):
        mesh = ax.pcolormesh(alphas, etas, np.ma.masked_invalid(g), shading="nearest",
                             cmap="RdBu_r", norm=TwoSlopeNorm(0.0, -span, span))
        ax.set_yscale("log")
        ax.set_xlabel("alpha = n/d")
        ax.set_ylabel("eta_tilde")
        ax.set_title("R_RF - R at " + ("p = inf" if p is None else f"p = {p:.0e}"))
    fig.colorbar(mesh, ax=axes, label="gain over random features")
    fig.suptitle("tanh/tanh, alpha0 = 2, lam = 0.01, beta = 1 (finite-width theory)",
                 fontsize=10)
    path = outdir / "finite_width_phase.png"
    fig.savefig(path, dpi=120)
    return path


def _md(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in df.itertuples(index=False):
        cells = []
        for v in r:
            if isinstance(v, float):
                cells.append(f"{v:.4g}" if abs(v) < 1e4 else f"{v:.3g}")
            else:
                cells.append(str(v))
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def report(tab: pd.DataFrame, figs: list[pathlib.Path], matrix: pd.DataFrame | None = None) -> str:
    def share(col: str) -> str:
        ok = int((tab[col].abs() <= 3).sum())
        return f"{ok}/{len(tab)}"

    shown = tab.assign(sim=[f"{m:.4f} ± {s:.4f}" for m, s in zip(tab.sim, tab.se, strict=True)])
    shown = shown[["pair", "d", "rsqp", "eta", "seeds", "sim", "theory_p", "z_p", "theory_inf",
                   "z_inf", "rf", "z_rf"]]
    by_d = []
    for d, g in tab.groupby("d"):
        by_d.append(f"d = {d} ({len(g)} points, {int(g.seeds.min())}–{int(g.seeds.max())} "
                    f"seeds): finite p {int((g.z_p.abs() <= 3).sum())}, p = infinity "
                    f"{int((g.z_inf.abs() <= 3).sum())}, RF {int((g.z_rf.abs() <= 3).sum())}; "
                    f"max |z_p| {g.z_p.abs().max():.2f}")
    lines = [
        "# Finite-width theory against sRF simulations",
        "",
        "Generated by `python -m validation.experiments.finite_width` (cache: "
        "`validation/reports/data/finite_width_runs.csv`, one row per repetition). Model `srf` "
        "(features `sigma(sqrt(c) X W0^T + r (X v) 1^T)`, the object the equations describe), "
        f"d = p (beta = 1), alpha = {ALPHA:g}, alpha0 = 2, lam = 0.01, control-variate test "
        "error; eta_tilde chosen so that r sqrt(p) = 0.3, 1, 3, 10. `theory_p`: the finite-width "
        "equations (docs/DERIVATIONS.md §8) at the simulated p; `theory_inf`: the p -> infinity "
        "limit; `rf`: random features (eta_tilde = 0). `z_*` = (sim − theory)/s.e. (the "
        "convention of `validation compare`).",
        "",
        f"Within 3 s.e.: finite-p theory {share('z_p')}, p = infinity theory {share('z_inf')}, "
        f"random features {share('z_rf')}. By size: " + "; ".join(by_d) + ".",
        "",
        "CPU: one core, `OMP_NUM_THREADS=1`; repetition times are in the cache "
        f"(total {_load().seconds.sum() / 3600:.2f} core-hours).",
        "",
        _md(shown),
        "",
    ]
    for f in figs:
        lines += [f"![{f.stem}](figures/{f.name})", ""]
    if matrix is not None:
        srf = matrix[(matrix.model == "srf") & (matrix.target != "he2")]
        worst = srf.reindex(srf.z.abs().sort_values(ascending=False).index).head(12)
        worst = worst[["key", "d", "alpha", "lam", "seeds", "sim_mean", "sim_se", "theory", "z",
                       "theory_p", "z_p"]]
        lines += [
            "## The validation matrix at its own width",
            "",
            "Every point of `validation/data/matrix_summary.csv` (written by "
            "`python -m validation.matrix`) with the finite-p theory at the simulated "
            "p = beta d beside the p = infinity sRF theory (`theory_srf`, `z_srf`; for srf rows "
            "also `theory`, `z`). "
            "Per point: `validation/reports/data/finite_width_matrix.csv`.",
            "",
            _md(matrix_summary(matrix)),
            "",
            "The sRF points (the model the equations describe) with the largest |z| at "
            "p = infinity:",
            "",
            _md(worst),
            "",
        ]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    from asymptotics.cli.common import Parser

    parser = Parser(prog="python -m validation.experiments.finite_width",
                    description=__doc__.splitlines()[0])
    parser.add_argument("--simulate", action="store_true", help="run missing repetitions")
    parser.add_argument("--ds", default="1000,2000",
                        help="sizes d = p (comma list; default: 1000,2000)")
    parser.add_argument("--seeds", type=int, default=16,
                        help="repetitions per point (default: 16)")
    parser.add_argument("--budget-s", type=float, default=1800.0,
                        help="wall budget of --simulate in seconds (default: 1800)")
    parser.add_argument("--no-report", action="store_true", help="simulate only")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        ds = [int(v) for v in args.ds.split(",")]
    except ValueError:
        parser.exit(2, f"error: --ds must be a comma list of integers, got {args.ds!r}\n")
    if args.seeds < 1 or any(d < 10 for d in ds):
        parser.exit(2, "error: --seeds must be >= 1 and every d >= 10\n")
    if not (args.budget_s > 0 and math.isfinite(args.budget_s)):
        parser.exit(2, f"error: --budget-s must be > 0 and finite, got {args.budget_s:g}\n")
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ.setdefault(k, "1")
    if args.simulate:
        simulate(ds, args.seeds, args.budget_s)
    if args.no_report:
        return 0
    tab = table()
    if tab.empty:
        print("no simulations cached; run with --simulate", file=sys.stderr)
        return 1
    figs = draw(tab, REPORTS / "figures") + [draw_phase(REPORTS / "figures")]
    matrix = None
    if MATRIX.exists():
        matrix = matrix_table()
        matrix.to_csv(MATRIX_OUT, index=False, float_format="%.8g")
    text = report(tab, figs, matrix)
    (REPORTS / "FINITE_WIDTH.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
