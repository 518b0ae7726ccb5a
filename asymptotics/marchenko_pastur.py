"""The spectral measure of THEORY.md §6: deterministic Marchenko-Pastur and empirical atoms.

Deterministic (d -> infinity): rho = c x with x ~ MP(beta), the law of the eigenvalues of
(1/d) G G^T, G a p x d standard Gaussian matrix, beta = p/d: density
sqrt((b - x)(x - a)) / (2 pi beta x) on [a, b] = [(1 - sqrt beta)^2, (1 + sqrt beta)^2], mean 1,
plus an atom 1 - 1/beta at 0 when beta > 1. The overlaps need only averages of rational functions
of rho against S = s0 + s1 rho, which follow in closed form from the Stieltjes transform

    M(t) = <1/(x + t)> = 2 / (1 - beta + t + sqrt((t + a)(t + b))),   t > 0,

(a cancellation-free form of the usual root), M2(t) = <1/(x + t)^2> = M(t)^2 (1 + D'(t)) / 2 with
D = sqrt((t + a)(t + b)); for t > 100 a moment series (Narayana polynomials) is used instead.
Conditional means F = beta c, H = beta rho replace the sampled projections.

Empirical (finite d): eigen-decomposition of Omega = W Pi W^T, W = sqrt(c) W0, Pi = I - v v^T,
with F_i = p (u_i . W v)^2 and H_i = p (u_i . W t)^2.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numba
import numpy as np

_EMPTY = np.zeros(1)
N_MOMENTS = 14
N_AVERAGES = 14  # the averages returned by measure_moments
MEASURE_MP = 0
MEASURE_ATOMS = 1
MEASURE_CHANNELS = 2
MEASURE_POPULATION = 3
MEASURE_QUADRATURE = 4


@numba.njit(cache=True, error_model="numpy")
def _binom(n: int, k: int) -> float:
    out = 1.0
    for i in range(k):
        out = out * (n - i) / (i + 1)
    return out


@numba.njit(cache=True, error_model="numpy")
def mp_moments(beta: float, kmax: int) -> np.ndarray:
    """Kernel: <x^k>, k = 0..kmax, for MP(beta) (Narayana polynomials)."""
    out = np.zeros(kmax + 1)
    out[0] = 1.0
    for k in range(1, kmax + 1):
        s = 0.0
        for j in range(k):
            s += _binom(k, j) * _binom(k - 1, j) / (j + 1) * beta**j
        out[k] = s
    return out


@numba.njit(cache=True, error_model="numpy")
def _resolvent_mp(beta: float, t: float) -> tuple:
    """Kernel: <1/(x+t)>, <1/(x+t)^2>, <x/(x+t)>, <x/(x+t)^2>, <x^2/(x+t)^2> for MP(beta), t > 0."""
    if t > 100.0:
        mom = mp_moments(beta, N_MOMENTS)
        e = 1.0 / t
        r1 = 0.0  # <1/(1 + e x)>
        r2 = 0.0  # <1/(1 + e x)^2>
        sgn = 1.0
        ek = 1.0
        for k in range(N_MOMENTS + 1):
            r1 += sgn * mom[k] * ek
            r2 += sgn * (k + 1) * mom[k] * ek
            sgn = -sgn
            ek *= e
        g1 = e * r1
        g2 = e * e * r2
        x1 = 1.0 - r1  # <x/(x+t)> = 1 - t <1/(x+t)>
        x1b = e * (r1 - r2)  # <x/(x+t)^2> = <1/(x+t)> - t <1/(x+t)^2>
        x2 = 1.0 - 2.0 * r1 + r2
        return g1, g2, x1, x1b, x2
    sa = (1.0 - math.sqrt(beta)) ** 2
    sb = (1.0 + math.sqrt(beta)) ** 2
    dd = math.sqrt((t + sa) * (t + sb))
    ddp = (2.0 * t + sa + sb) / (2.0 * dd)
    m1 = 2.0 / (1.0 - beta + t + dd)
    m2 = 0.5 * m1 * m1 * (1.0 + ddp)
    x1 = 4.0 * t / ((dd + t) ** 2 - (1.0 - beta) ** 2)
    x1b = m1 - t * m2
    x2 = x1 - t * x1b
    return m1, m2, x1, x1b, x2


@numba.njit(cache=True, error_model="numpy")
def measure_moments(
    kind: int,
    beta: float,
    c: float,
    rho: np.ndarray,
    F: np.ndarray,
    H: np.ndarray,
    G: np.ndarray,
    s0: float,
    s1: float,
) -> np.ndarray:
    """Kernel: averages over the spectral measure with S = s0 + s1 rho, in the order
    <1/S>, <rho/S>, <1/S^2>, <rho/S^2>, <rho^2/S^2>, <F/S>, <H/S>,
    <F/S^2>, <F rho/S^2>, <H/S^2>, <H rho/S^2>, <G/S>, <G/S^2>, <G rho/S^2>
    with the channels F = F_vv, H = F_tt, G = F_vt (docs/DERIVATIONS.md §5).
    kind = 0: MP(beta) scaled by c, with F = beta c, H = beta rho and G = 0; kind = 1: atoms
    (rho, F, H, G). Returns NaNs when an average diverges (S = 0 on an atom)."""
    out = np.empty(N_AVERAGES)
    if kind == 1:
        out[:] = 0.0
        n = rho.shape[0]
        for i in range(n):
            S = s0 + s1 * rho[i]
            if S <= 0.0:
                out[:] = np.nan
                return out
            iS = 1.0 / S
            iS2 = iS * iS
            out[0] += iS
            out[1] += rho[i] * iS
            out[2] += iS2
            out[3] += rho[i] * iS2
            out[4] += rho[i] * rho[i] * iS2
            out[5] += F[i] * iS
            out[6] += H[i] * iS
            out[7] += F[i] * iS2
            out[8] += F[i] * rho[i] * iS2
            out[9] += H[i] * iS2
            out[10] += H[i] * rho[i] * iS2
            out[11] += G[i] * iS
            out[12] += G[i] * iS2
            out[13] += G[i] * rho[i] * iS2
        for j in range(N_AVERAGES):
            out[j] /= n
        return out
    if kind == 3:
        _population_bulk(out, beta, rho, np.full(rho.shape[0], 1.0 / rho.shape[0]), s0, s1)
        if not math.isnan(out[0]):
            _special_columns(out, beta, F, G, H, s1)
        return out
    if kind == 4:
        n = rho.shape[0] // 5
        _population_bulk(out, beta, rho[:n], F[:n], s0, s1)
        if not math.isnan(out[0]):
            _quadrature_columns(out, beta, rho, F, H[0], s1, n)
        return out
    u = s1 * c
    if s1 < 0.0 or s0 < 0.0 or (s0 == 0.0 and (u == 0.0 or beta >= 1.0)):
        out[:] = np.nan
        return out
    if u == 0.0:
        g1 = 1.0 / s0
        g2 = g1 * g1
        out[0] = g1
        out[1] = c * g1
        out[2] = g2
        out[3] = c * g2
        out[4] = c * c * (1.0 + beta) * g2
    elif s0 == 0.0:  # beta < 1: <x^-1> = 1/(1-beta), <x^-2> = 1/(1-beta)^3
        ib = 1.0 / (1.0 - beta)
        out[0] = ib / u
        out[1] = c / u
        out[2] = ib**3 / (u * u)
        out[3] = c * ib / (u * u)
        out[4] = c * c / (u * u)
    else:
        t = s0 / u
        m1, m2, x1, x1b, x2 = _resolvent_mp(beta, t)
        out[0] = m1 / u
        out[1] = c * x1 / u
        out[2] = m2 / (u * u)
        out[3] = c * x1b / (u * u)
        out[4] = c * c * x2 / (u * u)
    if kind == 2:
        _special_columns(out, beta, F, G, H, s1)
        return out
    bc = beta * c
    out[5] = bc * out[0]
    out[6] = beta * out[1]
    out[7] = bc * out[2]
    out[8] = bc * out[3]
    out[9] = beta * out[3]
    out[10] = beta * out[4]
    out[11] = 0.0
    out[12] = 0.0
    out[13] = 0.0
    return out


@numba.njit(cache=True, error_model="numpy")
def _population_bulk(
    out: np.ndarray, beta: float, lam: np.ndarray, wts: np.ndarray, s0: float, s1: float
) -> None:
    """Kernel: the bulk averages out[0:5] of Omega = B B^T (p x p) when the d columns of B have
    population variances lam_j / d (generalised Marchenko-Pastur law, Silverstein and Bai 1995;
    docs/DERIVATIONS.md §7). m = <1/S> solves 1 = s0 m + <g(s1 m lam)>, g(y) = y/(1 + beta y)
    (the leave-one-column-out identity), by safeguarded Newton; the other averages are its
    derivatives in s0, s1. ``wts``: the weight of each lam_j (sum 1; 1/d for the d population
    variances of a sampled device, Gauss weights for a quadrature of the population law).
    NaNs when S = 0 is not excluded (s0 = 0 and the root does not exist)."""
    n = lam.shape[0]
    if s0 < 0.0 or s1 < 0.0 or (s0 == 0.0 and s1 == 0.0):
        out[0:5] = np.nan
        return
    mean1 = 0.0
    mean2 = 0.0
    for j in range(n):
        mean1 += wts[j] * lam[j]
        mean2 += wts[j] * lam[j] * lam[j]
    if s1 == 0.0:
        g1 = 1.0 / s0
        out[0] = g1
        out[1] = mean1 * g1
        out[2] = g1 * g1
        out[3] = mean1 * g1 * g1
        out[4] = (mean2 + beta * mean1 * mean1) * g1 * g1  # <rho^2> of the p x p Gram
        return
    # phi(m) = s0 m + <g(s1 m lam)> - 1 is increasing and concave in m, phi(0) = -1
    lo = 0.0
    hi = 1.0 / s0 if s0 > 0.0 else 1.0
    for _ in range(200):  # bracket
        phi = s0 * hi - 1.0
        for j in range(n):
            y = s1 * hi * lam[j]
            phi += wts[j] * y / (1.0 + beta * y)
        if phi >= 0.0:
            break
        lo = hi
        hi *= 2.0
    else:
        out[0:5] = np.nan
        return
    m = 0.5 * (lo + hi)
    for _ in range(200):
        phi = s0 * m - 1.0
        dphi = s0
        for j in range(n):
            y = s1 * m * lam[j]
            den = 1.0 + beta * y
            phi += wts[j] * y / den
            dphi += wts[j] * s1 * lam[j] / (den * den)
        if phi > 0.0:
            hi = m
        else:
            lo = m
        step = phi / dphi if dphi > 0.0 else 0.0
        mn = m - step
        if not (lo < mn < hi):
            mn = 0.5 * (lo + hi)
        if abs(mn - m) <= 1e-15 * m:
            m = mn
            break
        m = mn
    w = s1 * m
    A = 0.0
    B = 0.0
    for j in range(n):
        den = 1.0 + beta * lam[j] * w
        A += wts[j] * lam[j] / den
        B += wts[j] * lam[j] / (den * den)
    D = s0 + s1 * B
    m2 = m / D  # <1/S^2> = -dm/ds0
    mr2 = m * B / D  # <rho/S^2> = -dm/ds1
    x2 = 0.0  # <rho^2/S^2> = -d(m A)/ds1
    for j in range(n):
        den = 1.0 + beta * lam[j] * w
        x2 += wts[j] * lam[j] * (beta * lam[j] * m * m + mr2) / (den * den)
    out[0] = m
    out[1] = m * A  # <rho/S> = (1 - s0 m)/s1
    out[2] = m2
    out[3] = mr2
    out[4] = x2


@numba.njit(cache=True, error_model="numpy")
def _special_columns(
    out: np.ndarray, beta: float, F: np.ndarray, G: np.ndarray, H: np.ndarray, s1: float
) -> None:
    """Kernel: the channel averages (out[5:14]) of a bulk with K special columns, given its MP
    averages out[0:5] (docs/DERIVATIONS.md §7). The columns T (Bt and the bulk directions
    correlated with Bv) have population covariance C = sum_j lam_j e_j e_j^T (lam = H), and
    T^T S^-1 T = sum_j f_j e_j e_j^T, f_j = x_j/(1 + s1 x_j), x_j = beta lam_j <1/S>
    (Sherman-Morrison against the rest of the Gram matrix). Bt = T e_0 has coordinates
    b_j = G[j] on the e_j; Bv = T kappa + e with coordinates a_j = F[1 + j] and e independent
    of Omega with variance F[0] (channel beta F[0])."""
    m, m2, mr2 = out[0], out[2], out[3]
    sind = F[0]
    fvv, fvv2, fvvr = beta * sind * m, beta * sind * m2, beta * sind * mr2
    fvt = fvt2 = fvtr = ftt = ftt2 = fttr = 0.0
    for j in range(H.shape[0]):
        lam = H[j]
        x = beta * lam * m
        den = 1.0 + s1 * x
        f = x / den
        f2 = beta * lam * m2 / (den * den)
        fr = (beta * lam * mr2 + x * x) / (den * den)
        a, b = F[1 + j], G[j]
        fvv += a * a * f
        fvv2 += a * a * f2
        fvvr += a * a * fr
        fvt += a * b * f
        fvt2 += a * b * f2
        fvtr += a * b * fr
        ftt += b * b * f
        ftt2 += b * b * f2
        fttr += b * b * fr
    out[5] = fvv
    out[6] = ftt
    out[7] = fvv2
    out[8] = fvvr
    out[9] = ftt2
    out[10] = fttr
    out[11] = fvt
    out[12] = fvt2
    out[13] = fvtr


@numba.njit(cache=True, error_model="numpy")
def _quadrature_columns(
    out: np.ndarray, beta: float, nodes: np.ndarray, wts: np.ndarray, var_eps: float,
    s1: float, n: int,
) -> None:
    """Kernel: the channel averages (out[5:14]) of :func:`_special_columns` when the spectral
    measures of b (Bv = (B Pi) b + e, Var e = ``var_eps``) and t against the population
    covariance are given by Gauss rules of n nodes each (docs/DERIVATIONS.md §7, 'A
    deterministic measure'): the rules of |b.e_j|^2, |t.e_j|^2, |(b + t).e_j|^2 and
    |(b - t).e_j|^2 are blocks 1-4 of (``nodes``, ``wts``) (block 0 is the bulk), and the
    cross channel is the polarisation (b + t, b - t)/4."""
    m, m2, mr2 = out[0], out[2], out[3]
    acc = np.zeros((4, 3))
    for r in range(4):
        for j in range((r + 1) * n, (r + 2) * n):
            lam = nodes[j]
            x = beta * lam * m
            den = 1.0 + s1 * x
            acc[r, 0] += wts[j] * x / den
            acc[r, 1] += wts[j] * beta * lam * m2 / (den * den)
            acc[r, 2] += wts[j] * (beta * lam * mr2 + x * x) / (den * den)
    out[5] = beta * var_eps * m + acc[0, 0]
    out[6] = acc[1, 0]
    out[7] = beta * var_eps * m2 + acc[0, 1]
    out[8] = beta * var_eps * mr2 + acc[0, 2]
    out[9] = acc[1, 1]
    out[10] = acc[1, 2]
    out[11] = 0.25 * (acc[2, 0] - acc[3, 0])
    out[12] = 0.25 * (acc[2, 1] - acc[3, 1])
    out[13] = 0.25 * (acc[2, 2] - acc[3, 2])


@dataclass(frozen=True)
class SpectralMeasure:
    """Spectral measure for the overlap equations: MP (``kind='mp'``) or atoms
    (rho_i, F_vv,i, F_vt,i, F_tt,i) (``'atoms'``, or ``'weights'`` when built from a first-layer
    matrix by :func:`from_weights`, which also fixes the spike (r, c, gamma) it implies).

    ``F`` = F_vv, ``H`` = F_tt and ``G`` = F_vt (the cross channel, 0 for MP and for the
    sampled sRF measure in expectation)."""

    kind: str
    beta: float
    c: float
    rho: np.ndarray
    F: np.ndarray
    H: np.ndarray
    G: np.ndarray = field(default_factory=lambda: _EMPTY)
    r: float = math.nan  # spike strength implied by the weights (from_weights only)
    gamma: float = math.nan  # <v, theta*> (from_weights only)

    @property
    def code(self) -> int:
        return {"mp": MEASURE_MP, "channels": MEASURE_CHANNELS,
                "population": MEASURE_POPULATION,
                "quadrature": MEASURE_QUADRATURE}.get(self.kind, MEASURE_ATOMS)

    def moments(self, s0: float, s1: float) -> np.ndarray:
        """The averages of :func:`measure_moments`."""
        return measure_moments(self.code, self.beta, self.c, self.rho, self.F, self.H, self.G,
                               s0, s1)


def marchenko_pastur(beta: float, c: float = 1.0) -> SpectralMeasure:
    """Deterministic measure: rho/c ~ MP(beta), F = beta c, H = beta rho (THEORY.md §6)."""
    if not (beta > 0 and math.isfinite(beta)):
        raise ValueError(f"beta must be > 0 and finite, got {beta}")
    if not (c > 0 and math.isfinite(c)):
        raise ValueError(f"c must be > 0 and finite, got {c}")
    return SpectralMeasure("mp", float(beta), float(c), _EMPTY, _EMPTY, _EMPTY)


def empirical_measure(
    W0: np.ndarray, v: np.ndarray, t: np.ndarray, c: float = 1.0
) -> SpectralMeasure:
    """Atoms of Omega = W Pi W^T, W = sqrt(c) W0, Pi = I - v v^T, with F_i = p (u_i . W v)^2 and
    H_i = p (u_i . W t)^2 (THEORY.md §6). ``v`` and ``t`` are unit vectors, t orthogonal to v."""
    W0 = np.asarray(W0, dtype=np.float64)
    p, d = W0.shape
    v = np.asarray(v, dtype=np.float64) / np.linalg.norm(v)
    t = np.asarray(t, dtype=np.float64)
    t = t - (t @ v) * v
    nt = np.linalg.norm(t)
    t = t / nt if nt > 0 else t
    W = math.sqrt(c) * W0
    Wv = W @ v
    WP = W - np.outer(Wv, v)
    omega = WP @ WP.T
    rho, U = np.linalg.eigh(omega)
    rho = np.maximum(rho, 0.0)
    Wt = W @ t
    F = p * (U.T @ Wv) ** 2
    H = p * (U.T @ Wt) ** 2
    G = p * (U.T @ Wv) * (U.T @ Wt)
    return SpectralMeasure("atoms", p / d, float(c), rho, F, H, G)


def channel_measure(
    beta: float, c: float, svv: float, svt: float, stt: float, *,
    extra: tuple[np.ndarray, np.ndarray] | None = None,
    r: float = math.nan, gamma: float = math.nan,
) -> SpectralMeasure:
    """Deterministic measure of a first layer whose bulk rows b have covariance c I/d outside a
    few special directions: Omega's spectrum is MP(beta) scaled by c (the special directions
    add outliers of weight 1/p), and the channels follow from the covariances of b.v with the
    special columns (docs/DERIVATIONS.md §7). (svv, svt, stt) = d Cov of (b.v, b.t); ``extra``
    = (cvu, Cuu) adds K bulk directions u outside span(v, t) with d Cov(b.v, b.u) = cvu[:, 0],
    d Cov(b.t, b.u) = cvu[:, 1] and d Cov(b.u) = Cuu. (c, 0, c) is the sRF measure exactly."""
    for name, val in (("beta", beta), ("c", c), ("svv", svv), ("stt", stt)):
        if not (val > 0 and math.isfinite(val)):
            raise ValueError(f"{name} must be > 0 and finite, got {val}")
    if not (math.isfinite(svt) and svt * svt <= svv * stt * (1 + 1e-12)):
        raise ValueError(f"svt must satisfy svt^2 <= svv stt (a covariance), got {svt}")
    cvz = np.array([svt], dtype=np.float64)
    czz = np.array([[stt]], dtype=np.float64)
    if extra is not None:
        cvu, cuu = np.asarray(extra[0], dtype=np.float64), np.asarray(extra[1], dtype=np.float64)
        k = cuu.shape[0]
        czz = np.block([[czz, cvu[:, 1][None, :]], [cvu[:, 1][:, None], cuu]])
        cvz = np.concatenate([cvz, cvu[:, 0]])
        if cvu.shape != (k, 2) or not np.all(np.isfinite(czz)):
            raise ValueError("extra must be (cvu of shape K x 2, Cuu of shape K x K), finite")
    lam, V = np.linalg.eigh(czz)
    if lam[0] <= 0:
        raise ValueError("the covariance of the special columns must be positive definite")
    kappa = np.linalg.solve(czz, cvz)
    sind = svv - float(cvz @ kappa)
    if sind < -1e-12 * svv:
        raise ValueError("the covariances are not positive semi-definite (svv too small)")
    F = np.concatenate([[max(sind, 0.0)], V.T @ kappa])
    G = V[0, :].copy()  # Bt = T e_0
    return SpectralMeasure("channels", float(beta), float(c), _EMPTY, F, lam.copy(), G,
                           r=float(r), gamma=float(gamma))


def _real_matrix(name: str, x: object) -> np.ndarray:
    """``x`` as a float64 array; complex input refused (its imaginary part would be dropped)."""
    raw = np.asarray(x)
    if np.iscomplexobj(raw):
        raise ValueError(f"{name} must be real, got complex entries")
    try:
        return np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array of real numbers, got {raw.dtype}") from None


def _unit(name: str, x: np.ndarray | None, d: int, tol: float) -> np.ndarray | None:
    if x is None:
        return None
    x = _real_matrix(name, x)
    if x.shape != (d,):
        raise ValueError(f"{name} must be a vector of length d = {d} (the columns of W), "
                         f"got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} must have finite entries")
    nrm = float(np.linalg.norm(x))
    if abs(nrm - 1.0) > tol:
        raise ValueError(f"{name} must be a unit vector (|{name}| = 1 within {tol:g}), "
                         f"got |{name}| = {nrm:.6g}")
    return x / nrm


def from_weights(
    W: np.ndarray, v: np.ndarray | None, theta: np.ndarray, *, tol: float = 1e-6
) -> SpectralMeasure:
    """Semi-empirical measure of a given first layer ``W`` (p x d, rows w_k, inputs x ~ N(0, I_d)
    so that the pre-activations are w_k . x), for the teacher direction ``theta`` (unit) and the
    spike direction ``v`` (unit; ``None``: the direction of the mean row, which is the spike
    direction of one giant step up to O(p^-1/2)). docs/DERIVATIONS.md §6.

    Conditional on kappa = <v, x>, the pre-activations are r kappa + (B x)_k with
    r = mean_k(w_k . v) and the centred bulk B = W - r 1 v^T; so the cGET tables take
    (r, c = tr(Omega)/p, gamma = <v, theta>), Omega = W Pi W^T (Pi = I - v v^T), and the
    channels are F_vv,i = p (u_i . Bv)^2, F_vt,i = p (u_i . Bv)(u_i . Bt), F_tt,i = p (u_i . Bt)^2
    over the eigenpairs (rho_i, u_i) of Omega, t = (theta - gamma v)/|theta - gamma v|.
    Costs one p x p eigen-decomposition (about 0.3 s at p = 1000, 2 s at p = 2000)."""
    W = _real_matrix("W", W)
    if theta is None:
        raise ValueError("theta (the teacher direction, a unit vector of length d) is required")
    if W.ndim != 2 or W.shape[0] < 2 or W.shape[1] < 2:
        raise ValueError(f"W must be a p x d matrix with p, d >= 2, got shape {W.shape}")
    if not np.all(np.isfinite(W)):
        raise ValueError("W must have finite entries (found NaN or inf)")
    if float(np.max(np.abs(W))) > 1e100:
        raise ValueError(f"W has entries up to {float(np.max(np.abs(W))):.3g}: its Gram matrix "
                         "would overflow float64 (allowed: |W_ij| <= 1e100)")
    p, d = W.shape
    theta = _unit("theta", theta, d, tol)
    v = _unit("v", v, d, tol)
    if v is None:
        mean_row = W.mean(axis=0)
        nrm = float(np.linalg.norm(mean_row))
        if nrm == 0.0:
            raise ValueError("v = None needs a non-zero mean row of W to define the spike")
        v = mean_row / nrm
    gamma = float(np.clip(v @ theta, -1.0, 1.0))
    t = theta - gamma * v
    nt = float(np.linalg.norm(t))
    t = t / nt if nt > 1e-12 else np.zeros(d)
    Wv = W @ v
    r = float(Wv.mean())
    Bv = Wv - r
    WP = W - np.outer(Wv, v)  # W Pi
    omega = WP @ WP.T
    rho, U = np.linalg.eigh(omega)
    rho = np.maximum(rho, 0.0)
    c = float(np.trace(omega) / p)
    Bt = W @ t  # t is orthogonal to v: B t = W t
    fv = U.T @ Bv
    ft = U.T @ Bt
    return SpectralMeasure("weights", p / d, c, rho, p * fv * fv, p * ft * ft, p * fv * ft,
                           r=r, gamma=gamma)


def mp_density(x: np.ndarray, beta: float) -> np.ndarray:
    """Absolutely continuous part of the MP(beta) density (the atom at 0 for beta > 1 excluded)."""
    x = np.asarray(x, dtype=np.float64)
    a, b = (1 - math.sqrt(beta)) ** 2, (1 + math.sqrt(beta)) ** 2
    out = np.zeros_like(x)
    inside = (x > a) & (x < b)
    xi = x[inside]
    out[inside] = np.sqrt((b - xi) * (xi - a)) / (2 * math.pi * beta * xi)
    return out


def mp_expectation(f: Callable[[np.ndarray], np.ndarray], beta: float, n: int = 256) -> float:
    """<f(x)> for x ~ MP(beta), for smooth f, to ~1e-13 with n ~ 256.

    x = m + h cos(theta) turns the square-root edges into a smooth periodic integrand
    (h^2 sin^2 theta / (2 pi beta x)), integrated by the trapezoid rule. The near-pole of 1/x
    when beta ~ 1 is removed by writing f(x)/x = (f(x) - f(0))/x + f(0)/x, the second term
    integrating to the mass of the continuous part, min(1, 1/beta).
    """
    if not (beta > 0 and math.isfinite(beta)):
        raise ValueError(f"beta must be > 0 and finite, got {beta}")
    m, h = 1.0 + beta, 2.0 * math.sqrt(beta)
    theta = (np.arange(n) + 0.5) * math.pi / n  # midpoint rule = trapezoid of the even extension
    x = m + h * np.cos(theta)
    w = h * h * np.sin(theta) ** 2 / (2 * math.pi * beta) * (math.pi / n)
    f0 = float(np.asarray(f(np.zeros(1)), dtype=np.float64)[0])
    if beta == 1.0:
        cont = float(np.sum(w * np.asarray(f(x), dtype=np.float64) / x))
    else:
        mass = min(1.0, 1.0 / beta)
        cont = float(np.sum(w * (np.asarray(f(x), dtype=np.float64) - f0) / x)) + f0 * mass
    atom = max(0.0, 1.0 - 1.0 / beta)
    return cont + atom * f0


@functools.lru_cache(maxsize=256)
def mp_median(q: float) -> float:
    """Median of the Marchenko-Pastur law of ratio ``q in (0, 1]``."""
    from scipy import integrate, optimize

    if not (0 < q <= 1):
        raise ValueError(f"q must be in (0, 1], got {q}")
    lo, hi = (1 - math.sqrt(q)) ** 2, (1 + math.sqrt(q)) ** 2

    def cdf(x: float) -> float:
        # x = m + h cos(t) removes the square-root end points
        m, h = (lo + hi) / 2, (hi - lo) / 2
        t0 = math.acos(min(1.0, max(-1.0, (x - m) / h)))
        val, _ = integrate.quad(
            lambda t: float(mp_density(np.array([m + h * math.cos(t)]), q)[0]) * h * math.sin(t),
            t0, math.pi, limit=200)
        return val

    return float(optimize.brentq(lambda x: cdf(x) - 0.5, lo + 1e-12, hi - 1e-12, xtol=1e-13))


def mp_singular_density(s: np.ndarray, beta: float, scale: float = 1.0) -> np.ndarray:
    """Density of the min(p, d) singular values of a p x d matrix with iid entries of variance
    ``scale^2 / d`` (beta = p/d): edges ``scale |1 -+ sqrt beta|``."""
    s = np.asarray(s, dtype=np.float64)
    f, q = max(1.0, beta), min(beta, 1.0 / beta)
    u = scale * scale * f
    return mp_density(s * s / u, q) * 2 * s / u
