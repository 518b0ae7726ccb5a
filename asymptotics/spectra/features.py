"""Spectrum of the learned features' ridge matrix F^T F, F = sigma(X W^T)/sqrt(p) on n = alpha d
fresh inputs (docs/THEORY.md §16.1-§16.3), for the K-group, r-spike model of §10.

Bulk: m(z) = (1/p) tr (F^T F - z)^-1 = sum_g V2_g(lam = -z), the V-part of the K-group
equations (the same tables and resolvent as the risk) continued to complex lam:
    V(k) = mub1^T V1 mub1 + mus2 . V2,  M = A E[mub1 mub1^T/(1+V)],  v2 = A E[mus2/(1+V)],
    tau_g (lam + v2_g + [M (I + D M)^-1]_gg) = 1,  V1 = D (I + M D)^-1/beta,  D = diag(beta pi tau).
Outliers: the channels F = B + P Q^T of the means (left mu0_g(kappa), right the group's 1_p) and
of the learned directions (left mub1_g(kappa) kappa_a, right P_g G v_a), with
    lam P^T (lam - B B^T)^-1 P = (n/p) E[psi psi^T/(1+V)],  Q^T (lam - B^T B)^-1 Q = -tau_g |q|^2
(the n x n resolvent's diagonal is 1/(lam (1 + V(kappa)))).
The trained network after one step (:func:`network_features_solver`, :func:`network_channels`):
the same V-part with Omega the generalised MP law of the step's population covariance C, and
the learned channel's right vector B v (form <F_vv/S>) with the bulk-variance channel in its
left vector (docs/THEORY.md §16.1-§16.2, docs/DERIVATIONS.md §7).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from asymptotics.coefficients.functions import Function
from asymptotics.core.meta import blas_limit
from asymptotics.spectra.bbp import Cached, outlier_locations, overlap_vectors
from asymptotics.spectra.branch import real_solution
from asymptotics.spectra.law import Outlier, Solver, bulk_support
from asymptotics.spectra.traces.srf_solver import SrfSolver
from asymptotics.spiked.problem import SpikedProblem

#: the one-step network solver's path and polish on this many BLAS threads (None: the
#: process's): its products with the node tables are small, and idle threads spinning on a
#: shared machine cost CPU time (as ``netbulk.BLAS_THREADS`` beyond one step)
BLAS_THREADS: int | None = 1


def vpart_parts(w: np.ndarray, mb1: np.ndarray, ms2: np.ndarray, pi: np.ndarray, beta: float,
                A: float) -> Callable[[np.ndarray], tuple]:
    """The pieces of the K-group V-part at complex lam = -z (docs/THEORY.md §16.1) at rows of
    unknowns ``x = (tau (K), V1 (K^2))``: ``parts(x) -> (tau, V1, V, M, Vhat2, D)`` on the
    kappa rule ``(w, mb1, ms2)``, ``A = alpha / beta``."""
    K = pi.shape[0]
    eye = np.eye(K)
    outer = (mb1[:, :, None] * mb1[:, None, :]).reshape(-1, K * K)  # (nodes, K^2)
    outer_w = (w[:, None] * outer).astype(np.complex128)
    ms2_w = (w[:, None] * ms2).astype(np.complex128)
    outer_t = outer.T.astype(np.complex128).copy()
    ms2_t = ms2.T.astype(np.complex128).copy()

    def parts(x: np.ndarray) -> tuple:
        tau = x[:, :K]
        V1 = x[:, K:].reshape(-1, K, K)
        V = x[:, K:] @ outer_t + (pi * tau) @ ms2_t
        iv = 1.0 / (1.0 + V)
        M = (A * (iv @ outer_w)).reshape(-1, K, K)
        v2 = A * (iv @ ms2_w)
        D = (beta * pi * tau)[:, :, None] * eye[None]
        return tau, V1, V, M, v2, D

    return parts


def features_solver(prob: SpikedProblem, alpha: float) -> Solver:
    """The complex V-subsystem at lam = -z as a :class:`Solver`; unknowns (tau (K), V1 (K^2));
    its residual and exact Jacobian compiled (:mod:`asymptotics.spectra.traces.srf_solver`), the
    numpy residual below until the kernels are."""
    t = prob.tables
    w, mb1, ms2 = t.weights, t.mub1, t.mus2
    pi, beta = prob.fractions, prob.beta
    K = pi.shape[0]
    A = alpha / beta
    eye = np.eye(K)
    parts = vpart_parts(w, mb1, ms2, pi, beta, A)

    def residual(x: np.ndarray, z: np.ndarray) -> np.ndarray:
        tau, V1, _, M, v2, D = parts(x)
        R = np.linalg.inv(eye[None] + D @ M)  # D (I + M D)^-1 = (I + D M)^-1 D (D diagonal)
        Km = M @ R
        e1 = tau * (-z[:, None] + v2 + np.diagonal(Km, axis1=1, axis2=2)) - 1.0
        e2 = V1 - R @ D / beta
        return np.concatenate([e1, e2.reshape(-1, K * K)], axis=1)

    def start(z: np.ndarray) -> np.ndarray:
        tau = np.repeat((-1.0 / z)[:, None], K, axis=1)
        V1 = (pi * tau)[:, :, None] * eye[None]
        return np.concatenate([tau, V1.reshape(-1, K * K)], axis=1)

    def stieltjes(x: np.ndarray) -> np.ndarray:
        return x[:, :K] @ pi

    solver = SrfSolver(residual, start, stieltjes, features_mean(prob, alpha), pi=pi, beta=beta,
                       A=A, w=w, mb1=mb1, ms2=ms2)
    solver.parts = parts  # the channel averages of the outliers
    return solver


def network_features_solver(prob: SpikedProblem, alpha: float, *, sigma, target, alpha0: float,
                            eta: float, delta: float) -> Solver:
    """The features' bulk of the trained network after one step (docs/THEORY.md §16.1): the
    V-part of §5 with Omega = B Pi B^T the generalised MP law of the network's population
    covariance C of the bulk rows (docs/DERIVATIONS.md §7) instead of c MP(beta). With
    x = rho/c, s0 = lam + Vhat2, s1 = Vhat1 (K = 1), tau = <1/(s0 + s1 x)> solves
        1 = s0 tau + (1 - s_H(-1/y)/y)/beta,   y = beta s1 tau/c,
    s_H(zeta) = tr (C - zeta)^-1/d (the network theory's resolvent kernel, exact), and
    V1 = <x/S> = (1 - s0 tau)/s1. Solved along the path with the Gauss rule of the population
    law in place of s_H, then polished with the exact s_H at the final z."""
    from asymptotics.coefficients.cget import ge_coefficients
    from asymptotics.measures.population_quadrature import (
        TOL,
        QuadratureError,
        law_nodes,
        population_rules,
    )
    from asymptotics.measures.resolvent_kernels import dyson_forms
    from asymptotics.spectra.weights import N_POP, PolishedSolver

    t = prob.tables
    if prob.fractions.shape[0] != 1:
        raise ValueError("the network's features law covers one group (one step, constant "
                         f"readout), got K={prob.fractions.shape[0]}")
    w, mb1, ms2 = t.weights, t.mub1[:, 0], t.mus2[:, 0]
    beta, c = prob.beta, float(prob.bulk[0])
    A = alpha / beta
    if not float(w @ (mb1 * mb1)) > 1e-16 * float(w @ ms2):
        raise ValueError(
            f"sigma {sigma.name!r} has no linear part at the trained weights (mub1 = E sigma' "
            "= 0 on the kappa nodes): the network's features law is degenerate there (V1 "
            "undetermined, THEORY.md §16.1); use model='srf', the same bulk law at mub1 = 0")
    try:  # the path's approximation: the Gauss rule of the population law (else c I)
        rules = population_rules(sigma, target, float(alpha0), float(eta), float(delta), N_POP)
        keep = rules.weights[0] > 0.0
        xj = rules.nodes[0][keep] / c
        wj = rules.weights[0][keep] / rules.weights[0][keep].sum()
    except QuadratureError:
        xj, wj = np.ones(1), np.ones(1)
    k = ge_coefficients(sigma, target)
    zq, eq, wq = law_nodes(target, k.mu0, delta)
    a_ = eta * k.c1
    bq = eta * eta * max(k.s2 - k.c1 * k.c1, 0.0) / alpha0

    def conj(x: np.ndarray, z: np.ndarray) -> tuple:
        tau, V1 = x[:, 0], x[:, 1]
        V = V1[:, None] * (mb1 * mb1)[None, :] + tau[:, None] * ms2[None, :]
        iv = w[None, :] / (1.0 + V)
        s1 = A * (iv @ (mb1 * mb1))
        s0 = -z + A * (iv @ ms2)
        return tau, V1, s0, s1

    def rule_part(tau, s1):
        y = (s1 * tau)[:, None] * xj[None, :]
        return (wj[None, :] * y / (1.0 + beta * y)).sum(axis=1)

    def exact_part(tau, s1):
        y = beta * s1 * tau
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            zeta = -c / y
        fin = np.isfinite(zeta)  # (the kernel would iterate to its maximum on the others)
        out, ok = np.full((zeta.shape[0], 4), np.nan + 0j), np.zeros(zeta.shape[0], dtype=bool)
        if fin.any():
            out[fin], _, ok[fin] = dyson_forms(np.ascontiguousarray(zeta[fin]), eq, zq, wq, a_,
                                               bq, 1.0 / alpha0, TOL, 20000)
        sx = c * np.where(ok, out[:, 0], np.nan)  # E_x[1/(x + 1/y)], x = t/c, t ~ H
        return (1.0 - sx / y) / beta

    def make(part):
        def residual(x: np.ndarray, z: np.ndarray) -> np.ndarray:
            tau, V1, s0, s1 = conj(x, z)
            e1 = s0 * tau + part(tau, s1) - 1.0
            e2 = V1 * s1 + s0 * tau - 1.0
            return np.stack([e1, e2], axis=1)
        return residual

    def start(z: np.ndarray) -> np.ndarray:
        tau = -1.0 / z
        return np.stack([tau, tau], axis=1)

    scale = features_mean(prob, alpha)
    approx = Solver(make(rule_part), start, lambda x: x[:, 0], scale=scale)
    exact = Solver(make(exact_part), start, lambda x: x[:, 0], scale=scale)
    sol = PolishedSolver(exact, approx)
    sol.parts = _parts_k1(conj, mb1, ms2)
    sol.solve = _one_blas_thread(sol.solve)
    return sol


def _one_blas_thread(solve: Callable) -> Callable:
    """``solve`` on :data:`BLAS_THREADS` BLAS threads (docs/THEORY.md §16.1); a product split
    by rows gives the same numbers on any count."""
    def inner(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        with blas_limit(BLAS_THREADS):
            return solve(z)
    return inner


def _parts_k1(conj, mb1, ms2):
    """``Solver.parts`` of the K = 1 network solver: (tau, V1, V, ...) as the sRF solver's."""
    def parts(x: np.ndarray) -> tuple:
        tau, V1 = x[:, :1], x[:, 1:2]
        V = V1 * (mb1 * mb1)[None, :] + tau * ms2[None, :]
        return tau, V1, V, None, None, None
    return parts


@dataclass(frozen=True)
class NetworkChannels:
    """The trained network's learned-direction channel (docs/THEORY.md §16.2, one step, K = 1):
    its left vector gains the bulk-variance channel, mub1(k) k + sqrt(c) lam_v nu(k)
    (``left`` on the kappa nodes; nu = d mu0/dc, docs/DERIVATIONS.md §7), and its right vector
    B v/sqrt(c) sees the bulk through ``form(tau, M)`` = q^T (F^T F - lam)^-1 q =
    <F_vv/S>/c = beta tau (|u|^2/u^T R u - 1/y)/c with y = beta M tau/c and
    R = (C + 1/y)^-1 (block inversion in (v, v^perp); C = c I gives beta tau)."""

    left: np.ndarray
    form: Callable[[float, float], float]
    norm: float  # |B v|^2/(beta c) = v.C.v/c


def network_channels(prob: SpikedProblem, sigma: Function, target: Function, *,
                     alpha0: float, eta: float, delta: float) -> NetworkChannels:
    """:class:`NetworkChannels` of the one-step network (K = 1)."""
    from asymptotics.coefficients.cget import ge_coefficients
    from asymptotics.measures.population_quadrature import TOL, law_nodes
    from asymptotics.measures.resolvent_kernels import dyson_forms
    from asymptotics.spiked.coefficients import feature_tables
    from asymptotics.step.row_channel import row_variance_slope

    t = prob.tables
    c = float(prob.bulk[0])
    lam_v = row_variance_slope(sigma, target, alpha0=alpha0, eta=eta, delta=delta)
    h = 1e-4 * c
    up = feature_tables(sigma, t.kappa, prob.loadings, prob.bulk + h)[0][:, 0]
    dn = feature_tables(sigma, t.kappa, prob.loadings, prob.bulk - h)[0][:, 0]
    nu = (up - dn) / (2.0 * h)
    left = t.mub1[:, 0] * t.kappa[:, 0] + math.sqrt(c) * lam_v * nu
    k = ge_coefficients(sigma, target)
    zq, eq, wq = law_nodes(target, k.mu0, delta)
    a_ = eta * k.c1
    bq = eta * eta * max(k.s2 - k.c1 * k.c1, 0.0) / alpha0
    psi = 1.0 / alpha0
    un2 = float(wq @ (eq * zq)) ** 2 + psi * float(wq @ (eq * eq))

    def form(tau: float, M: float) -> float:
        y = prob.beta * M * tau / c
        zeta = np.array([-1.0 / y + 1e-300j])
        out, _, ok = dyson_forms(zeta, eq, zq, wq, a_, bq, psi, TOL, 20000)
        if not ok[0]:
            return math.nan
        return prob.beta * tau * (un2 / out[0, 3].real - 1.0 / y) / c

    from asymptotics.step.plane import step_covariances

    svv = step_covariances(sigma, target, alpha0=alpha0, eta=eta, delta=delta)[0]
    return NetworkChannels(left, form, svv / c)


def features_mean(prob: SpikedProblem, alpha: float) -> float:
    """The mean bulk eigenvalue (alpha/beta) sum_g pi_g E[mub1_g^2 + mus2_g] (the bulk's scale)."""
    t = prob.tables
    per = t.weights @ (t.mub1 ** 2 + t.mus2)
    return float(alpha / prob.beta * (per @ prob.fractions))


def features_bulk(prob: SpikedProblem, alpha: float, sol: Solver | None = None
                  ) -> tuple[Solver, list, float]:
    """(solver, support intervals, atom at 0): the atom is 1 - alpha/beta when n < p (rank n),
    else 0 (the features' noise part mus2 > 0 makes the n rows in general position).
    ``sol``: the bulk's solver (default: the K-group one, :func:`features_solver`)."""
    sol = features_solver(prob, alpha) if sol is None else sol
    sol.atom = max(0.0, 1.0 - alpha / prob.beta)
    mean = sol.scale
    hi = mean * (1.0 + math.sqrt(max(prob.beta / alpha, alpha / prob.beta))) ** 2 * 4.0
    return sol, bulk_support(sol, hi), sol.atom


def channel_names(K: int, r: int, network: bool = False) -> list[str]:
    """The channels' names; the network's learned channel is its bulk column B v."""
    g = (lambda i: "") if K == 1 else (lambda i: f" (group {i + 1})")
    b = " (B v)" if network else ""
    return ([f"mean{g(i)}" for i in range(K)]
            + [f"learned {a + 1}{b}{g(i)}" for i in range(K) for a in range(r)])


def features_outliers(prob: SpikedProblem, alpha: float, sol: Solver, edge: float,
                      d: float | None, network: NetworkChannels | None = None
                      ) -> list[Outlier]:
    """The outliers of F^T F: at finite d all mean and learned-direction channels (the means at
    ~ n E mu0^2); at d = None the means diverge (location inf) and the learned channels act
    with the means projected out (their Schur complement as n -> infinity)."""
    t = prob.tables
    K, r = prob.loadings.shape
    pi, beta = prob.fractions, prob.beta
    kap = t.kappa
    learned = ([t.mub1[:, g:g + 1] * kap for g in range(K)] if network is None
               else [network.left[:, None]])
    psi = np.concatenate([t.mu0] + learned, axis=1)
    names = channel_names(K, r, network is not None)
    nch = psi.shape[1]
    mean_idx = np.arange(K)
    spk_idx = np.arange(K, nch)
    group = np.concatenate([np.arange(K), np.repeat(np.arange(K), r)])
    mb2 = t.mub1[:, 0] ** 2
    # |q|^2/beta of the learned channels' right vectors: 1 (G v), or |B v|^2/(beta c)
    learned_norm = np.ones(len(spk_idx)) if network is None else np.array([network.norm])

    def avg(lam: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """E[psi psi^T/(1+V)], -tau_g (> 0 above the bulk) and the learned channels'
        -q^T (F^T F - lam)^-1 q per unit |q|^2 / beta (generic: -tau_g)."""
        x, ok = real_solution(sol, lam)
        _, _, V, _, _, _ = sol.parts(x)
        iv = t.weights / (1.0 + V[0].real)
        E = np.einsum("j,ja,jb->ab", iv, psi, psi)
        mt = -x[0, :K].real
        if network is None:
            return E, mt, mt[group[spk_idx]]
        M = alpha / beta * float(iv @ mb2)
        return E, mt, np.array([-network.form(-mt[0], M) / beta])

    out: list[Outlier] = []
    if d is None:
        Em = avg(edge * 1.5)[0][np.ix_(mean_idx, mean_idx)]
        for g in range(K):
            if Em[g, g] > 1e-14:
                out.append(Outlier(math.inf, names[g], {"mean": 1.0}))

        def phis_(lam: float) -> tuple[np.ndarray, np.ndarray]:
            E, _, ml = avg(lam)
            Ess = E[np.ix_(spk_idx, spk_idx)]
            Esm = E[np.ix_(spk_idx, mean_idx)]
            Emm = E[np.ix_(mean_idx, mean_idx)]
            S = Ess - Esm @ np.linalg.pinv(Emm, rcond=1e-12) @ Esm.T
            return alpha * S, np.diag(ml * pi[group[spk_idx]])

        phis = Cached(phis_)
        for lam in outlier_locations(phis, edge, len(spk_idx)):
            qv, _ = overlap_vectors(phis, lam)
            ov = {names[K + i]: float(qv[i] / pi[group[K + i]] / learned_norm[i])
                  for i in range(len(spk_idx))}
            out.append(Outlier(lam, _dominant(ov), ov))
        return out
    n, p = alpha * d, beta * d
    qn = np.where(np.arange(nch) < K, p * pi[group], beta * pi[group])  # |q_a|^2 per unit

    def phis_d_(lam: float) -> tuple[np.ndarray, np.ndarray]:
        E, mt, ml = avg(lam)
        return (n / p) * E, np.diag(np.concatenate([mt, ml]) * qn)

    phis_d = Cached(phis_d_)

    for lam in outlier_locations(phis_d, edge, nch):
        qv, _ = overlap_vectors(phis_d, lam)
        ov = {names[i]: float(qv[i] / qn[i] / (1.0 if i < K else learned_norm[i - K]))
              for i in range(nch)}
        out.append(Outlier(lam, _dominant(ov), ov))
    return out


def _dominant(ov: dict) -> str:
    """The channel of the largest overlap; the first in the channels' order among those within
    1e-9 relative of it (equal groups tie: their overlaps differ by rounding only)."""
    if not ov:
        return "spike"
    top = max(ov.values())
    return next(k for k in ov if ov[k] >= top - 1e-9 * abs(top))
