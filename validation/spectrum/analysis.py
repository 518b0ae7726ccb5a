"""Spectral analysis of the weights and features: bulk edge, outliers, singular-vector
alignments, polynomial amplitudes."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from asymptotics.coefficients.functions import Function, get_function
from asymptotics.coefficients.quadrature import gauss_hermite
from asymptotics.measures.marchenko_pastur import mp_median

from .model import EDGE_METHODS, check_real


@dataclass(frozen=True)
class BulkEdge:
    """Bulk edge estimate: outliers are the singular values above ``threshold``."""

    method: str
    edge: float
    threshold: float
    spacing: float  # 'fit': c of s_(r+j) ~ E - c j^(2/3); 'mp': the MP scale
    n_outliers: int


def _fit_window(m: int) -> int:
    return int(min(max(8, round(2 * m ** (1 / 3))), 40, max(3, m // 4)))


def bulk_edge(
    singular_values: np.ndarray,
    shape: tuple[int, int],
    *,
    method: str = "fit",
    kappa: float = 2.0,
    r_max: int | None = None,
) -> BulkEdge:
    """Bulk edge and outlier threshold of the singular values of a ``shape = (p, d)`` matrix whose
    bulk is normalised as ``W0`` (entries of variance ~ 1/d). See the module docstring for the
    ``'fit'`` and ``'mp'`` methods; ``kappa`` sets the margin (in units of the fitted spacing, or
    of ``m^(-2/3)`` relative to the MP edge), which shrinks with the size."""
    if method not in EDGE_METHODS:
        raise ValueError(f"method must be one of {EDGE_METHODS}, got {method!r}")
    kappa = check_real(kappa, "kappa", 0.0)
    s = np.sort(np.asarray(singular_values, dtype=np.float64))[::-1]
    p, d = shape
    m = s.size
    if m != min(p, d) or m < 12:
        raise ValueError(f"need the min(p, d) >= 12 singular values of a {p} x {d} matrix, "
                         f"got {m}")
    beta = p / d
    if method == "mp":
        f, q = max(1.0, beta), min(beta, 1.0 / beta)
        scale = float(np.median(s)) / math.sqrt(f * mp_median(q))
        edge = scale * (1 + math.sqrt(beta))
        thr = edge * (1 + kappa * m ** (-2 / 3))
        return BulkEdge("mp", edge, thr, scale, int(np.sum(s > thr)))
    J = _fit_window(m)
    r_cap = max(0, min(m - J - 1, m // 3))
    r = min(r_max if r_max is not None else min(10, m // 10), r_cap)
    j23 = np.arange(1, J + 1) ** (2 / 3)
    A = np.column_stack([np.ones(J), -j23])
    seen: list[int] = []
    E = c = thr = math.nan
    for _ in range(60):
        (E, c), *_ = np.linalg.lstsq(A, s[r : r + J], rcond=None)
        c = max(float(c), 1e-12 * max(abs(float(E)), 1.0))
        thr = float(E) + kappa * c
        r_new = min(int(np.sum(s > thr)), r_cap)
        if r_new == r or r_new in seen:
            r = r_new
            break
        seen.append(r)
        r = r_new
    return BulkEdge("fit", float(E), float(thr), float(c), int(np.sum(s > thr)))


@dataclass(frozen=True, eq=False)
class WeightSpectrum:
    """Spectrum of a weight matrix and its outliers.

    ``right_overlaps[i, j] = |<v_i, theta_j>|``; ``left_overlaps[i, m-1] = |<u_i, h_m>|`` with
    ``h_m`` the degree-m polynomial of the readout orthonormalised against degrees < m (NaN where
    the readout's powers are degenerate); ``left_degree[i]`` the argmax (a second-step term of
    Taylor order k has degree k + 1)."""

    singular_values: np.ndarray = field(repr=False)
    edge: BulkEdge
    outliers: np.ndarray
    right_overlaps: np.ndarray
    left_overlaps: np.ndarray
    left_degree: np.ndarray

    @property
    def n_outliers(self) -> int:
        return int(self.outliers.size)


def readout_polynomials(a: np.ndarray, max_degree: int) -> np.ndarray:
    """p x max_degree: column m-1 is a^m (entrywise) orthonormalised against 1, a, ..., a^(m-1)
    (close to He_m(sqrt p a) / norm for a Gaussian readout); NaN columns where degenerate."""
    g = np.asarray(a, dtype=np.float64) * math.sqrt(a.size)
    V = np.column_stack([g**m for m in range(max_degree + 1)])
    out = np.full((a.size, max_degree), np.nan)
    basis: list[np.ndarray] = []
    for m in range(max_degree + 1):
        v = V[:, m].copy()
        for b in basis:
            v -= (b @ v) * b
        for b in basis:  # second pass for stability
            v -= (b @ v) * b
        nv = np.linalg.norm(v)
        if nv > 1e-8 * np.linalg.norm(V[:, m]):
            v /= nv
            basis.append(v)
            if m >= 1:
                out[:, m - 1] = v
    return out


def singular_values(M: np.ndarray) -> np.ndarray:
    """All ``min(p, d)`` singular values of ``M`` in decreasing order, as square roots of the
    eigenvalues of the smaller Gram matrix (``M M^T`` or ``M^T M``): 5-10x faster than an SVD at
    p ~ 2000 and accurate to ``~1e-16 s_max^2 / s`` absolutely, ample for an order-one bulk."""
    M = np.asarray(M, dtype=np.float64)
    G = M @ M.T if M.shape[0] <= M.shape[1] else M.T @ M
    ev = np.linalg.eigvalsh(G)[::-1]
    return np.sqrt(np.clip(ev, 0.0, None))


def top_singular_vectors(M: np.ndarray, r: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(U_r, s_r, V_r)``: the top ``r`` singular triplets of ``M`` (``U_r`` p x r, ``V_r`` d x r),
    from a partial eigendecomposition of the smaller Gram matrix."""
    from scipy import linalg

    M = np.asarray(M, dtype=np.float64)
    p, d = M.shape
    if r <= 0:
        return np.zeros((p, 0)), np.zeros(0), np.zeros((d, 0))
    left = p <= d
    G = M @ M.T if left else M.T @ M
    m = G.shape[0]
    ev, vec = linalg.eigh(G, subset_by_index=[m - r, m - 1])
    ev, vec = ev[::-1], vec[:, ::-1]
    s = np.sqrt(np.clip(ev, 0.0, None))
    safe = np.where(s > 0, s, 1.0)
    if left:
        return vec, s, (M.T @ vec) / safe
    return (M @ vec) / safe, s, vec


def weight_spectrum(
    M: np.ndarray,
    *,
    directions: np.ndarray | None = None,
    readout: np.ndarray | None = None,
    max_degree: int = 5,
    method: str = "fit",
    kappa: float = 2.0,
) -> WeightSpectrum:
    """Singular values of ``M`` (p x d), bulk edge, outliers and their alignments."""
    M = np.asarray(M, dtype=np.float64)
    s = singular_values(M)
    edge = bulk_edge(s, M.shape, method=method, kappa=kappa)
    r = edge.n_outliers
    U, _, V = top_singular_vectors(M, r)
    if directions is not None:
        right = np.abs(V.T @ np.atleast_2d(directions).T)
    else:
        right = np.zeros((r, 0))
    if readout is not None:
        H = readout_polynomials(readout, max_degree)
        left = np.abs(U.T @ H)
        filled = np.where(np.isnan(left), -1.0, left)
        degree = np.argmax(filled, axis=1) + 1 if r else np.zeros(0, dtype=int)
    else:
        left = np.zeros((r, 0))
        degree = np.zeros(r, dtype=int)
    return WeightSpectrum(s, edge, s[:r].copy(), right, left, np.asarray(degree))


@dataclass(frozen=True, eq=False)
class FeatureSpectrum:
    """Spectrum of the centred features ``(sigma(X W^T) - E sigma(z)) / sqrt n`` and its outliers;
    ``hermite_overlaps[i, j, l-1] = |cos(u_i, He_l(X theta_j))|`` for the left vectors u_i."""

    singular_values: np.ndarray = field(repr=False)
    edge: BulkEdge
    outliers: np.ndarray
    hermite_overlaps: np.ndarray

    @property
    def n_outliers(self) -> int:
        return int(self.outliers.size)


def _gaussian_mean(fn: Function) -> float:
    z, w = gauss_hermite(160)
    return float(np.sum(w * fn(z)))


def feature_spectrum(
    W: np.ndarray,
    X: np.ndarray,
    sigma: str | Function,
    *,
    directions: np.ndarray | None = None,
    max_degree: int = 5,
    method: str = "fit",
    kappa: float = 2.0,
) -> FeatureSpectrum:
    """Spike analysis of the features of W on the inputs X (n x d), centred by ``E sigma(z)``."""
    fn = get_function(sigma)
    F = (fn(X @ W.T) - _gaussian_mean(fn)) / math.sqrt(X.shape[0])
    s = singular_values(F)
    edge = bulk_edge(s, F.shape, method=method, kappa=kappa)
    r = edge.n_outliers
    U = top_singular_vectors(F, r)[0]
    if directions is None:
        return FeatureSpectrum(s, edge, s[:r].copy(), np.zeros((r, 0, max_degree)))
    Z = X @ np.atleast_2d(directions).T
    ov = np.empty((r, Z.shape[1], max_degree))
    for j in range(Z.shape[1]):
        he_prev, he = np.ones_like(Z[:, j]), Z[:, j].copy()
        for l in range(1, max_degree + 1):
            ov[:, j, l - 1] = np.abs(U.T @ he) / np.linalg.norm(he)
            he_prev, he = he, Z[:, j] * he - l * he_prev
    return FeatureSpectrum(s, edge, s[:r].copy(), ov)


def polynomial_amplitudes(
    delta_W: np.ndarray, readout: np.ndarray, max_degree: int = 5
) -> tuple[np.ndarray, np.ndarray]:
    """``A_m = |h_m^T delta_W|`` for the readout polynomials ``h_1..h_max_degree`` (see
    :func:`readout_polynomials`) and their noise floors ``F_m = (sum_j h_mj^2 |r_j|^2)^(1/2)``,
    ``r_j`` the rows of ``(I - P) delta_W`` (P the projector on 1, h_1, ...): what ``A_m`` would be
    if row j carried only its own residual, so ``sqrt(A_m^2 - F_m^2)`` estimates the signal on
    degree m. The second step's term of Taylor order k lives on degree k + 1 and grows like
    ``p^(a2 - k (1/2 - a1))`` (``asymptotics.multiindex.spikes``)."""
    H = readout_polynomials(readout, max_degree)
    ok = ~np.isnan(H[0])
    amps = np.full(max_degree, np.nan)
    floors = np.full(max_degree, np.nan)
    amps[ok] = np.linalg.norm(H[:, ok].T @ delta_W, axis=1)
    B = np.column_stack([np.ones(H.shape[0]) / math.sqrt(H.shape[0]), H[:, ok]])
    resid = delta_W - B @ (B.T @ delta_W)
    row2 = np.sum(resid * resid, axis=1) * H.shape[0] / (H.shape[0] - B.shape[1])
    floors[ok] = np.sqrt((H[:, ok] ** 2).T @ row2)
    return amps, floors


