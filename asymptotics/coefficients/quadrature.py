"""Gaussian quadrature for E_Z[F(a + b Z)], Z ~ N(0,1), with kinks handled by splitting.

Smooth F: probabilists' Gauss-Hermite (weights normalised to sum to 1). F with kinks at points
t: Gauss-Legendre pieces on [-L, L] split at z = (t - a)/b, each piece carrying the Gaussian
density in its weights (plain Gauss-Hermite on a kink converges like n^-1.5, the split rule to
machine precision; tests/test_quadrature.py).
The reduction over nodes is a numba kernel; evaluating F on the nodes is vectorised numpy, so a
user-supplied Python callable works as well as a registered function.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from asymptotics.coefficients.functions import Function
from asymptotics.coefficients.gauss_rules import (
    HALF_WIDTH,
    N_PIECE,
    N_SMOOTH,
    gauss_hermite,
    gaussian_nodes,
)
from asymptotics.core.coldstart import kernel

__all__ = ["HALF_WIDTH", "N_PIECE", "N_SMOOTH", "gauss_hermite", "gaussian_moments",
           "gaussian_nodes", "kappa_rule", "weighted_moments"]


@kernel(cache=True, error_model="numpy")
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
    # writeable C arrays: one compiled signature whether or not the rule came from a cache
    return weighted_moments(_writeable(values), _writeable(z), _writeable(w))


def _writeable(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=np.float64)
    return a if a.flags.writeable else a.copy()


def kappa_rule(kinks_in_kappa: Sequence[float] = (), n: int = 120) -> tuple[np.ndarray, np.ndarray]:
    """Outer rule for E_kappa over kappa ~ N(0,1): Gauss-Legendre on [-12, 12] split at the given
    points (where an integrand in kappa is not smooth, e.g. g(kappa) for gamma = 1), else
    Gauss-Hermite."""
    if not kinks_in_kappa:
        return gauss_hermite(n)
    z, w = gaussian_nodes(np.zeros(1), np.ones(1), tuple(kinks_in_kappa), n_piece=n)
    keep = w[0] > 0
    return z[0][keep].copy(), w[0][keep].copy()


@kernel(cache=True, error_model="numpy")
def tail_sums(terms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Kernel: compensated (Neumaier) tail sums of each row of ``terms`` (p x m): ``above[p, j]``
    over the columns j.., ``below[p, j]`` over the columns < j (p x (m + 1) each)."""
    q, m = terms.shape
    above, below = np.zeros((q, m + 1)), np.zeros((q, m + 1))
    for p in range(q):
        for up in (True, False):
            acc, comp = 0.0, 0.0
            for k in range(m):
                j = m - 1 - k if up else k
                v = terms[p, j]
                t = acc + v
                comp += ((acc - t) + v) if abs(acc) >= abs(v) else ((v - t) + acc)
                acc = t
                if up:
                    above[p, j] = acc + comp
                else:
                    below[p, j + 1] = acc + comp
    return above, below


@kernel(cache=True, error_model="numpy")
def mirror_pairs(pts: np.ndarray) -> tuple:
    """Kernel: (first, twin, lone) of the shifts ``pts``: pts[twin] = -pts[first] < 0 for each
    negative shift whose negative is among them (the leftmost in sorted order), ``lone`` the
    indices in no pair (``spiked.coefficients._smooth_moments``' pairs evaluated once;
    ``line_moments.piece_offsets``' mirrored pieces)."""
    n = pts.shape[0]
    srt = np.argsort(pts)
    ps = pts[srt]
    first = np.empty(n, dtype=np.int64)
    twin = np.empty(n, dtype=np.int64)
    single = np.ones(n, dtype=np.bool_)
    k = 0
    for i in range(n):
        if not ps[i] < 0.0:
            break
        at = min(np.searchsorted(ps, -ps[i]), n - 1)
        if ps[at] == -ps[i]:
            first[k], twin[k] = srt[at], srt[i]
            single[srt[at]] = single[srt[i]] = False
            k += 1
    return first[:k], twin[:k], np.flatnonzero(single)


@kernel(cache=True, error_model="numpy")
def antisymmetric(t: np.ndarray) -> bool:
    """Kernel: whether t[n - 1 - j] == -t[j] for every j (``np.array_equal(t[::-1], -t)``
    without its temporaries: NaN is unequal, -0.0 equals 0.0)."""
    n = t.shape[0]
    for j in range(n):
        if not t[n - 1 - j] == -t[j]:
            return False
    return True


@kernel(cache=True, error_model="numpy")
def mirror_rows(raw: np.ndarray) -> None:
    """Kernel: the rows n - 1 - j (j < n / 2) of the moments ``raw`` (n, 3) of an odd F from
    row j: (-E F, E[F Z], E F^2) (``spiked.coefficients.odd_sigma``;
    the shifts t_{n-1-j} = -t_j)."""
    n = raw.shape[0]
    for j in range(n // 2):
        raw[n - 1 - j, 0] = -raw[j, 0]
        raw[n - 1 - j, 1] = raw[j, 1]
        raw[n - 1 - j, 2] = raw[j, 2]


@kernel(cache=True, error_model="numpy")
def grid_moments(values: np.ndarray, wo: np.ndarray, wom: np.ndarray) -> tuple:
    """Kernel: (finite, h, h2, h1t) of a target's values (m, n) at the m nodes of an omega rule
    (weights ``wo``, ``wom`` = wo times the free omegas, (m, f)) and n kappa nodes:
    h_j = sum_i wo_i g_ij, h2_j = sum_i wo_i g_ij^2, h1t[f, j] = sum_i wom_if g_ij, each summed
    over the rule's nodes in order (any block of kappa nodes: the same numbers); finite False
    where a value is not (``spiked.coefficients.target_tables``)."""
    m, n = values.shape
    nf = wom.shape[1]
    h, h2, h1t = np.zeros(n), np.zeros(n), np.zeros((nf, n))
    finite = True
    for i in range(m):
        wi = wo[i]
        for j in range(n):
            g = values[i, j]
            finite = finite and abs(g) < np.inf
            h[j] += wi * g
            h2[j] += wi * (g * g)
        for f in range(nf):
            wf = wom[i, f]
            for j in range(n):
                h1t[f, j] += wf * values[i, j]
    return finite, h, h2, h1t
