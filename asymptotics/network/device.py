"""The sampled device of the groups' bulk outside E after T giant steps (docs/DERIVATIONS.md
§9.7, THEORY.md §15): each group's population covariance on the directions outside the span E
of the target and of the spikes, formed on B independent blocks of n directions (fixed seed: the
device is deterministic and cached per setting).

Row i of group g has, outside E, the bulk ``b`` with covariance ``C_g / d``; a step with batch
``x_mu`` (``n0 = alpha0 n`` samples on a block) maps it, at a fixed batch and to leading order,
to the covariance (DERIVATIONS.md §9.2)

    C_g <- L_g C_g L_g^T + n eta^2 eps_g^2 n0^-2 sum_mu e~_mu^2 (v_g - m2_g^2) x_mu x_mu^T,
    L_g  = I + eta eps_g n0^-1 sum_mu e~_mu m1'_g(s_g . x_mu) x_mu x_mu^T,

``e~ = y - f`` the residual with the label noise, ``m1'_g = m2_g / sqrt(c_g)``, ``v_g = Var_xi
sigma'``, ``m2_g = E[xi sigma']`` (the part of ``sigma'`` linear in the bulk is in ``L_g``; the rest
is the row noise), evaluated at the sample's coordinates on E (target ``z``, the spikes'
outside coordinates ``h``: independent standard normals) and the state before the step
(:func:`asymptotics.network.groups.network_groups`). ``C_g = I`` at t = 0. The blocks' covariances
are normalised to trace n each (their mean variance is the recursion's ``c_g`` up to the device's
sampling; :func:`device_scales` gives the ratio).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from asymptotics.coefficients.functions import Function
from asymptotics.coefficients.gauss_rules import gauss_hermite
from asymptotics.multiindex.steps import Quadrature, mapping_inputs
from asymptotics.multiindex.steps import evaluate as _evaluate
from asymptotics.multiindex.xi_lines import xi_moments
from asymptotics.network.bulk import GroupBulk
from asymptotics.network.groups import DEFAULT_QUAD, network_groups

#: the device: B blocks of n outside directions (d = B n), the seed of its batches
DEVICE_SIZE = 100
DEVICE_BLOCKS = 4
DEVICE_SEED = 0
XI_NODES = 96
#: the reference sample of the weights' moments (antithetic pairs)
N_REF = 400_000

_CACHE: dict = {}
CACHE_SIZE = 64


def device_covariances(sigma: str | Function, target: str, *, steps: int, alpha0: float,
                       eta: float | Sequence[float], delta: float = 0.0,
                       readout: object = "constant", size: int = DEVICE_SIZE,
                       blocks: int = DEVICE_BLOCKS, seed: int = DEVICE_SEED,
                       quad: Quadrature = DEFAULT_QUAD) -> tuple[np.ndarray, np.ndarray]:
    """``(sig, scale)``: the normalised covariances outside E after ``steps`` steps (B x K x n x
    n, each block's trace n) and each block's mean variance over the recursion's ``c_g``
    (B x K; 1 up to the device's sampling). Cached."""
    if not math.isfinite(alpha0):
        raise ValueError(f"the bulk device needs a finite alpha0, got {alpha0}")
    size = int(size)
    blocks = int(blocks)
    if size < 2 or blocks < 1:
        raise ValueError(f"device size must be >= 2 and blocks >= 1, got {size}, {blocks}")
    m = mapping_inputs(sigma, target, steps=steps, alpha0=alpha0, eta=eta, delta=delta,
                       readout=readout, quad=quad)
    key = (m.sigma, target, m.readout, float(alpha0), m.etas, m.delta, size, blocks, seed, quad)
    try:
        hit = _CACHE.get(key)
    except TypeError:  # an unhashable sigma or target: no cache
        key, hit = None, None
    if hit is not None:
        return hit
    ng = network_groups(m.sigma, target, steps=m.steps, alpha0=alpha0, eta=m.etas,
                        delta=m.delta, readout=m.readout, quad=quad)
    values, fractions, k = np.asarray(m.values), np.asarray(m.fractions), m.k
    K = len(values)
    xi, wxi = gauss_hermite(XI_NODES)
    rng = np.random.default_rng(np.random.SeedSequence([seed, size, blocks]))
    n0 = max(1, int(round(alpha0 * size)))
    refs = []
    rr = np.random.default_rng(np.random.SeedSequence([seed, 1]))
    for t in range(m.steps):
        st = ng.states[t]
        Er = rr.standard_normal((N_REF // 2, k + st.L.shape[1]))
        Er = np.vstack([Er, -Er])  # antithetic pairs
        nr = rr.standard_normal(N_REF // 2)
        w, u = _weights(m, st, Er, np.concatenate([nr, -nr]), fractions, values, xi, wxi)
        refs.append((w.mean(axis=0), w.std(axis=0), u.mean(axis=0)))
    sig = np.empty((blocks, K, size, size))
    scale = np.empty((blocks, K))
    for b in range(blocks):
        C = np.repeat(np.eye(size)[None], K, axis=0)
        for t in range(m.steps):
            st = ng.states[t]
            eta_t = m.etas[t]
            E = rng.standard_normal((n0, k + st.L.shape[1]))
            X = rng.standard_normal((n0, size))
            noise = rng.standard_normal(n0)
            w, u = _weights(m, st, E, noise, fractions, values, xi, wxi)
            mw, sw, mu = refs[t]
            for g in range(K):
                # the weights' first two moments (and the noise weight's mean) set to the
                # reference's: their O(n0^-1/2) sampling would move the whole spectrum
                wg = mw[g] + (w[:, g] - w[:, g].mean()) * (sw[g] / max(w[:, g].std(), 1e-300))
                ug = u[:, g] * (mu[g] / u[:, g].mean()) if u[:, g].mean() > 0 else u[:, g]
                Mg = (X.T * wg) @ X / n0
                Lg = np.eye(size) + eta_t * values[g] * Mg
                Qg = (X.T * ug) @ X
                C[g] = Lg @ C[g] @ Lg.T + size * (eta_t * values[g] / n0) ** 2 * Qg
        cT = ng.states[m.steps].c
        for g in range(K):
            tr = float(np.trace(C[g]))
            scale[b, g] = tr / size / cT[g] if cT[g] > 0 else 1.0
            sig[b, g] = 0.5 * (C[g] + C[g].T) * (size / tr)
    out = (sig, scale)
    for arr in out:
        arr.flags.writeable = False
    if key is not None:
        _CACHE[key] = out
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
    return out


def _weights(m, st, E: np.ndarray, noise: np.ndarray, fractions: np.ndarray,
             values: np.ndarray, xi: np.ndarray, wxi: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
    """Per sample (rows of ``E``: coordinates on E) and group: the weight ``e~ m1'_g`` of the
    step's matrix and ``e~^2 (v_g - m2_g^2)`` of its row noise (module docstring)."""
    S = np.hstack([st.a, st.L])
    F, _, m2, v = xi_moments(m.sigma, st.c, E @ S.T, xi, wxi)
    e = _evaluate(m.g, E[:, :m.k]) - F @ (fractions * values) + math.sqrt(m.delta) * noise
    sc = np.sqrt(st.c)
    m1p = m2 / np.where(sc > 0, sc, np.inf)[None, :]
    return e[:, None] * m1p, (e * e)[:, None] * np.maximum(v - m2**2, 0.0)


def network_bulk(sigma: str | Function, target: str, *, steps: int, alpha0: float,
                 eta: float | Sequence[float], delta: float = 0.0, readout: object = "constant",
                 size: int = DEVICE_SIZE, blocks: int = DEVICE_BLOCKS,
                 seed: int = DEVICE_SEED) -> GroupBulk:
    """The :class:`GroupBulk` of :func:`device_covariances`."""
    return GroupBulk(device_covariances(sigma, target, steps=steps, alpha0=alpha0, eta=eta,
                                        delta=delta, readout=readout, size=size, blocks=blocks,
                                        seed=seed)[0])


def device_scales(sigma: str | Function, target: str, **kw) -> np.ndarray:
    """Each block's mean variance outside E over the recursion's ``c_g`` (B x K)."""
    return device_covariances(sigma, target, **kw)[1]
