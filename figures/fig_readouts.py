"""Risk vs alpha after one giant step with the constant and the pm1 initial readout
(docs/THEORY.md §11): theory lines (``asymptotics.risk_readout_curve``) and Monte Carlo points with
error bars (the network and the K-group sRF model of the mapping, from
``validation/reports/data/readouts_runs.csv``): ``python -m figures.fig_readouts`` writes
``validation/reports/figures/readouts.png``, shown by ``validation/reports/READOUTS.md``."""

from __future__ import annotations

from pathlib import Path

import numpy as np

DESCRIPTION = "Risk vs alpha, constant vs pm1 initial readout: theory and Monte Carlo"
COLORS = {"constant": "#0072B2", "pm1": "#D55E00"}
MARKERS = {"network": "o", "srf": "s"}


def figure(points, names=None, n_alpha: int = 40):
    """A matplotlib ``Figure``: one panel per setting of ``points`` (the summary of
    :func:`validation.spiked.readouts_report.summarize`; ``names`` to choose), theory as lines over
    ``[0.8 min alpha, 1.1 max alpha]`` and the simulated means +- 1 s.e. as markers."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import NullFormatter

    from asymptotics.spiked.readouts import risk_readout_curve

    names = list(dict.fromkeys(points.name)) if names is None else list(names)
    fig = Figure(figsize=(3.0 * len(names), 3.0), constrained_layout=True)
    axes = fig.subplots(1, len(names), squeeze=False)[0]
    for ax, name in zip(axes, names, strict=True):
        sub = points[points.name == name]
        row = sub.iloc[0]
        lo, hi = 0.8 * sub.alpha.min(), 1.1 * sub.alpha.max()
        grid = np.geomspace(lo, hi, n_alpha)
        for readout, color in COLORS.items():
            df = risk_readout_curve(grid, readout=readout, sigma=row.sigma, target=row.target,
                                    alpha0=row.alpha0, eta=row.eta, lam=row.lam, beta=row.beta)
            ax.plot(df.alpha, df.risk, color=color, lw=1.2, label=f"theory, {readout}")
            for model, marker in MARKERS.items():
                pts = sub[(sub.readout == readout) & (sub.model == model)].sort_values("alpha")
                if pts.empty:
                    continue
                shift = 1.03 if model == "srf" else 0.97  # side by side, not on top
                ax.errorbar(pts.alpha * shift, pts["mean"], yerr=pts.se, fmt=marker, ms=4,
                            color=color, mfc="white" if model == "srf" else color, capsize=2,
                            lw=1, label=f"{model}, {readout}")
        ax.set_xscale("log")
        ticks = sorted(set(sub.alpha))
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel(r"$\alpha = n/d$")
        ax.set_title(rf"$\sigma$={row.sigma}, $g$={row.target}, $\tilde\eta$={row.eta:g}",
                     fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("test error")
    axes[0].legend(fontsize=6, frameon=False)
    return fig


def save(fig, path) -> None:
    """PNG (150 dpi) without timestamps."""
    fig.savefig(path, dpi=150, metadata={"Software": None})


def make(outdir: Path, quick: bool = False, refresh: bool = False) -> list[Path]:
    """``python -m figures readouts``: the figure of the committed runs (no simulation; ``quick``
    and ``refresh`` change nothing: the Monte Carlo is ``python -m validation.spiked readouts
    run``) as ``readouts.png`` and ``readouts.pdf`` in ``outdir``."""
    from asymptotics.cli.common import save_figure
    from validation.spiked.readouts import D, load
    from validation.spiked.readouts_report import summarize

    runs = load()
    runs = runs[runs.d == D] if not runs.empty else runs
    if runs.empty:
        raise RuntimeError("no readout runs: run `python -m validation.spiked readouts run` first")
    fig = figure(summarize(runs))
    outdir = Path(outdir)
    return [save_figure(fig, outdir / f"readouts.{ext}", dpi=150) for ext in ("png", "pdf")]


def main() -> int:
    """Draw the figure of the committed rows into validation/reports/figures/readouts.png."""
    from validation.spiked.readouts import FIGURE, D, load
    from validation.spiked.readouts_report import summarize

    runs = load()
    runs = runs[runs.d == D] if not runs.empty else runs  # the main campaign, not the d-scan
    if runs.empty:
        print("no rows: run `python -m validation.spiked readouts run` first")
        return 1
    FIGURE.parent.mkdir(parents=True, exist_ok=True)
    save(figure(summarize(runs)), FIGURE)
    print(FIGURE)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
