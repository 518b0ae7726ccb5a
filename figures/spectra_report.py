"""Figures of the spectra experiments (validation.experiments.spectra) and the command that
regenerates validation/reports/SPECTRA.md: ``python -m figures.spectra_report [--quick]
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

from asymptotics.measures.marchenko_pastur import mp_median, mp_singular_density
from asymptotics.spectra import two_step_weights
from validation.experiments.spectra import (  # noqa: F401
    ALPHA0,
    ETA1,
    ETA2,
    EXPERIMENTS,
    REPORTS,
    REUSE_TARGETS,
    SIGMA,
    Plan,
    load_or_run,
    plan_for,
    spectrum_data,
)
from validation.experiments.spectra_tables import (
    counts_vs_d,
    exponent_table,
    grid_table,
    reuse_table,
    signal_share,
)
from validation.experiments.spectra_text import build_report
from validation.spectrum import bulk_edge


def _style():
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 9, "axes.titlesize": 9, "legend.fontsize": 7,
                         "legend.frameon": False, "mathtext.fontset": "cm"})
    return plt


def _save(fig, path: pathlib.Path) -> pathlib.Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150, metadata={"Software": None})
    fig.savefig(path.with_suffix(".pdf"), metadata={"Creator": None, "Producer": None,
                                                    "CreationDate": None})
    return path


def _boundaries(ax, a1_max: float = 0.45) -> None:
    x = np.linspace(0.0, a1_max, 200)
    for k in range(1, 6):
        y = k * (0.5 - x)
        ax.plot(x, y, color="k", lw=0.8, ls="--")
    ax.set_xlim(-0.025, max(0.425, a1_max))
    ax.set_ylim(0.025, 0.475)


def draw_phase_diagram(table: pd.DataFrame, outdir: pathlib.Path, prefix: str) -> pathlib.Path:
    """Measured (colour, mean over seeds) vs predicted counts (text 'measured/predicted') over
    (a1, a2), one panel per d; dashed lines a2 = k (1/2 - a1) separate the predicted counts."""
    plt = _style()
    ds = sorted(table.d.unique())
    fig, axes = plt.subplots(1, len(ds) + 1, figsize=(3.3 * (len(ds) + 1), 3.2),
                             constrained_layout=True, squeeze=False)
    vmax = max(float(table.predicted.max()), float(table.measured_max.max()), 1.0)
    t0 = table[table.d == ds[-1]]
    panels = [("predicted", t0, "predicted $\\lfloor a_2/(1/2-a_1)\\rfloor$")]
    panels += [(f"d={d}", table[table.d == d], f"measured, d = {d}") for d in ds]
    im = None
    for ax, (_, t, title) in zip(axes[0], panels, strict=True):
        val = t.predicted if title.startswith("predicted") else t.measured_mean
        im = ax.scatter(t.a1, t.a2, c=val, s=260, marker="s", cmap="viridis", vmin=0, vmax=vmax)
        for a1, a2, m, p in zip(t.a1, t.a2, t.measured_mean, t.predicted, strict=True):
            text = f"{p:d}" if title.startswith("predicted") else f"{m:.3g}/{p:d}"
            ok = title.startswith("predicted") or m == p
            ax.text(a1, a2, text, ha="center", va="center", fontsize=5.5,
                    color="w" if ok else "#FF5555", fontweight="normal" if ok else "bold")
        _boundaries(ax)
        ax.set_xlabel("$a_1$")
        ax.set_title(title)
    axes[0, 0].set_ylabel("$a_2$")
    fig.colorbar(im, ax=axes[0, -1], label="outliers beyond the leading one")
    fig.suptitle("Outliers of $W_2$: measured/predicted (red: mismatch); dashed: "
                 "$a_2 = k(1/2-a_1)$", fontsize=9)
    return _save(fig, outdir / f"{prefix}_phase_diagram.png")


def draw_counts_vs_d(counts: pd.DataFrame, scaling: pd.DataFrame, exps: pd.DataFrame,
                     outdir: pathlib.Path, prefix: str) -> pathlib.Path:
    plt = _style()
    fig, axes = plt.subplots(1, 2, figsize=(10.5, 3.5), constrained_layout=True)
    ax = axes[0]
    for i, ((a1, a2), t) in enumerate(counts.groupby(["a1", "a2"], sort=True)):
        c = f"C{i}"
        jitter = 1 + 0.03 * (i - 2)
        ax.errorbar(t.d * jitter, t.measured_mean,
                    yerr=[t.measured_mean - t.measured_min, t.measured_max - t.measured_mean],
                    fmt="o-", color=c, ms=4, label=f"$a_1$={a1:g}, $a_2$={a2:g}")
        ax.axhline(int(t.predicted.iloc[0]) + 0.02 * (i - 2), color=c, ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_xlabel("d")
    ax.set_ylabel("outliers beyond the leading one")
    ax.set_title("counts vs d (dotted: predicted; bars: min-max over seeds)")
    ax.legend()
    ax = axes[1]
    for i, ((a1, a2), t) in enumerate(scaling.groupby(["a1", "a2"], sort=True)):
        for k, mk in ((1, "o"), (2, "s")):
            s = t.assign(sig=signal_share(t, k + 1)).groupby("p")["sig"].mean()
            if (s > 0).sum() < 2:
                continue
            e = exps[(exps.a1 == a1) & (exps.a2 == a2) & (exps.k == k)].iloc[0]
            ax.loglog(s.index, s.values, mk + "-", color=f"C{i}", ms=4,
                      label=f"({a1:g},{a2:g}) k={k}: fit {e.fitted:.2f}, $e_k$={e.e_k:.2f}")
    ax.set_xlabel("p")
    ax.set_ylabel("signal on readout degree k+1")
    ax.set_title("term amplitudes $\\sqrt{A^2-F^2}$ vs p")
    ax.legend(fontsize=5.5, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _save(fig, outdir / f"{prefix}_counts_vs_d.png")


def draw_reuse(table: pd.DataFrame, outdir: pathlib.Path, prefix: str) -> pathlib.Path:
    plt = _style()
    fig, ax = plt.subplots(figsize=(5.2, 3.2), constrained_layout=True)
    names = list(REUSE_TARGETS)
    for j, batch in enumerate(("fresh", "reused")):
        t = table[table.batch == batch].set_index("target_name").reindex(names)
        x = np.arange(len(names)) + (j - 0.5) * 0.35
        ax.bar(x, t.theta2, width=0.33, yerr=t.theta2_sd, label=f"{batch} batch",
               color="#0072B2" if batch == "fresh" else "#D55E00")
    r = table.random.mean()
    ax.axhline(r, color="k", ls=":", lw=1, label=f"random direction, sqrt(r/d) = {r:.3f}")
    ax.set_xticks(np.arange(len(names)), names)
    ax.set_ylabel(r"$|P_{\rm outliers}\,\theta_2|$")
    ax.set_title("second direction in the outliers' right singular subspace (bars: sd)")
    ax.legend()
    return _save(fig, outdir / f"{prefix}_reuse.png")

def figure_spectrum(outdir: pathlib.Path, quick: bool) -> list[pathlib.Path]:
    """Histogram of the singular values of W0 and of W2 after two steps at (a1, a2) =
    (0.35, 0.35) with the Marchenko-Pastur density (W0: exact scale 1; W2: median-matched scale)
    and the outliers above the fitted edge marked; for W2 also the law and outliers predicted at
    that d (:func:`asymptotics.spectra.two_step_weights`). Data cached as
    ``spectra[_quick]_spectrum.csv``.
    """
    plt = _style()
    plan = plan_for(quick)
    df = spectrum_data(quick)
    p, d = int(df.p.iloc[0]), int(df.d.iloc[0])
    beta = p / d
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.3), constrained_layout=True)
    for ax, name in zip(axes, ("W0", "W2"), strict=True):
        s = np.sort(df[df.matrix == name].s.to_numpy())[::-1]
        edge = bulk_edge(s, (p, d))
        bulk = s[edge.n_outliers:]
        out = s[: edge.n_outliers]
        shown = out[out <= 2.0 * bulk.max()]
        hi = max(float(bulk.max()) * 1.12, float(shown.max()) * 1.05 if shown.size else 0.0)
        bins = np.linspace(0, hi, 70)
        ax.hist(bulk, bins=bins, density=True, color="#0072B2", alpha=0.55, label="bulk")
        f, q = max(1.0, beta), min(beta, 1.0 / beta)
        scale = 1.0 if name == "W0" else float(np.median(s)) / math.sqrt(f * mp_median(q))
        x = np.linspace(1e-4, hi, 500)
        ax.plot(x, mp_singular_density(x, beta, scale), color="#D55E00",
                label=f"Marchenko-Pastur, scale {scale:.3f}")
        ax.axvline(edge.threshold, color="k", ls=":", lw=1, label="outlier threshold")
        if name == "W2":  # the prediction at this d (docs/THEORY.md §16.7)
            pred = two_step_weights(SIGMA, "linear", a1=float(df.a1.iloc[0]),
                                    a2=float(df.a2.iloc[0]), d=d, eta1=ETA1, eta2=ETA2,
                                    beta=beta, alpha0=ALPHA0)
            xs = x[x < pred.edge]
            ax.plot(xs, 2.0 * xs * pred.density(xs * xs), color="#009E73", lw=1.2,
                    label="predicted at this d")
        ymax = ax.get_ylim()[1]
        near = out[out <= hi]
        if near.size:
            ax.plot(near, np.full(near.size, 0.06 * ymax), "v", color="#CC0000", ms=7,
                    label=f"outliers ({edge.n_outliers})")
        if name == "W2":
            pnear = np.array([v for v in pred.outliers if v <= hi])
            if pnear.size:
                ax.plot(pnear, np.full(pnear.size, 0.14 * ymax), "^", color="#009E73", ms=7,
                        label=f"predicted outliers ({len(pred.outliers)})")
        far = out[out > hi]
        if far.size:
            ax.annotate("outside: " + ", ".join(f"{v:.3g}" for v in far)
                        + ("" if name == "W0" else
                           f" (predicted {', '.join(f'{v:.3g}' for v in pred.outliers if v > hi)})")
                        + r" $\rightarrow$",
                        xy=(0.97, 0.45), xycoords="axes fraction", ha="right", fontsize=7,
                        color="#CC0000")
        ax.set_xlabel("singular value")
        ax.set_title(f"{name}" + ("" if name == "W0" else
                                  f" after two steps, $a_1$={df.a1.iloc[0]:g}, "
                                  f"$a_2$={df.a2.iloc[0]:g}") + f", p={p}, d={d}")
        ax.legend(loc="upper left")
    axes[0].set_ylabel("density")
    return [_save(fig, outdir / f"{plan.prefix}_spectrum.png")]


def figure_phase_diagram(outdir: pathlib.Path, quick: bool) -> list[pathlib.Path]:
    """The phase diagram (measured vs predicted outlier counts over (a1, a2)) from the cached
    ``grid`` rows (simulated first if the cache lacks them)."""
    plan = plan_for(quick)
    df = load_or_run("grid", plan, log=lambda _: None)
    return [draw_phase_diagram(grid_table(df), outdir, plan.prefix)]


# ------------------------------------------------------------------------------------------------
# report

def draw_figures(data: dict[str, pd.DataFrame], outdir: pathlib.Path, plan: Plan,
                 quick: bool) -> list[pathlib.Path]:
    counts = counts_vs_d(data["scaling"])
    exps = exponent_table(data["scaling"])
    return [draw_phase_diagram(grid_table(data["grid"]), outdir, plan.prefix),
            draw_counts_vs_d(counts, data["scaling"], exps, outdir, plan.prefix),
            draw_reuse(reuse_table(data["reuse"]), outdir, plan.prefix),
            *figure_spectrum(outdir, quick)]


def build_parser() -> argparse.ArgumentParser:
    from asymptotics.cli.common import Parser, add_quiet, integer

    parser = Parser(prog="python -m figures.spectra_report",
                    description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    parser.add_argument("--force", action="store_true", help="ignore the CSV cache")
    parser.add_argument("--threads", type=int, default=None,
                        help="BLAS threads (default: the library's; 1 is fastest on a busy "
                             "machine)")
    parser.add_argument("--n-jobs", type=integer("--n-jobs", 1), default=1,
                        help="worker processes for the configurations to simulate (default 1)")
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
    if args.threads is not None and args.threads < 1:
        parser.error(f"--threads must be >= 1, got {args.threads}")
    try:
        out = report_dir(args.out, REPORTS)
        check_writable(out, "--out", directory=True)
    except ValueError as exc:
        return fail(str(exc))
    plan = plan_for(args.quick)
    t0 = time.perf_counter()

    def run() -> tuple[dict[str, pd.DataFrame], list[pathlib.Path]]:
        # stages: each experiment (run or loaded; a campaign reports its own progress), the
        # figures
        with Progress(len(EXPERIMENTS) + 1, "spectra report", unit="stages",
                      enabled=not quiet) as bar:
            data = {name: load_or_run(name, plan, force=args.force, n_jobs=args.n_jobs)
                    for name in bar.iter(EXPERIMENTS)}
            if args.force:
                spectrum_data(args.quick, force=True)
            figs = draw_figures(data, out / "figures", plan, args.quick)
            bar.update()
        return data, figs

    if args.threads is not None:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(args.threads):
            data, figs = run()
    else:
        data, figs = run()
    # the figures as the report names them: relative to the report's directory
    rel = [f.relative_to(out) if f.is_relative_to(out) else f for f in figs]
    text = build_report(data, plan, rel, time.perf_counter() - t0)
    if args.quick:
        print(text)
    else:
        path = write_text(out, "SPECTRA.md", text)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
