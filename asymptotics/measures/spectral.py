"""The spectral measure of THEORY.md §6 as one record: Marchenko-Pastur, atoms, channels, rules.

:class:`SpectralMeasure` is what the overlap equations read: its ``kind`` (``mp``, ``atoms`` /
``weights``, ``channels``, ``population``, ``quadrature``) selects how :func:`measure_moments`
(numba) averages rational functions of rho against S = s0 + s1 rho. Deterministic (d -> infinity):
rho = c x with x ~ MP(beta) (:mod:`asymptotics.measures.spectral`); empirical (finite d): the
eigen-decomposition of Omega = W Pi W^T, W = sqrt(c) W0, Pi = I - v v^T, with
F_i = p (u_i . W v)^2 and H_i = p (u_i . W t)^2 (:func:`from_weights`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from asymptotics.core.coldstart import kernel
from asymptotics.measures.channels import population_bulk, quadrature_columns, special_columns
from asymptotics.measures.marchenko_pastur import resolvent_mp

EMPTY = np.zeros(1)
N_AVERAGES = 14  # the averages returned by measure_moments
MEASURE_MP = 0
MEASURE_ATOMS = 1
MEASURE_CHANNELS = 2
MEASURE_POPULATION = 3
MEASURE_QUADRATURE = 4
#: every kind of measure and its code in measure_moments: an unknown kind is an error
KIND_CODES = {"mp": MEASURE_MP, "atoms": MEASURE_ATOMS, "weights": MEASURE_ATOMS,
              "channels": MEASURE_CHANNELS, "population": MEASURE_POPULATION,
              "quadrature": MEASURE_QUADRATURE}

@kernel(cache=True, error_model="numpy")
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
    if kind < MEASURE_MP or kind > MEASURE_QUADRATURE:  # not a kind: no average, never atoms
        out[:] = np.nan
        return out
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
    if kind == 3:  # (np.bool_ flags: population_bulk compiles once, not once per literal)
        population_bulk(out, beta, rho, np.full(rho.shape[0], 1.0 / rho.shape[0]), s0, s1,
                        np.bool_(True))
        if not math.isnan(out[0]):
            special_columns(out, beta, F, G, H, s1)
        return out
    if kind == 4:
        n = rho.shape[0] // 5
        population_bulk(out, beta, rho[:n], F[:n], s0, s1, np.bool_(True))
        if not math.isnan(out[0]):
            quadrature_columns(out, beta, rho, F, H[0], s1, n)
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
        m1, m2, x1, x1b, x2 = resolvent_mp(beta, t)
        out[0] = m1 / u
        out[1] = c * x1 / u
        out[2] = m2 / (u * u)
        out[3] = c * x1b / (u * u)
        out[4] = c * c * x2 / (u * u)
    if kind == 2:
        special_columns(out, beta, F, G, H, s1)
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


@kernel(cache=True, error_model="numpy")
def bulk_moments(
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
    """Kernel: <1/S>, <rho/S> (out[0:2] of :func:`measure_moments`, the same numbers; the other
    entries are not computed for the population kinds): all the closed (V1, V2) subsystem reads,
    without the channel averages a population measure would sum at every iteration."""
    if kind == MEASURE_POPULATION:
        out = np.empty(N_AVERAGES)
        population_bulk(out, beta, rho, np.full(rho.shape[0], 1.0 / rho.shape[0]), s0, s1,
                        np.bool_(False))
        return out
    if kind == MEASURE_QUADRATURE:
        out = np.empty(N_AVERAGES)
        n = rho.shape[0] // 5
        population_bulk(out, beta, rho[:n], F[:n], s0, s1, np.bool_(False))
        return out
    return measure_moments(kind, beta, c, rho, F, H, G, s0, s1)


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
    G: np.ndarray = field(default_factory=lambda: EMPTY)
    r: float = math.nan  # spike strength implied by the weights (from_weights only)
    gamma: float = math.nan  # <v, theta*> (from_weights only)

    def __post_init__(self) -> None:
        if self.kind not in KIND_CODES:
            raise ValueError(f"spectral measure kind must be one of {', '.join(KIND_CODES)}, "
                             f"got {self.kind!r}")

    @property
    def code(self) -> int:
        """The kind's code in :func:`measure_moments` (``KIND_CODES``)."""
        return KIND_CODES[self.kind]

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
    return SpectralMeasure("mp", float(beta), float(c), EMPTY, EMPTY, EMPTY)


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
    return SpectralMeasure("channels", float(beta), float(c), EMPTY, F, lam.copy(), G,
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


