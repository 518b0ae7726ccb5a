# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 1. First curves
#
# The asymptotic test error of a two-layer network after one giant gradient step, as a function
# of the sample ratio $\alpha = n/d$ of the ridge readout. We compare three theories that share
# one solver:
#
# - `model="network"` (the default): the trained network itself (docs/DERIVATIONS.md §7);
# - `model="srf"`: the spiked-random-features surrogate of the papers, exact for that model;
# - `eta=0`: random features at initialisation, the baseline without feature learning.
#
# Conventions are those of the theory page (§1): $\sigma$ the activation, $g$ the target,
# $\alpha_0 = n_0/d$ the first batch, $\tilde\eta$ the step size, $\lambda$ the ridge
# (a **sum** loss), $\beta = p/d$ the width ratio.
#
# This file is a [jupytext](https://jupytext.readthedocs.io) percent script: run it as
# `python docs/tutorials/01_first_curves.py`, or open it as a notebook. Set the environment
# variable `GIANTSTEP_FULL=1` for denser curves.

# %%
import os

import matplotlib.pyplot as plt
import numpy as np

import asymptotics as A

FULL = os.environ.get("GIANTSTEP_FULL") == "1"
alphas = np.linspace(0.2, 5.0, 60 if FULL else 20)
params = dict(sigma="tanh", target="tanh", alpha0=2.0, eta=1.0, lam=0.01, beta=1.0)

# %% [markdown]
# ## One point
#
# `A.risk` returns a frozen `RiskResult`: the risk, whether the equations converged, and every
# input parameter and order parameter.

# %%
res = A.risk(2.0, **params)
print(f"risk = {res.risk:.5f}, converged = {res.converged}, iterations = {res.iterations}")
print(f"spike of the step: r = {res.r:.4f}, c = {res.c:.4f}, gamma = {res.gamma:.4f}")
assert res.converged and 0 < res.risk < 1

# %% [markdown]
# ## Three curves
#
# `A.risk_curve` solves a whole curve with warm starts and returns one tidy `pandas.DataFrame`
# row per $\alpha$.

# %%
net = A.risk_curve(alphas, **params, model="network", progress=False)
srf = A.risk_curve(alphas, **params, model="srf", progress=False)
rf = A.risk_curve(alphas, **{**params, "eta": 0.0}, progress=False)
assert net.converged.all() and srf.converged.all() and rf.converged.all()
net[["alpha", "risk", "converged", "iterations", "residual", "r", "c", "gamma"]].head()

# %% [markdown]
# What the columns mean:
#
# - `alpha`, `risk`: the sample ratio $n/d$ of the readout and the test error
#   $\mathbb E(g - f)^2$ on fresh noiseless inputs;
# - `converged`, `status`, `message`: whether the self-consistent equations converged; an
#   unconverged point has `risk = nan` and `status` says why;
# - `iterations`, `residual`: solver iterations and final residual;
# - `sigma`, `target`, `alpha0`, `eta`, `lam`, `beta`, `delta`, `model`, `p`, `measure`,
#   `common_row`: the inputs, kept with every row;
# - `r`, `c`, `gamma`: the step as a spike: its size $r$, the bulk scale $c$ and the overlap
#   $\gamma$ of the learned direction with the target (theory §3);
# - `q1, q2, V1, V2, zeta, psi, m` and the hatted ones: the order parameters and their
#   conjugates (theory §5);
# - `loadings`, `bulk`, `fractions`, `overlaps`, `order`, `n_kappa`, `quadrature_change`: the
#   K-group model and its order parameters (theory §10), empty here: every route returns the
#   same record and the same columns (a K-group curve fills these and leaves `q1 ... psihat`
#   NaN).

# %%
print(sorted(net.columns))

# %% [markdown]
# One step beats random features at every $\alpha$, for both theories:

# %%
gain = rf.risk.to_numpy() - net.risk.to_numpy()
print(f"risk at alpha = {alphas[-1]:g}: network {net.risk.iloc[-1]:.4f}, "
      f"sRF {srf.risk.iloc[-1]:.4f}, random features {rf.risk.iloc[-1]:.4f}")
print(f"smallest gain of the network over random features: {gain.min():.4f}")
assert (gain > 0).all()
assert (rf.risk.to_numpy() - srf.risk.to_numpy() > 0).all()

# %% [markdown]
# ## Tuned curves: optimal $\lambda$ and optimal $\tilde\eta$
#
# `lam="optimal"` minimises the risk over $\lambda$ (log scale) at each $\alpha$;
# `eta="optimal"` minimises over $\tilde\eta \in [0, 5]$. The minimiser is the `lam` / `eta`
# column, and `interior` says whether it lies strictly inside the search bounds.
# (One at a time: `lam` and `eta` cannot both be `"optimal"`.) We use the sRF surrogate here,
# whose points are cheapest.

# %%
coarse = alphas[:: 4 if FULL else 3]
lam_opt = A.risk_curve(coarse, **{**params, "lam": "optimal"}, model="srf")
eta_opt = A.risk_curve(coarse, **{**params, "eta": "optimal"}, model="srf")
srf_coarse = A.risk_curve(coarse, **params, model="srf", progress=False)
lam_opt[["alpha", "risk", "lam", "interior"]]

# %%
eta_opt[["alpha", "risk", "eta", "interior"]]

# %% [markdown]
# A minimum over $\lambda$ or $\tilde\eta$ can only lower the risk of the fixed-parameter curve
# (up to the search tolerance):

# %%
fixed = srf_coarse.risk.to_numpy()
assert (lam_opt.risk.to_numpy() <= fixed + 1e-8).all()
assert (eta_opt.risk.to_numpy() <= fixed + 1e-8).all()
print(f"at alpha = {coarse[-1]:g}: lam = 0.01 gives {fixed[-1]:.4f}, optimal lam "
      f"{lam_opt.lam.iloc[-1]:.3g} gives {lam_opt.risk.iloc[-1]:.4f}; optimal eta "
      f"{eta_opt.eta.iloc[-1]:.3g} gives {eta_opt.risk.iloc[-1]:.4f}")

# %% [markdown]
# ## A plot

# %%
fig, ax = plt.subplots(figsize=(6, 4))
ax.plot(net.alpha, net.risk, label="network theory")
ax.plot(srf.alpha, srf.risk, "--", label="sRF surrogate")
ax.plot(rf.alpha, rf.risk, ":", label=r"random features ($\tilde\eta=0$)")
ax.plot(lam_opt.alpha, lam_opt.risk, "o", ms=4, label=r"sRF, optimal $\lambda$")
ax.plot(eta_opt.alpha, eta_opt.risk, "s", ms=4, label=r"sRF, optimal $\tilde\eta$")
ax.set_xlabel(r"$\alpha = n/d$")
ax.set_ylabel("test error")
ax.set_title(r"$\sigma = g = \tanh$, $\alpha_0 = 2$, $\tilde\eta = 1$, "
             r"$\lambda = 0.01$, $\beta = 1$")
ax.legend()
plt.show()
