"""Heat map of a 2-D sweep (a Figure object; no pyplot state)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd



def grid_axes(grid: Mapping[str, Sequence[Any]]) -> tuple[str, str]:
    """The two axes of a 2-D grid (x = alpha when it is one of them), or a ValueError."""
    varying = [n for n, v in grid.items() if len(v) > 1]
    if len(varying) != 2:
        raise ValueError("a heat map needs exactly two grid parameters with more than one value, "
                         f"got {', '.join(varying) or 'none'}")
    x, y = varying
    if y == "alpha":
        x, y = y, x
    return x, y


def plot_heatmap(df: pd.DataFrame, x: str, y: str, path: str | os.PathLike,
                 value: str = "risk") -> None:
    """``value`` over the (x, y) grid as a colour map (grey: not converged)."""
    import matplotlib
    import numpy as np
    from matplotlib.colors import LogNorm
    from matplotlib.figure import Figure

    table = df.pivot_table(index=y, columns=x, values=value, aggfunc="first", dropna=False)
    z = np.ma.masked_invalid(table.to_numpy(dtype=np.float64))
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="0.8")
    norm = None
    if z.count() and z.min() > 0 and z.max() / z.min() > 20:
        norm = LogNorm(z.min(), z.max())
    fig = Figure(figsize=(5.8, 4.4), constrained_layout=True)
    ax = fig.subplots()
    mesh = ax.pcolormesh(table.columns.to_numpy(float), table.index.to_numpy(float), z,
                         shading="nearest", cmap=cmap, norm=norm)
    fig.colorbar(mesh, ax=ax, label=value)
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    fixed = [f"{c}={df[c].iloc[0]}" for c in ("sigma", "target", "alpha0", "eta", "lam", "beta",
                                                 "delta", "d") if c in df and c not in (x, y)]
    ax.set_title(f"{df['kind'].iloc[0]}: " + ", ".join(fixed), fontsize=8)
    n_bad = int(z.mask.sum()) if np.ma.is_masked(z) else 0
    if n_bad:
        ax.text(0.01, 0.01, f"grey: {n_bad} not converged", transform=ax.transAxes, fontsize=7)
    from asymptotics.cli.common import save_figure

    save_figure(fig, path, dpi=150)


