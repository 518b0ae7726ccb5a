"""The predicted spectra beside one simulated network (docs/THEORY.md §16).

Top: the bulk of F^T F (the features on n = alpha d fresh inputs) and of W W^T (the first layer)
after one giant step, histogram of one draw against ``asymptotics.spectrum``'s density. Bottom:
the largest eigenvalues of the draw (log scale) with the predicted outliers at that d (dashed)
and the bulk's predicted edge (dotted). sigma = g = tanh, alpha0 = 2, eta_tilde = 1, beta = 0.5,
alpha = 4.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from . import style

NAME = "spectra_theory"
DESCRIPTION = "predicted spectra (bulk density, outliers at d) of features and weights vs a draw"
SETTING = dict(sigma="tanh", target="tanh", alpha0=2.0, eta=1.0, beta=0.5, alpha=4.0)


def make(outdir: Path, quick: bool = False, refresh: bool = False) -> list[Path]:
    from asymptotics import spectrum
    from validation.experiments.spectra_sim import kolmogorov, simulate_network

    d = 400 if quick else 1000
    laws = {"features": spectrum("features", d=d, **SETTING),
            "weights": spectrum("weights", d=d, model="network", **SETTING)}
    draw = simulate_network(sigma="tanh", target="tanh", d=d, beta=SETTING["beta"],
                            alpha=SETTING["alpha"], alpha0=SETTING["alpha0"],
                            eta=SETTING["eta"], seed=0)
    fig, axes = style.figure(ncols=2, nrows=2, width=4.4, height=3.0)
    for j, (of, law) in enumerate(laws.items()):
        eig = draw.f_eig if of == "features" else draw.w_eig
        k = len(law.outliers)
        ks = kolmogorov(eig, law.cdf, k)
        ax = axes[0, j]
        ax.hist(eig[: eig.size - k], bins=60, density=True, color=style.PALETTE[j], alpha=0.5,
                label=f"one draw, d = {d}")
        x = np.linspace(1e-3, law.edge * 1.05, 400)
        ax.plot(x, law.density(x), "k-", lw=1.2, label=f"theory (KS {ks:.3f})")
        ax.set_title(r"$F^\top F$ (features)" if of == "features" else r"$W W^\top$ (weights)")
        ax.set_xlabel("eigenvalue")
        ax.legend(loc="upper right")
        ax = axes[1, j]
        top = np.sort(eig)[::-1][:10]
        ax.semilogy(np.arange(1, top.size + 1), top, "o", color=style.PALETTE[j],
                    label="largest eigenvalues")
        for o in law.outliers:
            ax.axhline(o.location, color="k", ls="--", lw=1,
                       label=f"predicted outlier ({o.channel}): {o.location:.1f}")
        ax.axhline(law.edge, color="0.5", ls=":", lw=1, label=f"predicted edge {law.edge:.2f}")
        ax.set_xlabel("rank")
        ax.legend(loc="center right", fontsize=7)
    axes[0, 0].set_ylabel("density")
    fig.suptitle(r"one giant step, $\sigma=g=\tanh$, $\alpha_0=2$, $\tilde\eta=1$, $\beta=0.5$, "
                 rf"$\alpha=4$, $d={d}$", fontsize=10)
    return style.save(fig, outdir, NAME)
