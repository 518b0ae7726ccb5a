"""Finite-width theory against sRF simulations (docs/DERIVATIONS.md §8).

``python -m validation.matrix.finite_width [--simulate] [--ds 1000,2000] [--seeds 16]
[--budget-s S] [--n-jobs N] [--out DIR]`` runs sRF repetitions (``validation.protocol.simulator``,
model
``srf``, control-variate test error) at ``d = p`` (beta = 1) with eta_tilde chosen so that
``r sqrt(p)`` is 0.3, 1, 3 and 10, for two activation/target pairs: a
:class:`validation.campaign.Campaign` with one task per repetition (a SQLite store, resumable: a
repetition already stored is never re-run; repetition ``i`` is child ``i`` of
``SeedSequence(SEED)``, so adding seeds extends a point), exported sorted to
``validation/reports/data/finite_width_runs.csv``, one row per repetition. Without
``--simulate`` it only reads that CSV. It then writes into ``--out`` (default
``validation/reports`` in a source checkout) ``FINITE_WIDTH.md`` (the table: simulation
mean ± s.e. against the finite-p theory, the p = infinity theory and random features, each with
its distance in s.e.), ``figures/finite_width_*.png`` (the collapse on ``r sqrt(p)`` and the
crossover in eta_tilde at the simulated p, p = 1e5 and infinity) and
``data/finite_width_matrix.csv``.
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
from validation.campaign import Campaign, Schema, Store, plots, run_campaign
from validation.campaign.report import Markdown, report_dir, write_text
from validation.paths import data_file

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
#: the runs: one row per repetition of one (pair, d, r sqrt(p))
SCHEMA = Schema.of(sigma=str, target=str, alpha0=float, lam=float, beta=float, d=int, p=int,
                   eta=float, rsqp=float, alpha=float, rep=int, risk=float, seconds=float)
COLUMNS = list(SCHEMA.names)
REGENERATE = "python -m validation.matrix.finite_width --out validation/reports"


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


def runs_paths() -> tuple[pathlib.Path, pathlib.Path]:
    """``(read, write)`` paths of the runs' CSV (the committed data, or a written copy)."""
    return data_file(RUNS, "validation", "reports", "data")


def _load() -> pd.DataFrame:
    path = runs_paths()[0]
    if path.exists():
        return pd.read_csv(path)
    return pd.DataFrame(columns=COLUMNS)


def _task(job: tuple[dict, int, float, int]) -> list[dict]:
    """One sRF repetition of ``(pair, d, r sqrt(p), rep)``: repetition ``rep`` is child ``rep``
    of ``SeedSequence(SEED)``, so adding seeds extends a point."""
    from validation.protocol.simulator import Setting, simulate_grid_once

    pair, d, rsqp, rep = job
    p = int(round(pair["beta"] * d))
    eta = eta_for(pair, rsqp, p)
    s = Setting(model="srf", sigma=pair["sigma"], target=pair["target"], alpha=ALPHA,
                alpha0=pair["alpha0"], eta=eta, lam=pair["lam"], beta=pair["beta"], d=d,
                estimator="cv")
    child = np.random.SeedSequence(SEED).spawn(rep + 1)[rep]
    t0 = time.perf_counter()
    value = float(simulate_grid_once(s, [ALPHA], [pair["lam"]], child)[0, 0])
    return [dict(sigma=pair["sigma"], target=pair["target"], alpha0=pair["alpha0"],
                 lam=pair["lam"], beta=pair["beta"], d=d, p=p, eta=eta, rsqp=rsqp, alpha=ALPHA,
                 rep=rep, risk=value, seconds=time.perf_counter() - t0)]


def campaign(ds: list[int], seeds: int) -> Campaign:
    """The repetitions ``0..seeds-1`` at every size of ``ds``, pair and r sqrt(p), a repetition
    of all points first (the cheapest sizes first): one task per repetition, keyed by
    (sigma, target, d, rsqp, rep)."""
    plan = tuple((pair, int(d), float(rsqp), rep) for rep in range(seeds) for d in sorted(ds)
                 for pair in PAIRS for rsqp in RSQP)
    return Campaign("finite_width_runs", plan, _task, SCHEMA,
                    key_columns=("sigma", "target", "d", "rsqp", "rep"),
                    key=lambda j: (j[0]["sigma"], j[0]["target"], j[1], j[2], j[3]),
                    record=lambda j: {"job": j, "alpha": ALPHA, "seed": SEED})


def simulate(ds: list[int], seeds: int, budget_s: float, *, n_jobs: int = 1,
             store: str | pathlib.Path | None = None, csv: str | pathlib.Path | None = None,
             progress: bool = True) -> int:
    """Run the missing repetitions (:func:`validation.campaign.run_campaign`; cheapest sizes
    first, none started after ``budget_s`` seconds) into the SQLite ``store`` (default beside
    the CSV; it starts from the runs of the CSV), then export every run to ``csv`` (default:
    the committed CSV in a checkout). Returns the number of repetitions run."""
    c = campaign(ds, seeds)
    read, write = runs_paths()
    csv_path = pathlib.Path(csv) if csv is not None else write
    with Store(pathlib.Path(store) if store is not None else write.with_suffix(".sqlite")) as st:
        for source in dict.fromkeys([csv_path, *(() if csv is not None else (read,))]):
            if source.exists():
                st.import_csv(c, source)
        out = run_campaign(c, st, n_jobs=n_jobs, budget=budget_s, progress=progress)
        st.export_csv(c, csv_path)
    return out.ran


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


def draw(tab: pd.DataFrame, out: pathlib.Path) -> list[pathlib.Path]:
    """The collapse on r sqrt(p) and the crossover in eta_tilde (``out/figures``); returns their
    paths relative to ``out``."""
    paths = []
    # collapse: risk against r sqrt(p), theory at p = 1e3, 1e4, 1e5 (one curve if it collapses)
    fig, axes = plots.figure(len(PAIRS), 1, width=5.0, height=4.0)
    xs = np.geomspace(0.1, 30, 40)
    for ax, pair in zip(axes[0], PAIRS, strict=True):
        name = f"{pair['sigma']}/{pair['target']}"
        rpe = r_per_eta(pair)
        for p, ls in ((1e3, "-"), (1e4, "--"), (1e5, ":")):
            ys = [theory(pair, x / (math.sqrt(p) * rpe), p) for x in xs]
            ax.plot(xs, ys, ls, color="C0", label=f"finite-p theory, p = {p:.0e}")
        ax.axhline(theory(pair, 0.0, None), color="C3", lw=1, label="random features")
        sub = tab[tab.pair == name]
        for k, (d, g) in enumerate(sub.groupby("d")):
            plots.errorbars(ax, g.rsqp, g.sim, g.se, k=k, color=f"C{k + 1}",
                            label=f"sRF simulation d = p = {d} (±2 s.e.)")
        ax.set_xscale("log")
        ax.set_xlabel("r sqrt(p)")
        ax.set_ylabel(f"test error (alpha = {ALPHA:g})")
        ax.set_title(name)
        ax.legend(fontsize=7)
    paths.append(plots.save(fig, out, "finite_width_collapse"))
    # crossover: risk against eta_tilde at the simulated p, p = 1e5 and infinity
    fig, axes = plots.figure(len(PAIRS), 1, width=5.0, height=4.0)
    etas = np.geomspace(1e-3, 3, 40)
    for ax, pair in zip(axes[0], PAIRS, strict=True):
        name = f"{pair['sigma']}/{pair['target']}"
        for k, p in enumerate((1e3, 2e3, 4e3, 1e5, None)):  # the simulated widths first
            ys = [theory(pair, e, p) for e in etas]
            label = "theory p = " + ("inf" if p is None else f"{p:g}")
            ax.plot(etas, ys, color=f"C{k}", label=label)
        sub = tab[tab.pair == name]
        for k, (d, g) in enumerate(sub.groupby("d")):
            plots.errorbars(ax, g.eta, g.sim, g.se, k=k, label=f"sRF d = p = {d}")
        ax.set_xscale("log")
        ax.set_xlabel("eta_tilde")
        ax.set_ylabel(f"test error (alpha = {ALPHA:g})")
        ax.set_title(name)
        ax.legend(fontsize=7)
    paths.append(plots.save(fig, out, "finite_width_crossover"))
    return paths


def draw_phase(out: pathlib.Path, n: int = 30) -> pathlib.Path:
    """Gain over random features R_RF(alpha) - R(alpha, eta_tilde) of tanh/tanh at p = 1e3, 1e4
    and infinity on a log eta_tilde axis: at finite p the gain switches on where r sqrt(p) ~ 1.
    Returns the figure's path relative to ``out``."""
    from matplotlib.colors import TwoSlopeNorm

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
    fig, axes = plots.figure(3, 1, width=13 / 3, height=3.8)
    for ax, p, g in zip(axes[0], widths, gains, strict=True):
        mesh = ax.pcolormesh(alphas, etas, np.ma.masked_invalid(g), shading="nearest",
                             cmap="RdBu_r", norm=TwoSlopeNorm(0.0, -span, span))
        ax.set_yscale("log")
        ax.set_xlabel("alpha = n/d")
        ax.set_ylabel("eta_tilde")
        ax.set_title("R_RF - R at " + ("p = inf" if p is None else f"p = {p:.0e}"))
    fig.colorbar(mesh, ax=axes[0], label="gain over random features")
    fig.suptitle("tanh/tanh, alpha0 = 2, lam = 0.01, beta = 1 (finite-width theory)",
                 fontsize=10)
    return plots.save(fig, out, "finite_width_phase")


def _num(v: float) -> str:
    return f"{v:.4g}" if abs(v) < 1e4 else f"{v:.3g}"


def report(tab: pd.DataFrame, figs: list[pathlib.Path], matrix: pd.DataFrame | None = None) -> str:
    """The text of ``FINITE_WIDTH.md`` (``figs``: the figures' paths relative to the report)."""
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
    md = Markdown("Finite-width theory against sRF simulations")
    md.para("Generated by `python -m validation.matrix.finite_width` (cache: "
            "`validation/reports/data/finite_width_runs.csv`, one row per repetition). Model "
            "`srf` (features `sigma(sqrt(c) X W0^T + r (X v) 1^T)`, the object the equations "
            f"describe), d = p (beta = 1), alpha = {ALPHA:g}, alpha0 = 2, lam = 0.01, "
            "control-variate test error; eta_tilde chosen so that r sqrt(p) = 0.3, 1, 3, 10. "
            "`theory_p`: the finite-width equations (docs/DERIVATIONS.md §8) at the simulated p; "
            "`theory_inf`: the p -> infinity limit; `rf`: random features (eta_tilde = 0). "
            "`z_*` = (sim − theory)/s.e. (the convention of `validation compare`).")
    md.para(f"Within 3 s.e.: finite-p theory {share('z_p')}, p = infinity theory "
            f"{share('z_inf')}, random features {share('z_rf')}. By size: " + "; ".join(by_d)
            + ".")
    md.para("CPU: one core, `OMP_NUM_THREADS=1`; repetition times are in the cache "
            f"(total {_load().seconds.sum() / 3600:.2f} core-hours).")
    md.table(shown, number=_num)
    for f in figs:
        md.para(f"![{f.stem}]({f.as_posix()})")
    if matrix is not None:
        srf = matrix[(matrix.model == "srf") & (matrix.target != "he2")]
        worst = srf.reindex(srf.z.abs().sort_values(ascending=False).index).head(12)
        worst = worst[["key", "d", "alpha", "lam", "seeds", "sim_mean", "sim_se", "theory", "z",
                       "theory_p", "z_p"]]
        md.heading("The validation matrix at its own width")
        md.para("Every point of `validation/data/matrix_summary.csv` (written by "
                "`python -m validation.matrix`) with the finite-p theory at the simulated "
                "p = beta d beside the p = infinity sRF theory (`theory_srf`, `z_srf`; for srf "
                "rows also `theory`, `z`). Per point: "
                "`validation/reports/data/finite_width_matrix.csv`.")
        md.table(matrix_summary(matrix), number=_num)
        md.para("The sRF points (the model the equations describe) with the largest |z| at "
                "p = infinity:")
        md.table(worst, number=_num)
    md.regenerate(REGENERATE)
    return md.text()


def build_parser() -> argparse.ArgumentParser:
    from asymptotics.cli.common import Parser, add_quiet, integer

    parser = Parser(prog="python -m validation.matrix.finite_width",
                    description=__doc__.splitlines()[0])
    parser.add_argument("--simulate", action="store_true", help="run missing repetitions")
    parser.add_argument("--ds", default="1000,2000",
                        help="sizes d = p (comma list; default: 1000,2000)")
    parser.add_argument("--seeds", type=int, default=16,
                        help="repetitions per point (default: 16)")
    parser.add_argument("--budget-s", type=float, default=1800.0,
                        help="wall budget of --simulate in seconds (default: 1800)")
    parser.add_argument("--n-jobs", type=integer("--n-jobs", 1), default=1,
                        help="worker processes of --simulate (default 1)")
    parser.add_argument("--store", default=None,
                        help="the SQLite store of the runs (default: finite_width_runs.sqlite "
                             "beside the CSV; it starts from the runs of the CSV)")
    parser.add_argument("--out", default=None,
                        help="directory of the report, its figures (figures/) and the matrix "
                             "table (data/) (default: validation/reports in a source checkout; "
                             "required when the package is installed)")
    add_quiet(parser)
    parser.add_argument("--no-report", action="store_true", help="simulate only")
    return parser


def main(argv: list[str] | None = None) -> int:
    from asymptotics.cli.common import apply_quiet, check_writable, fail
    from asymptotics.core.progress import Progress

    parser = build_parser()
    args = parser.parse_args(argv)
    apply_quiet(args)
    try:
        ds = [int(v) for v in args.ds.split(",")]
    except ValueError:
        parser.exit(2, f"error: --ds must be a comma list of integers, got {args.ds!r}\n")
    if args.seeds < 1 or any(d < 10 for d in ds):
        parser.exit(2, "error: --seeds must be >= 1 and every d >= 10\n")
    if not (args.budget_s > 0 and math.isfinite(args.budget_s)):
        parser.exit(2, f"error: --budget-s must be > 0 and finite, got {args.budget_s:g}\n")
    out = None
    if not args.no_report:
        try:
            out = report_dir(args.out)
            check_writable(out, "--out", directory=True)
        except ValueError as exc:
            return fail(str(exc))
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ.setdefault(k, "1")
    if args.simulate:
        try:
            check_writable(args.store, "--store", suffixes=(".sqlite", ".db"))
            simulate(ds, args.seeds, args.budget_s, n_jobs=args.n_jobs, store=args.store,
                     progress=not args.quiet)
        except ValueError as exc:
            return fail(str(exc))
    if out is None:
        return 0
    # the report: the theory at every point, the figures (theory curves), the matrix table
    with Progress(4, "finite-width report", unit="stages", enabled=not args.quiet) as bar:
        tab = table()
        bar.update()
        if tab.empty:
            print("no simulations cached; run with --simulate", file=sys.stderr)
            return 1
        figs = draw(tab, out)
        bar.update()
        figs.append(draw_phase(out))
        bar.update()
        matrix = None
        if MATRIX.exists():
            matrix = matrix_table()
            (out / "data").mkdir(parents=True, exist_ok=True)
            matrix.to_csv(out / "data" / MATRIX_OUT.name, index=False, float_format="%.8g")
        bar.update()
    text = report(tab, figs, matrix)
    write_text(out, "FINITE_WIDTH.md", text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
