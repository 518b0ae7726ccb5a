"""Figures of the multi-step experiments (validation.multistep.experiment) and the command that
regenerates validation/reports/MULTISTEP.md: ``python -m figures.multistep_report [--quick]
[--out DIR]`` (run or load the experiments, draw the figures, write the report from the
numbers into ``--out``, by default ``validation/reports`` in a source checkout)."""

from __future__ import annotations

import os

# a command line: render off-screen unless the user chose a backend (before pyplot loads)
os.environ.setdefault("MPLBACKEND", "Agg")

import argparse
import math
import pathlib
import sys
import time

import numpy as np
import pandas as pd

from validation.multistep.experiment import (  # noqa: F401
    ALPHA0,
    ETA3,
    EXPERIMENTS,
    REPORTS,
    SIGMA,
    STAIRCASE,
    load_or_run,
    plan_for,
    summary,
    theory_overlaps,
)
from validation.multistep.simulator import MultiStepConfig
from validation.multistep.text import build_report


def _style():
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 9, "axes.grid": True, "grid.alpha": 0.3,
                         "legend.frameon": False, "legend.fontsize": 7, "errorbar.capsize": 2,
                         "mathtext.fontset": "cm"})
    return plt


COLORS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"]


def _reference(ax, ds) -> None:
    d = np.geomspace(min(ds), max(ds), 50)
    ax.plot(d, np.sqrt(2 / (np.pi * d)), "k:", lw=1,
            label=r"initialisation $\sqrt{2/(\pi d)}$")


def _vs_d(ax, s: pd.DataFrame, series: list[tuple[int, int, str, str, str]], title: str) -> None:
    """Overlap vs d for (step, direction, label, marker, linestyle); colour = direction."""
    for t, j, label, marker, ls in series:
        g = s[(s["step"] == t) & (s["direction"] == j)].sort_values("d")
        ax.errorbar(g["d"], g["mean_overlap_mean"], yerr=g["mean_overlap_se"], marker=marker,
                    ms=4, color=COLORS[(j - 1) % len(COLORS)], ls=ls, label=label,
                    mfc="white" if ls != "-" else None)
    _reference(ax, s["d"].unique())
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("$d$")
    ax.set_ylabel(r"mean$_k\ |\langle w_k,\theta_j\rangle|/|w_k|$")
    ax.set_title(title)
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))


def draw_figures(data: dict[str, pd.DataFrame], outdir: pathlib.Path,
                 prefix: str) -> list[pathlib.Path]:
    """The three PNGs (staircase, leap 2, leap 4) from the per-repetition rows."""
    plt = _style()
    outdir.mkdir(parents=True, exist_ok=True)
    paths = []
    s = summary(data["staircase"])
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.9), constrained_layout=True)
    dmax = int(s["d"].max())
    g = s[s["d"] == dmax]
    width = 0.26
    for j in (1, 2, 3):
        gj = g[g["direction"] == j].sort_values("step")
        axes[0].bar(gj["step"] + (j - 2) * width, gj["mean_overlap_mean"], width,
                    yerr=gj["mean_overlap_se"], color=COLORS[j - 1], label=rf"$\theta_{j}$")
        axes[0].errorbar(gj["step"] + (j - 2) * width, gj["max_overlap_mean"], fmt="v",
                         color="k", ms=3, label="max over neurons" if j == 1 else None)
    th = theory_overlaps(MultiStepConfig(d=dmax, target=STAIRCASE, sigma=SIGMA, steps=3,
                                         alpha0=ALPHA0, eta=ETA3))
    for j in (1, 2, 3):
        tj = th[(th["direction"] == j) & (th["theory"] > 0.05)]
        axes[0].plot(tj["step"] + (j - 2) * width, tj["theory"], "_", color="k", ms=14, mew=2,
                     label=r"theory $d\to\infty$ (THEORY §12)" if j == 1 else None)
    axes[0].axhline(math.sqrt(2 / (math.pi * dmax)), color="k", ls=":", lw=1,
                    label=r"init. $\sqrt{2/(\pi d)}$")
    axes[0].set_xticks(range(4), ["init", "step 1", "step 2", "step 3"])
    axes[0].set_ylabel(r"mean$_k\ |\langle w_k,\theta_j\rangle|/|w_k|$")
    axes[0].set_title(rf"$g=z_1+z_1z_2+z_1z_2z_3$, $n=16d$, $d={dmax}$ (bars: mean $\pm$ s.e.)")
    axes[0].legend(ncol=2)
    for r in th[th["theory"] > 0.05].itertuples():
        if (r.step, r.direction) in ((1, 1), (2, 2), (3, 3)):
            axes[1].axhline(r.theory, color=COLORS[(r.direction - 1) % len(COLORS)], lw=0.8,
                            ls=(0, (6, 3)), alpha=0.7)
    _vs_d(axes[1], s, [(1, 1, r"$\theta_1$ after step 1", "o", "-"),
                       (1, 2, r"$\theta_2$ after step 1", "o", "--"),
                       (2, 2, r"$\theta_2$ after step 2", "s", "-"),
                       (2, 3, r"$\theta_3$ after step 2", "s", "--"),
                       (3, 3, r"$\theta_3$ after step 3", "D", "-")],
          "overlap vs $d$ (error bars: s.e. over seeds; dashed: theory)")
    paths.append(outdir / f"{prefix}_staircase.png")
    _save(fig, paths[-1])
    plt.close(fig)

    fig, ax = plt.subplots(1, 1, figsize=(7.2, 3.9), constrained_layout=True)
    lin, quad = summary(data["he2_linear"]), summary(data["he2_quadratic"])
    for t, marker in ((1, "o"), (2, "s"), (3, "^")):
        gl = lin[lin["step"] == t].sort_values("d")
        ax.errorbar(gl["d"], gl["mean_overlap_mean"], yerr=gl["mean_overlap_se"], marker=marker,
                    ms=4, color=COLORS[t - 1], label=f"$n=16d$, after step {t}")
    gq = quad[quad["step"] == 1].sort_values("d")
    ax.errorbar(gq["d"], gq["mean_overlap_mean"], yerr=gq["mean_overlap_se"], marker="D", ms=4,
                color=COLORS[3], label=r"$n=d^2$, one step ($\eta=p\,d^{1/2}$)")
    _reference(ax, np.concatenate([lin["d"].unique(), quad["d"].unique()]))
    paths.append(_finish_vs_d(
        fig, ax, r"mean$_k\ |\langle w_k,\theta_1\rangle|/|w_k|$",
        r"$g=\mathrm{He}_2(z_1)$ (leap index 2)", outdir / f"{prefix}_leap2.png"))

    fig, ax = plt.subplots(1, 1, figsize=(7.2, 3.9), constrained_layout=True)
    s4 = summary(data["leap4"])
    pooled = s4.groupby(["d", "step"], as_index=False)[["mean_overlap_mean"]].mean()
    se = s4.groupby(["d", "step"])["mean_overlap_se"].apply(
        lambda v: float(np.sqrt(np.sum(v**2)) / len(v))).reset_index()
    pooled = pooled.merge(se, on=["d", "step"])
    for t in range(1, int(pooled["step"].max()) + 1):
        g = pooled[pooled["step"] == t].sort_values("d")
        ax.errorbar(g["d"], g["mean_overlap_mean"], yerr=g["mean_overlap_se"],
                    marker="os^Dv"[t - 1], ms=4, color=COLORS[t - 1], label=f"after step {t}")
    _reference(ax, pooled["d"].unique())
    paths.append(_finish_vs_d(
        fig, ax, r"mean over $k$ and $j=1..4$ of $|\langle w_k,\theta_j\rangle|/|w_k|$",
        r"$g=z_1z_2z_3z_4$ (leap index 4), $n=16d$", outdir / f"{prefix}_leap4.png"))
    return paths


def _save(fig, path: pathlib.Path) -> None:
    """PNG (150 dpi) and a PDF beside it, without timestamps."""
    fig.savefig(path, dpi=150, metadata={"Software": None})
    fig.savefig(path.with_suffix(".pdf"), metadata={"Creator": None, "Producer": None,
                                                    "CreationDate": None})


def _finish_vs_d(fig, ax, ylabel: str, title: str, path: pathlib.Path) -> pathlib.Path:
    """Log-log overlap-vs-d panel: axes, labels, legend outside, saved (PNG + PDF), closed."""
    import matplotlib.pyplot as plt

    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("$d$")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
    _save(fig, path)
    plt.close(fig)
    return path


def figure_staircase(outdir: pathlib.Path, quick: bool) -> list[pathlib.Path]:
    """Figures of the experiments into ``outdir`` (cached data when present, else simulated at
    the ``quick`` or full sizes); returns the PNG paths."""
    plan = plan_for(quick)
    data = {name: load_or_run(name, plan, log=lambda _m: None)
            for name in ("staircase", "he2_linear", "he2_quadratic", "leap4")}
    return draw_figures(data, pathlib.Path(outdir), "multistep")


# ------------------------------------------------------------------------------------------------
# report

def build_parser() -> argparse.ArgumentParser:
    from asymptotics.cli.common import Parser, add_quiet, integer

    parser = Parser(prog="python -m figures.multistep_report",
                    description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    parser.add_argument("--force", action="store_true", help="ignore the CSV cache")
    parser.add_argument("--n-jobs", type=integer("--n-jobs", 1), default=1,
                        help="worker processes for the repetitions to simulate (default 1)")
    parser.add_argument("--out", default=None,
                        help="directory of the report and its figures (default: "
                             "validation/reports in a source checkout; required when the "
                             "package is installed)")
    add_quiet(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Command line: run (or load) the experiments, draw the figures, write the report."""
    from asymptotics.cli.common import apply_quiet, check_writable, fail
    from asymptotics.core.progress import Progress
    from validation.campaign.report import report_dir, write_text

    parser = build_parser()
    args = parser.parse_args(argv)
    quiet = apply_quiet(args)
    try:
        out = report_dir(args.out, REPORTS)
        check_writable(out, "--out", directory=True)
    except ValueError as exc:
        return fail(str(exc))
    plan = plan_for(args.quick)
    t0 = time.perf_counter()
    # stages: each experiment (run or loaded; a campaign reports its own progress), the figures
    with Progress(len(EXPERIMENTS) + 1, "multistep report", unit="stages",
                  enabled=not quiet) as bar:
        data = {name: load_or_run(name, plan, force=args.force, n_jobs=args.n_jobs)
                for name in bar.iter(EXPERIMENTS)}
        figs = draw_figures(data, out / "figures", plan.prefix)
        bar.update()
    text, ok = build_report(data, plan, figs, time.perf_counter() - t0)
    if args.quick:
        print(text)
    else:
        path = write_text(out, "MULTISTEP.md", text)
        print(f"wrote {path}; predictions {'agree' if ok else 'DISAGREE'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
