"""The predicted spectra beside one simulated network (docs/THEORY.md §16).

Top: the bulk of F^T F (the features on n = alpha d fresh inputs) and of W W^T (the first layer)
after one giant step, histogram of one draw against ``asymptotics.spectrum``'s density (the
network's laws; for the features the sRF surrogate's dashed). Bottom: the largest eigenvalues of
the draw (log scale) with the predicted outliers at that d (dashed) and the bulk's predicted edge
(dotted). sigma = g = tanh, alpha0 = 2, eta_tilde = 1, beta = 0.5, alpha = 4; third column: the
features of a relu network (alpha0 = 1, alpha = 2), where the network's law and the surrogate's
differ.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from . import style

NAME = "spectra_theory"
DESCRIPTION = "predicted spectra (bulk density, outliers at d) of features and weights vs a draw"
SETTING = dict(sigma="tanh", target="tanh", alpha0=2.0, eta=1.0, beta=0.5, alpha=4.0)
RELU = dict(sigma="relu", target="relu", alpha0=1.0, eta=1.0, beta=0.5, alpha=2.0)


def make(outdir: Path, quick: bool = False, refresh: bool = False) -> list[Path]:
    from asymptotics import spectrum
    from validation.experiments.spectra_sim import kolmogorov, simulate_network

    d = 400 if quick else 1000
    laws = {"features": spectrum("features", d=d, model="network", **SETTING),
            "weights": spectrum("weights", d=d, model="network", **SETTING),
            "relu features": spectrum("features", d=d, model="network", **RELU)}
    surrogate = {"features": spectrum("features", d=d, model="srf", **SETTING),
                 "relu features": spectrum("features", d=d, model="srf", **RELU)}
    draw = simulate_network(d=d, seed=0, **SETTING)
    draw_relu = simulate_network(d=d, seed=0, **RELU)
    fig, axes = style.figure(ncols=3, nrows=2, width=4.4, height=3.0)
    for j, (of, law) in enumerate(laws.items()):
        eig = (draw.w_eig if of == "weights" else
               draw_relu.f_eig if of == "relu features" else draw.f_eig)
        k = len(law.outliers)
        ks = kolmogorov(eig, law.cdf, k)
        ax = axes[0, j]
        ax.hist(eig[: eig.size - k], bins=60, density=True, color=style.PALETTE[j], alpha=0.5,
                label=f"one draw, d = {d}")
        x = np.linspace(1e-3, min(law.edge, 1.3 * np.sort(eig)[-k - 1]) * 1.05, 400)
        ax.plot(x, law.density(x), "k-", lw=1.2, label=f"network theory (KS {ks:.3f})")
        if of in surrogate:
            srf = surrogate[of]
            ks_s = kolmogorov(eig, srf.cdf, len(srf.outliers))
            ax.plot(x, srf.density(x), "k--", lw=0.9, label=f"sRF surrogate (KS {ks_s:.3f})")
        ax.set_title(r"$W W^\top$ (weights)" if of == "weights" else
                     r"$F^\top F$ (features, relu)" if of == "relu features" else
                     r"$F^\top F$ (features)")
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
                 rf"$\alpha=4$, $d={d}$; right: relu, $\alpha_0=1$, $\alpha=2$", fontsize=10)
    return style.save(fig, outdir, NAME)
