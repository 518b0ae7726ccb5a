"""Plot of a spectrum with its bulk edge and outliers (a Figure object, no pyplot state)."""

from __future__ import annotations

import math

import numpy as np

from asymptotics.measures.marchenko_pastur import mp_median, mp_singular_density

from .analysis import WeightSpectrum


def plot_spectrum(
    ws: WeightSpectrum, shape: tuple[int, int], path: str, *, title: str = "",
    reference: np.ndarray | None = None,
) -> None:
    """Histogram of the singular values with the MP bulk density (median-matched scale), the
    threshold and the outliers marked; ``reference`` (e.g. W0's singular values) drawn as a step."""
    from matplotlib.figure import Figure

    p, d = shape
    beta = p / d
    s = ws.singular_values
    f, q = max(1.0, beta), min(beta, 1.0 / beta)
    scale = float(np.median(s)) / math.sqrt(f * mp_median(q))
    bulk = s[ws.n_outliers:]
    fig = Figure(figsize=(6.0, 3.8), constrained_layout=True)
    ax = fig.subplots()
    hi = float(bulk.max()) * 1.15
    bins = np.linspace(0.0, hi, 60)
    if reference is not None:
        ax.hist(reference, bins=bins, density=True, histtype="step", color="0.5",
                label=r"$W_0$")
    ax.hist(bulk, bins=bins, density=True, alpha=0.55, color="#0072B2", label="bulk")
    x = np.linspace(1e-6, hi, 600)
    ax.plot(x, mp_singular_density(x, beta, scale), color="#D55E00",
            label=f"Marchenko-Pastur, scale {scale:.3f}")
    ax.axvline(ws.edge.threshold, color="k", ls=":", lw=1, label="outlier threshold")
    if ws.n_outliers:
        ymax = ax.get_ylim()[1]
        shown = [v for v in ws.outliers if v <= hi * 1.5]
        ax.plot(shown, [0.05 * ymax] * len(shown), "v", color="#CC0000", ms=8,
                label=f"{ws.n_outliers} outlier(s)")
        far = [v for v in ws.outliers if v > hi * 1.5]
        if far:
            ax.annotate("outliers at " + ", ".join(f"{v:.3g}" for v in far) + r" $\rightarrow$",
                        xy=(0.98, 0.5), xycoords="axes fraction", ha="right", fontsize=8)
    ax.set_xlabel("singular value")
    ax.set_ylabel("density")
    if title:
        ax.set_title(title, fontsize=9)
    ax.legend(frameon=False, fontsize=8)
    from asymptotics.cli.common import save_figure

    save_figure(fig, path, dpi=150)


