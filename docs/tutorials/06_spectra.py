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
# # 6. Spectra of the learned features and weights
#
# `asymptotics.spectrum` predicts the eigenvalue law of two matrices after a giant step
# (theory §16):
#
# - `of="features"`: $F^\top F$, $F = \sigma(X W^\top)/\sqrt p$ on $n = \alpha d$ fresh inputs —
#   the matrix of the readout's ridge normal equations;
# - `of="weights"`: $W W^\top$, the squared singular values of the first layer.
#
# The result carries the bulk (`density`, `cdf` with its atom at 0, `support`) and the outliers
# at the user's `d` (location, channel, squared overlaps of the singular vectors). Here both are
# set beside one simulated network. `GIANTSTEP_FULL=1` simulates at d = 1000 instead of 500.

# %%
import os

import matplotlib.pyplot as plt
import numpy as np

import asymptotics as A
from asymptotics.multiindex.spikes import two_step_outlier_count
from validation.experiments.spectra_sim import kolmogorov, simulate_network
from validation.experiments.spectra_weights.steps import SETTINGS, simulate

FULL = os.environ.get("GIANTSTEP_FULL") == "1"
d = 1000 if FULL else 500
setting = dict(sigma="tanh", target="tanh", alpha0=2.0, eta=1.0, beta=0.5, alpha=4.0)

# %% [markdown]
# ## The predictions
# Both laws are the network theory's (the default for the features at one step): the features'
# is the V-part of the equations at $\lambda = -z$ with the first layer's bulk a generalised
# Marchenko–Pastur law of the step's population covariance, the weights' that law itself, with
# the spike's outlier.

# %%
features = A.spectrum("features", d=d, **setting)
weights = A.spectrum("weights", d=d, model="network", **setting)
for law in (features, weights):
    print(law.of, "bulk", [tuple(round(x, 3) for x in iv) for iv in law.support],
          "atom", law.atom)
    for o in law.outliers:
        print("   outlier", round(o.location, 2), o.channel,
              {k: round(v, 3) for k, v in o.overlaps.items()})

# %% [markdown]
# In the limit (`d=None`) the features' mean outlier and the weights' spike diverge (like $n$
# and $p$): their location is `inf`.

# %%
print([o.location for o in A.spectrum("features", **setting).outliers])

# %% [markdown]
# ## One simulated network
# The protocol's network after one step, its first layer and its features on fresh inputs.

# %%
draw = simulate_network(sigma="tanh", target="tanh", d=d, beta=0.5, alpha=4.0, alpha0=2.0,
                        eta=1.0, seed=0)
ks_f = kolmogorov(draw.f_eig, features.cdf, len(features.outliers))
ks_w = kolmogorov(draw.w_eig, weights.cdf, len(weights.outliers))
print(f"Kolmogorov distance of the bulk: features {ks_f:.4f}, weights {ks_w:.4f}")
print("largest eigenvalues: features", np.round(draw.f_eig[-2:], 2), " weights",
      np.round(draw.w_eig[-2:], 2))
assert ks_f < 0.03 and ks_w < 0.03
assert abs(draw.w_eig[-1] / weights.outliers[0].location - 1) < 0.1

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
for ax, law, eig in ((axes[0], features, draw.f_eig), (axes[1], weights, draw.w_eig)):
    k = len(law.outliers)
    bulk = eig[: eig.size - k]
    ax.hist(bulk, bins=60, density=True, alpha=0.5, label=f"simulation, d = {d}")
    x = np.linspace(1e-3, law.edge * 1.05, 300)
    ax.plot(x, law.density(x), "k", lw=1.5, label="theory")
    ax.set_title(f"{law.of}: bulk; outliers {[round(o.location, 1) for o in law.outliers]} "
                 f"(sim. {[round(v, 1) for v in eig[-k:][::-1]]})", fontsize=8)
    ax.set_xlabel("eigenvalue")
    ax.legend(fontsize=8)
fig.tight_layout()

# %% [markdown]
# ## The weights after several steps, with a $\pm 1$ readout
# After `steps=T` fresh-batch steps the groups of the steps (docs/THEORY.md §12) give
# $W = D^{1/2} G + P Q^\top$: a Marchenko–Pastur bulk with one row variance per readout value and
# the groups' spikes as a low-rank perturbation (§16.6). The outlier's left vector lies on the
# readout's signs, its right vector on the learned direction, partly on $\theta^*$.

# %%
s3 = next(s for s in SETTINGS if s.steps == 3 and s.readout == "pm1")
law3 = A.spectrum("weights", sigma=s3.sigma, target=s3.target, alpha0=s3.alpha0, eta=s3.eta,
                  beta=s3.beta, steps=3, readout="pm1", d=d)
ev3, ov3 = simulate(s3, d, seed=0)
o = law3.outliers[0]
print(f"outlier {o.location:.1f} (sim. {ev3[-1]:.1f}), channel {o.channel}; overlaps theory / "
      f"sim.: readout {o.overlaps['readout']:.4f} / {ov3['readout'][0]:.4f}, theta* "
      f"{o.overlaps['target 1']:.3f} / {ov3['target 1'][0]:.3f}")
print(f"Kolmogorov distance of the bulk: {kolmogorov(ev3, law3.cdf, 1):.4f}")
assert abs(ev3[-1] / o.location - 1) < 0.05 and kolmogorov(ev3, law3.cdf, 1) < 0.03

# %% [markdown]
# The same with `model="network"` carries each group's bulk covariance on the span of the spike
# and the target (the network route of §15): the row's coordinates there become part of the
# perturbation, $W W^\top = W_\perp W_\perp^\top + L L^\top$ (§16.6). The bulk has less
# variance along the spike than the isotropic groups, and the left vector's small deficit
# $1 - \langle u, \varepsilon\rangle^2/p$ shrinks by about that factor.

# %%
net3 = A.spectrum("weights", sigma=s3.sigma, target=s3.target, alpha0=s3.alpha0, eta=s3.eta,
                  beta=s3.beta, steps=3, readout="pm1", d=d, model="network")
print("readout overlap: isotropic groups", round(o.overlaps["readout"], 5), " network",
      round(net3.outliers[0].overlaps["readout"], 5), " draw", round(float(ov3["readout"][0]), 5))

# %% [markdown]
# ## The features after two steps
# Beyond one step the network's features law is the V-part of the K-group equations on the
# network route's groups and its bulk outside the span of the spikes and the target (each
# group's population covariance there, the route's K-group generalised Marchenko–Pastur law;
# §16.8); the outliers are those of the groups' means and of the bulk's columns on that span.
# With a $\pm 1$ readout and an odd $\sigma$ the two groups' feature means have opposite signs:
# the top eigenvector lies on the readout's signs, not on $1_p$.

# %%
f2 = A.spectrum("features", sigma="tanh", target="tanh(z1)", alpha0=2.0, eta=1.0, beta=0.5,
                alpha=4.0, steps=2, readout="pm1", model="network", d=d)
o2 = f2.outliers[0]
print("bulk", [tuple(round(x, 3) for x in iv) for iv in f2.support], "outlier",
      round(o2.location, 1), {k: round(v, 5) for k, v in o2.overlaps.items()
                               if k in ("mean", "readout", "learned span (B V)")})

# %% [markdown]
# ## Two steps with $\eta_t \sim p^{1/2 + a_t}$: the outliers at the simulated d
# Moniri & Hassani (2026) count $\lfloor a_2/(1/2 - a_1)\rfloor$ outliers beyond the leading one
# as $d \to \infty$; at d = 1000 the marginal ones are too weak to leave the bulk.
# `spectrum(of="weights", steps=2, readout="gaussian", exponents=(a1, a2), eta=(eta1, eta2),
# d=...)` predicts them at the given d (§16.7): each row's common vector, a function of its
# readout $g$, carries the second step's whole Taylor series in the first step's shift, and the
# batch noise gives each order of $g$ its own direction. The count above the detection
# threshold is in `params` (`two_step_weights` gives the same law in singular values).

# %%
for a1, a2 in ((0.35, 0.3), (0.4, 0.45)):
    law2 = A.spectrum("weights", sigma="tanh(z+0.5)", target="linear", steps=2,
                      readout="gaussian", exponents=(a1, a2), eta=(1.0, 3.0), beta=0.5,
                      alpha0=1.0, d=1000)
    print(f"(a1, a2) = ({a1}, {a2}): at d = 1000 {law2.params['count']} beyond the leading one "
          f"(asymptotically {two_step_outlier_count(a1, a2)}); singular values "
          f"{np.round([np.sqrt(o.location) for o in law2.outliers], 3)}, channels "
          f"{[o.channel for o in law2.outliers]}, edge {np.sqrt(law2.edge):.3f}")
# validation/reports/SPECTRA.md, section 2, compares these counts with the simulations.

# ## The network against its sRF surrogate (relu)
# For tanh the step's population covariance is nearly isotropic and the network's features law
# is the sRF surrogate's. For relu ($\mathbb E[z\sigma'(z)] \neq 0$) the step stretches the bulk
# rows along the batch's weighted covariance: the features' bulk reaches further than the
# surrogate's scaled Marchenko–Pastur law, and `model="network"` follows it.

# %%
relu = dict(sigma="relu", target="relu", alpha0=1.0, eta=1.0, beta=0.5, alpha=2.0)
net, srf = (A.spectrum("features", d=d, model=m, **relu) for m in ("network", "srf"))
draw_r = simulate_network(d=d, seed=0, **relu)
ks = {m: kolmogorov(draw_r.f_eig, law.cdf, 1) for m, law in (("network", net), ("srf", srf))}
print("bulk edge: network", round(net.edge, 2), " sRF", round(srf.edge, 2),
      " largest bulk eigenvalue of the draw", round(draw_r.f_eig[-2], 2))
print("Kolmogorov distance:", {m: round(v, 4) for m, v in ks.items()})
print("mean outlier's overlap with 1_p/sqrt(p): network",
      round(net.outliers[0].overlaps["mean"], 5), " sRF",
      round(srf.outliers[0].overlaps["mean"], 5), " draw",
      round(float(draw_r.f_overlaps["mean"][0]), 5))
assert ks["network"] < ks["srf"]

# %% [markdown]
# ## What is covered
# Features: the trained network after one step with the constant readout (`model="network"`,
# the default there); several steps (`steps=`) and any finite-support readout (`readout=`)
# with `model="network"` (§16.8: the network route's groups; it lacks the rows' bulk-variance
# channel, so its outlier overlaps miss at the 1/p level) or the sRF/K-group model
# (`model="srf"`, the default there); `"rf"` at $\tilde\eta = 0$. Weights: one step with the
# constant readout, `model="network"` or `"srf"`; several steps and any finite-support readout
# with `model="srf"` (the isotropic groups, default) or `model="network"` (the groups' bulk
# covariance on the span); the two-step $\eta \sim p^{1/2 + a}$ weights at the user's d with
# `exponents=`. A 300-point density costs a fraction of a second
# (`benchmarks/bench_spectrum.py`); the comparison at d = 500–4000 is
# `validation/reports/SPECTRA_THEORY.md`.
