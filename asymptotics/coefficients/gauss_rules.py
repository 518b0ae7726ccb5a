"""Gauss rules for E_Z[F(a + bZ)], Z ~ N(0,1), with kinks handled by splitting (no functions
here: the bottom layer of the quadrature).

Smooth F: probabilists' Gauss-Hermite (weights normalised to sum to 1). F with kinks at points
t: Gauss-Legendre pieces on [-L, L] split at z = (t - a)/b, each piece carrying the Gaussian
density in its weights (plain Gauss-Hermite on a kink converges like n^-1.5, the split rule to
machine precision; tests/test_quadrature.py).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from scipy.special import roots_hermitenorm, roots_legendre

N_SMOOTH = 180  # Gauss-Hermite nodes for smooth integrands (tanh needs ~160 for 1e-14)
N_PIECE = 80  # Gauss-Legendre nodes per piece between kinks
HALF_WIDTH = 12.0  # Gaussian mass beyond |z| > 12 is 3.6e-33
#: the largest tensor rule built (33^4 = 1.2e6 at the top of the r = 4 ladder fits in ~0.7 GB)
MAX_TENSOR_NODES = 2_000_000
PRUNE = 1e-12  # tensor nodes whose weight is below PRUNE * max weight are dropped


@lru_cache(maxsize=16)
def gauss_hermite(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Probabilists' Gauss-Hermite nodes and weights with sum(weights) = 1."""
    x, w = roots_hermitenorm(n)
    return x, w / w.sum()


@lru_cache(maxsize=16)
def legendre(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes and weights on [-1, 1] (cached)."""
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
    t, wt = legendre(n_piece)
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


def tensor_rule(r: int, n: int | tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Tensor probabilists' Gauss-Hermite rule in r dimensions (weights sum to 1), pruned;
    ``n`` nodes per dimension, or a tuple of counts. A rule of more than
    :data:`MAX_TENSOR_NODES` nodes is refused in one line (it would not fit in memory)."""
    counts = (n,) * r if isinstance(n, int) else tuple(n)
    if math.prod(counts) > MAX_TENSOR_NODES:
        raise ValueError(f"a tensor quadrature rule over {len(counts)} dimensions with "
                         f"{'x'.join(map(str, counts))} = {math.prod(counts):.2g} nodes exceeds "
                         f"{MAX_TENSOR_NODES:.0e}: too many Gaussian directions to integrate "
                         "(fewer target variables, or a polynomial target: exact with fewer "
                         "nodes)")
    pts, wts = _tensor_rule(counts)
    return pts.copy(), wts.copy()


@lru_cache(maxsize=32)
def _tensor_rule(counts: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    r = len(counts)
    if r == 1:
        x, w = gauss_hermite(counts[0])
        return x[:, None].copy(), w.copy()
    rules = [gauss_hermite(m) for m in counts]
    pts = np.array(list(itertools.product(*[x for x, _ in rules])))
    wts, keep = tensor_keep.__wrapped__(counts)  # (not cached: kappa rules are large)
    return np.ascontiguousarray(pts[keep]), wts / wts.sum()


@lru_cache(maxsize=32)
def tensor_keep(counts: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The kept weights of the tensor rule of ``counts`` and their indices in the full product
    (``itertools.product`` order: the last axis fastest)."""
    wts = np.prod(np.array(list(itertools.product(*[gauss_hermite(m)[1] for m in counts]))),
                  axis=1)
    keep = np.flatnonzero(wts > PRUNE * wts.max())
    return wts[keep], keep
