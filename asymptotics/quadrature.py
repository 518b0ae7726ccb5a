"""Gaussian quadrature for E_Z[F(a + b Z)], Z ~ N(0,1), with kinks handled by splitting.

Smooth F: probabilists' Gauss-Hermite (weights normalised to sum to 1). F with kinks at points
t: Gauss-Legendre pieces on [-L, L] split at z = (t - a)/b, each piece carrying the Gaussian
density in its weights (plain Gauss-Hermite on a kink converges like n^-1.5, the split rule to
machine precision; tests/test_quadrature.py).
The reduction over nodes is a numba kernel; evaluating F on the nodes is vectorised numpy, so a
user-supplied Python callable works as well as a registered function.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numba
import numpy as np
from scipy.special import roots_hermitenorm, roots_legendre

from .functions import Function

N_SMOOTH = 180  # Gauss-Hermite nodes for smooth integrands (tanh needs ~160 for 1e-14)
N_PIECE = 80  # Gauss-Legendre nodes per piece between kinks
HALF_WIDTH = 12.0  # Gaussian mass beyond |z| > 12 is 3.6e-33


@lru_cache(maxsize=16)
def gauss_hermite(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Probabilists' Gauss-Hermite nodes and weights with sum(weights) = 1."""
    x, w = roots_hermitenorm(n)
    return x, w / w.sum()


@lru_cache(maxsize=16)
def _legendre(n: int) -> tuple[np.ndarray, np.ndarray]:
    return roots_legendre(n)


def gaussian_nodes(
    shift: np.ndarray,
    scale: np.ndarray,
    kinks: Sequence[float] = (),
    *,
    n_smooth: int = N_SMOOTH,
    n_piece: int = N_PIECE,
) -> tuple[np.ndarray, np.ndarray]:
    """Nodes z (m, n) and weights w (m, n) such that sum_j w_ij F(shift_i + scale_i z_ij)
    approximates E_Z F(shift_i + scale_i Z), for F smooth except at ``kinks``."""
    shift = np.atleast_1d(np.asarray(shift, dtype=np.float64))
    scale = np.broadcast_to(np.asarray(scale, dtype=np.float64), shift.shape)
    m = shift.size
    if not kinks or np.all(scale == 0.0):
        x, w = gauss_hermite(n_smooth)
        return np.broadcast_to(x, (m, n_smooth)), np.broadcast_to(w, (m, n_smooth))
    t, wt = _legendre(n_piece)
    L = HALF_WIDTH
    with np.errstate(divide="ignore", invalid="ignore"):
        bps = np.stack([(k - shift) / scale for k in kinks], axis=1)  # (m, K)
    bps = np.where(np.isfinite(bps), bps, L)
    bps = np.sort(np.clip(bps, -L, L), axis=1)
    edges = np.concatenate([np.full((m, 1), -L), bps, np.full((m, 1), L)], axis=1)
    lo, hi = edges[:, :-1], edges[:, 1:]  # (m, K+1)
    mid, half = 0.5 * (lo + hi), 0.5 * (hi - lo)
    z = mid[:, :, None] + half[:, :, None] * t[None, None, :]
    w = half[:, :, None] * wt[None, None, :] * np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
    return z.reshape(m, -1), w.reshape(m, -1)


@numba.njit(cache=True, error_model="numpy")
def weighted_moments(values: np.ndarray, z: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Kernel: per row i, (sum w F, sum w F z, sum w F^2) over the nodes j."""
    m, n = values.shape
    out = np.zeros((m, 3))
    for i in range(m):
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        for j in range(n):
            wf = w[i, j] * values[i, j]
            s0 += wf
            s1 += wf * z[i, j]
            s2 += wf * values[i, j]
        out[i, 0] = s0
        out[i, 1] = s1
        out[i, 2] = s2
    return out


def gaussian_moments(
    fn: Function, shift: np.ndarray, scale: np.ndarray, *, derivative: bool = False, **kw
) -> np.ndarray:
    """Rows (E F, E[F Z], E F^2) of F(shift + scale Z); F = fn, or fn' if ``derivative``."""
    z, w = gaussian_nodes(shift, scale, fn.kinks, **kw)
    shift = np.atleast_1d(np.asarray(shift, dtype=np.float64))
    scale = np.broadcast_to(np.asarray(scale, dtype=np.float64), shift.shape)
    arg = shift[:, None] + scale[:, None] * z
    values = fn.derivative(arg) if derivative else fn(arg)
    if not np.all(np.isfinite(values)):
        raise ValueError(f"function {fn.name!r} returned non-finite values at quadrature nodes")
    return weighted_moments(
        np.ascontiguousarray(values), np.ascontiguousarray(z), np.ascontiguousarray(w)
    )


def kappa_rule(kinks_in_kappa: Sequence[float] = (), n: int = 120) -> tuple[np.ndarray, np.ndarray]:
    """Outer rule for E_kappa over kappa ~ N(0,1): Gauss-Legendre on [-12, 12] split at the given
    points (where an integrand in kappa is not smooth, e.g. g(kappa) for gamma = 1), else
    Gauss-Hermite."""
    if not kinks_in_kappa:
        return gauss_hermite(n)
    z, w = gaussian_nodes(np.zeros(1), np.ones(1), tuple(kinks_in_kappa), n_piece=n)
    keep = w[0] > 0
    return z[0][keep].copy(), w[0][keep].copy()
