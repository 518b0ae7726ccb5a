"""The plotting helpers of the campaigns' reports: a figure without pyplot (no global state, no
backend chosen here), simulation points with error bars, a theory-vs-simulation panel, and
saving beside the report (``out/figures/NAME.png``, a path relative to the report for its
markdown link)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

MARKERS = "os^vD<>"


def figure(ncols: int = 1, nrows: int = 1, width: float = 5.0, height: float = 4.0):
    """``(fig, axes)``: a :class:`matplotlib.figure.Figure` with constrained layout and a 2-d
    array of axes (``nrows x ncols``)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width * ncols, height * nrows), constrained_layout=True)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    return fig, axes


def errorbars(ax: Any, x: Sequence[float], mean: Sequence[float], se: Sequence[float], *,
              k: int = 0, label: str | None = None, width: float = 2.0,
              color: str | None = None) -> None:
    """Simulation means with ``width`` standard errors as bars, the ``k``-th marker and colour
    (or ``color``)."""
    import numpy as np

    ax.errorbar(np.asarray(x, float), np.asarray(mean, float),
                yerr=width * np.asarray(se, float), fmt=MARKERS[k % len(MARKERS)], ms=4,
                capsize=2, color=color or f"C{k % 10}", label=label, zorder=3)


def agreement(ax: Any, theory: Sequence[float], mean: Sequence[float], se: Sequence[float], *,
              k: int = 0, label: str | None = None, relative: bool = True) -> None:
    """Theory against simulation: the relative gap (simulation / theory - 1, bars 2 s.e.) over
    the theory's value with a zero line (``relative``), or the points about the diagonal."""
    import numpy as np

    th, m, s = (np.asarray(v, float) for v in (theory, mean, se))
    if relative:
        errorbars(ax, th, m / th - 1, s / np.abs(th), k=k, label=label)
        ax.axhline(0.0, color="0.3", lw=1)
        ax.set_ylabel("simulation / theory - 1 (±2 s.e.)")
    else:
        errorbars(ax, th, m, s, k=k, label=label)
        lo, hi = float(np.nanmin(th)), float(np.nanmax(th))
        ax.plot([lo, hi], [lo, hi], color="0.3", lw=1)
        ax.set_ylabel("simulation (±2 s.e.)")
    ax.set_xlabel("theory")


def save(fig: Any, out: str | Path, name: str, dpi: int = 120) -> Path:
    """Write ``out/figures/name.png`` (no timestamp in the file: the same figure, the same
    bytes); returns its path relative to ``out`` (the report's link)."""
    from asymptotics.cli.common import save_figure

    path = Path(out) / "figures" / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, path, dpi=dpi)
    return path.relative_to(out)
