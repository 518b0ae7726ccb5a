"""Shared look of every figure: Okabe–Ito colour-blind-safe palette, LaTeX-style labels, saving.

Every figure is written as PNG (150 dpi) and PDF with the same stem.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt  # the command lines choose the backend (Agg): no import-time use()

from asymptotics.cli.common import save_figure  # noqa: E402

PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442",
           "#000000"]
LABELS = {
    "alpha": r"$\alpha = n/d$",
    "risk": r"test error $\mathcal{R}$",
    "eta": r"$\tilde\eta$",
    "alpha0": r"$\alpha_0 = n_0/d$",
    "lam": r"$\lambda$",
    "beta": r"$\beta = p/d$",
}
RC = {
    "figure.dpi": 100, "savefig.dpi": 150, "font.size": 10, "axes.titlesize": 10,
    "axes.labelsize": 11, "legend.fontsize": 8, "legend.frameon": False,
    "axes.grid": True, "grid.alpha": 0.3, "axes.prop_cycle": plt.cycler(color=PALETTE),
    "errorbar.capsize": 2, "lines.linewidth": 1.6, "mathtext.fontset": "cm",
}


def figure(ncols: int = 1, nrows: int = 1, width: float = 5.2, height: float = 3.8, **kw):
    """A constrained-layout figure with the project's rcParams."""
    plt.rcParams.update(RC)
    return plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows),
                        constrained_layout=True, squeeze=False, **kw)


def save(fig, outdir: Path, name: str) -> list[Path]:
    """Write ``name.png`` and ``name.pdf`` into ``outdir`` (no timestamps: reproducible files)."""
    outdir.mkdir(parents=True, exist_ok=True)
    paths = [outdir / f"{name}.png", outdir / f"{name}.pdf"]
    save_figure(fig, paths[0])
    save_figure(fig, paths[1])
    plt.close(fig)
    return paths


def sim_markers(ax, df, color: str, label: str, marker: str = "o", filled: bool = True) -> None:
    """Simulation means with one-standard-error bars."""
    ax.errorbar(df["alpha"], df["sim_mean"], yerr=df["sim_se"], fmt=marker, ms=4.5, color=color,
                mfc=color if filled else "white", mew=1.2, elinewidth=1, label=label, zorder=3)


def risk_axes(ax, *, linear_level: float, d: int, title: str) -> None:
    """Labels, the best-linear-predictor level and the marker legend of a risk-vs-alpha panel
    with sRF (filled) and network (open) simulations."""
    ax.axhline(linear_level, color="0.4", ls="--", lw=1, label="best linear predictor")
    ax.plot([], [], "ko", ms=4, label=f"sRF simulation (d={d})")
    ax.plot([], [], "ks", mfc="white", ms=4, label="network simulation")
    ax.set_xlabel(LABELS["alpha"])
    ax.set_ylabel(LABELS["risk"])
    ax.set_title(title)
    ax.legend(ncol=2)
