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
# # 4. Your own model
#
# Any activation $\sigma$ and any single-index target $g$ can be given as a registered name, as
# an expression in `z`, or as a Python callable; the width can be finite (`p=`); grids of
# parameters come back as one tidy table; and the several-spikes theory (theory §10) handles
# K neuron groups and r learned directions.
#
# `GIANTSTEP_FULL=1` uses a finer phase diagram.

# %%
import os
import warnings

import matplotlib.pyplot as plt
import numpy as np

import asymptotics as A
from asymptotics.api.grid import risk_grid

FULL = os.environ.get("GIANTSTEP_FULL") == "1"
print("registered functions:", ", ".join(A.available()))

# %% [markdown]
# ## An activation and a target as expressions
#
# Expressions in `z` are parsed by a whitelist (never `eval`): arithmetic, powers up to 64 and
# the usual functions. Expressions whose Gaussian second moment would not be finite are refused.

# %%
SIGMA = "tanh(2*z) + 0.1*z**2"
TARGET = "sin(z) + 0.5*z"
params = dict(alpha0=2.0, eta=1.0, lam=0.01, beta=1.0, model="srf")
res = A.risk(2.0, sigma=SIGMA, target=TARGET, **params)
rf = A.risk(2.0, sigma=SIGMA, target=TARGET, **{**params, "eta": 0.0})
print(f"one step: {res.risk:.4f}   random features: {rf.risk:.4f}")
assert res.converged and res.risk < rf.risk

# %%
try:
    A.get_function("exp(z**2)")
except ValueError as err:
    print("refused:", err)

# %% [markdown]
# ## The same activation as a Python callable
#
# A callable must be vectorised over NumPy arrays and real-valued. The package locates its
# kinks numerically and checks its quadrature against a fine reference rule; the result agrees
# with the expression to quadrature accuracy:

# %%
def my_sigma(z):
    return np.tanh(2 * z) + 0.1 * z**2


res_callable = A.risk(2.0, sigma=my_sigma, target=TARGET, **params)
print(f"expression {res.risk:.10f}   callable {res_callable.risk:.10f}")
assert abs(res_callable.risk - res.risk) < 1e-8

# %% [markdown]
# For a function with kinks you can name them (and a derivative, if you have it) with
# `Function.from_callable`; when the quadrature cannot be verified a `QuadratureWarning` says so.
# Here a bent ReLU under the network theory (`model="network"`, the default):

# %%
bent = A.Function.from_callable(
    lambda z: np.maximum(z, 0) - 0.3 * np.maximum(z - 1, 0), name="bent_relu", kinks=[0.0, 1.0])
with warnings.catch_warnings():
    warnings.simplefilter("error", A.QuadratureWarning)  # fail loudly if unverified
    net = A.risk(2.0, sigma=bent, target="relu", alpha0=2.0, eta=1.0, lam=0.01)
print(f"bent relu, network theory: {net.risk:.4f} (converged: {net.converged})")
assert net.converged

# %% [markdown]
# ## Finite width
#
# `p=` gives the theory at width $p = \beta d$ (docs/DERIVATIONS.md §8): the mean channel of
# the features is no longer free, and the risk approaches the $p = \infty$ limit as $p$ grows.

# %%
widths = [100, 300, 1000, 3000, 10000]
finite = [A.risk(2.0, sigma=SIGMA, target=TARGET, **params, p=p).risk for p in widths]
for p, r in zip(widths, finite, strict=True):
    print(f"p = {p:6d}: {r:.5f}")
print(f"p = inf   : {res.risk:.5f}")
assert np.all(np.diff(finite) < 0) and finite[-1] > res.risk
assert finite[-1] - res.risk < 0.01 * res.risk

# %% [markdown]
# ## A phase diagram with `risk_grid`
#
# Every parameter can be a sequence; `risk_grid` solves the Cartesian product (alpha fastest)
# and returns one row per point. Here the risk over $(\alpha, \tilde\eta)$ and the gain over
# random features (the $\tilde\eta = 0$ row).

# %%
n = 40 if FULL else 20
grid = risk_grid(alpha=np.linspace(0.2, 5.0, n), eta=np.linspace(0.0, 3.0, n), sigma=SIGMA,
                 target=TARGET, alpha0=2.0, lam=0.01, beta=1.0, model="srf")
print(f"{len(grid)} points, {grid.converged.mean():.0%} converged")
assert grid.converged.all()
R = grid.pivot(index="eta", columns="alpha", values="risk")
gain = R.iloc[0] - R  # random features minus the risk
print(f"largest gain over random features: {gain.to_numpy().max():.4f} at "
      f"eta = {gain.max(axis=1).idxmax():.2f}")

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
for ax, Z, label in ((axes[0], R, "test error"), (axes[1], gain, "gain over random features")):
    mesh = ax.pcolormesh(Z.columns, Z.index, Z.to_numpy(), shading="nearest")
    fig.colorbar(mesh, ax=ax, label=label)
    ax.set_xlabel(r"$\alpha$")
axes[0].set_ylabel(r"$\tilde\eta$")
fig.suptitle(rf"$\sigma = {SIGMA}$, $g = {TARGET}$, sRF theory".replace("**", "^"))
plt.show()

# %% [markdown]
# ## Several spikes: K neuron groups, r learned directions
#
# `risk_spiked` (theory §10): rows of group $g$ are $\sqrt{c_g}\,G_i + V u_g$ with $V$ the
# $d \times r$ learned basis; `loadings` is the $K \times r$ matrix of the $u_g$, `bulk` the
# $c_g$, `fractions` the share $\pi_g$ of the neurons, `overlaps` the $r \times k$ matrix
# $\Gamma$ of the target directions on $V$. The target is a function of `z1, ..., zk`.

# %%
kw = dict(sigma="tanh", target="tanh(z1) + z1*z2",
          loadings=[[1.0, 0.0], [0.0, 1.0], [0.7, -0.7]],
          bulk=[1.0, 1.0, 0.8],
          fractions=[0.4, 0.4, 0.2],
          overlaps=[[0.9, 0.0], [0.0, 0.8]],
          lam=0.01, beta=1.0)
sp = A.risk_spiked(2.0, **kw)
print(f"risk {sp.risk:.4f}, converged {sp.converged}")
A.risk_spiked_curve([0.5, 2.0, 4.0], **kw)[["alpha", "risk", "converged"]]

# %% [markdown]
# `spike_contributions` gives the risk with all spikes, with each direction switched off in every
# group, and with none (random features):

# %%
parts = A.spike_contributions(2.0, **kw)
for key, value in parts.items():
    print(f"{key:10s} {value:.4f}")
assert parts["all"] < min(v for k, v in parts.items() if k != "all")

# %% [markdown]
# K = r = 1 is the one-spike sRF theory: feeding `risk_spiked` the spike $(r, c, \gamma)$ of a
# step reproduces `risk(model="srf")` to rounding.

# %%
one = A.risk(2.0, model="srf")
same = A.risk_spiked(2.0, sigma="tanh", target="tanh", loadings=[[one.r]], bulk=[one.c],
                     fractions=[1.0], overlaps=[[one.gamma]], lam=0.01, beta=1.0)
print(f"risk(model='srf') = {one.risk:.12f}, risk_spiked = {same.risk:.12f}")
assert abs(one.risk - same.risk) < 1e-9
