"""The network theory of K neuron groups after T giant steps: the groups of
:mod:`asymptotics.multiindex.steps` (THEORY.md §12) plus each group's bulk covariance on the
finite span of the target and of the spikes (docs/DERIVATIONS.md §9, THEORY.md §15).

Row i of group g after t steps is ``s_g + b_i``: the common spike of §12 and a bulk ``b_i`` whose
covariance is ``c_g I / d`` outside the span E of the target directions and of the spikes' outside
parts (coordinates ``(z, h)``, dimension ``k + q``) and ``C_g / d`` on E. One step maps the bulk,
to first order in it, by ``b -> (I + eta eps_g J_g) b`` with

    J_g = n0^-1 sum_mu e_mu m1'_g(s_g . x_mu) x_mu x_mu^T,     m1'_g = m2_g / sqrt(c_g),

which is ``1 + eta eps_g E[e m1'_g]`` times the identity outside E (the scale of §12.2) and, on
E, the matrix ``E[e m1'_g x x^T]`` (x restricted to E) plus the self-terms of the step's fresh
noise directions, which are built from the same batch (docs/DERIVATIONS.md §9.2). The step's row
noise is ``eta^2 eps_g^2 E[(e^2 + delta) Var_xi sigma'_g x~ x~^T] / alpha0`` on E and the fresh
directions (x~: the batch input, whose fresh coordinates carry their self part) and isotropic
elsewhere (``c_g``'s closure of §12.2). Then ``C_g -> L_g C_g L_g^T - S_g + noise`` with
``L_g = I + eta eps_g J_g`` and ``S_g`` the product of two self-terms through a fresh coordinate,
which the noise already holds (DERIVATIONS.md §9.2, §9.5). At t = 0, ``C_g = I``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from asymptotics.coefficients.functions import Function
from asymptotics.coefficients.gauss_rules import gauss_hermite
from asymptotics.core import group_checks
from asymptotics.multiindex import graded, xi_lines
from asymptotics.multiindex.steps import (
    CHUNK,
    RANK_TOL,
    REST_NODES,
    TRAPEZOID_STEP,
    U_MAX,
    GroupState,
    Quadrature,
    cached_prefix,
    group_params,
    mapping_inputs,
)
from asymptotics.multiindex.steps import evaluate as _evaluate
from asymptotics.multiindex.steps import factor as _factor
from asymptotics.multiindex.steps import trapezoid as _trapezoid
from asymptotics.multiindex.steps import xi_moments as _xi_moments
from asymptotics.spiked.coefficients import tensor_rule
from asymptotics.spiked.readouts import Readout

DEFAULT_QUAD = Quadrature()


@dataclass(frozen=True)
class NetworkGroups:
    """Every state t = 0..T (:class:`GroupState`, §12) and the groups' bulk covariances on E
    (``cov[t]``: K x (k+q_t) x (k+q_t), in units of the isotropic ``c_g``: identity = sRF)."""

    sigma: str
    target: str
    readout: Readout
    alpha0: float
    eta: tuple[float, ...]
    delta: float
    k: int
    states: tuple[GroupState, ...]
    cov: tuple[np.ndarray, ...] = field(repr=False)

    @property
    def steps(self) -> int:
        return len(self.states) - 1

    def spiked_params(self, step: int | None = None) -> dict:
        """Keyword arguments of the K-group equations after ``step`` steps (default: all): those
        of :func:`asymptotics.spiked.risk_spiked` plus ``channels``, each group's normalised
        bulk covariance on the model's basis ``[V, T]`` (K x (r+k) x (r+k))."""
        t = self.steps if step is None else step
        if not (0 <= t <= self.steps):
            raise ValueError(f"step must be in 0..{self.steps}, got {step}")
        st = self.states[t]
        params = group_params(st, self.target, self.readout.weights)
        params["channels"] = model_channels(st, self.cov[t])
        return params


def model_basis(state: GroupState) -> np.ndarray:
    """The orthonormal basis ``[V, T]`` of the K-group model in the (z, h) coordinates of
    ``state`` (THEORY.md §10.1, §12.3): V the spikes' span, ``t_j`` the unit part of the rotated
    ``theta'_j`` orthogonal to V (zero where ``rho_j = 0``)."""
    K, k = state.a.shape
    q = state.L.shape[1]
    S = np.hstack([state.a, state.L])
    _, sv, wt = np.linalg.svd(S, full_matrices=False)
    r = int(np.sum(sv > RANK_TOL * max(1.0, sv.max(initial=0.0))))
    if r == 0:
        V = np.zeros((k + q, 1))
        Q = np.eye(k)
    else:
        V = wt[:r].T
        _, _, qt = np.linalg.svd(V[:k].T, full_matrices=True)
        Q = qt.T
    theta = np.zeros((k + q, k))
    theta[:k] = Q  # rotated target directions in (z, h) coordinates
    T = theta - V @ (V.T @ theta)
    rho = np.sqrt(np.sum(T**2, axis=0))
    T = np.where(rho[None, :] > 1e-12, T / np.maximum(rho, 1e-300)[None, :], 0.0)
    return np.hstack([V, T])


def channels_on(state: GroupState, B: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """The groups' normalised bulk covariances ``C_g / c_g`` on the basis ``B``; a zero bulk
    carries no channel (the identity keeps the sRF numbers there)."""
    out = np.einsum("ai,gab,bj->gij", B, cov, B)
    out /= np.where(state.c > 0, state.c, 1.0)[:, None, None]
    for g in range(out.shape[0]):
        if not state.c[g] > 0:
            out[g] = B.T @ B
    return np.ascontiguousarray(out)


def model_channels(state: GroupState, cov: np.ndarray) -> np.ndarray:
    """``C_g / c_g`` on the K-group model's basis :func:`model_basis` (THEORY.md §10.1,
    §12.3)."""
    return channels_on(state, model_basis(state), cov)


def rest_sums(e: np.ndarray, wr: np.ndarray, R: np.ndarray, RR: np.ndarray, delta: float
               ) -> tuple[np.ndarray, ...]:
    """Per spike node, the other axes' sums of ``e``, ``e^2 + delta`` (times 1, R, R R^T),
    ``e^3 + 3 e delta`` (times 1, R) and ``e^4 + 6 e^2 delta + 3 delta^2`` (R: their nodes)."""
    e2 = e * e
    p1, p2 = e * wr, (e2 + delta) * wr
    p3, p4 = (e2 * e + 3.0 * delta * e) * wr, (e2 * e2 + 6.0 * delta * e2 + 3.0 * delta**2) * wr
    return (p1.sum(1), p1 @ R, p1 @ RR, p2.sum(1), p2 @ R, p2 @ RR, p3.sum(1), p3 @ R,
            p4.sum(1))


def advance_network(state: GroupState, cov: np.ndarray, *, sigma: Function, g,
                    values: np.ndarray, fractions: np.ndarray, eta: float, alpha0: float,
                    delta: float, quad: Quadrature = DEFAULT_QUAD, degree: int | None = None,
                    per: tuple[int | None, ...] | None = None) -> tuple[GroupState, np.ndarray]:
    """One giant step (THEORY.md §12.2: the state, as :func:`asymptotics.multiindex.steps.advance`)
    and the bulk covariances on E (module docstring); ``cov`` is K x (k+q) x (k+q) in absolute
    units (``c_g I`` is isotropic). The integrals over the r spike axes take the surrogate's rule
    (``graded.choose``: for relu with three or more groups its closed-form xi-moments on the
    checked graded lattice, THEORY.md §12.4; else the default lattice and the xi rule), after the
    other axes' sums per spike node (Gauss-Hermite, exact for a polynomial target)."""
    K, k = state.a.shape
    q = state.L.shape[1]
    n = k + q
    S = np.hstack([state.a, state.L])
    _, sv, vt = np.linalg.svd(S, full_matrices=True)
    r = int(np.sum(sv > RANK_TOL * max(1.0, sv.max(initial=0.0))))
    Br, Bo = vt[:r], vt[r:]  # rows: the spike axes, the other axes (in (z, h))
    m = n - r
    h = quad.h if quad.h is not None else TRAPEZOID_STEP.get(r, 0.25)
    closed = graded.closed_moments(sigma, K)
    n_rest = quad.rest if quad.rest is not None else (
        (2 * degree + 1 if closed else degree + 2) if degree is not None
        else REST_NODES.get(m, 8))  # 2 degree + 1: exact up to e^4 (degree 4 degree)
    R, wr = tensor_rule(m, n_rest) if m else (np.zeros((1, 0)), np.ones(1))
    RR = (R[:, :, None] * R[:, None, :]).reshape(R.shape[0], m * m)
    xi, wxi = gauss_hermite(quad.xi)
    Mmat = S @ Br.T
    RzT = R @ Bo[:, :k]
    sc = np.sqrt(state.c)
    finite = math.isfinite(alpha0)
    hs, rules = graded.choose(xi_lines.xi_direct, sigma, state.c, Mmat, h, xi, wxi, U_MAX,
                              closed, closed is None or quad.h is not None or r == 0
                              or per is None)

    def terms(U: np.ndarray) -> tuple[np.ndarray, ...]:
        """Per spike node: m1, m2, v (u, K) and the other axes' sums (:func:`rest_sums`)."""
        F, m1, m2, v = _xi_moments(sigma, state.c, U @ Mmat.T, xi, wxi, rules)
        f = F @ (fractions * values)
        Uz = U @ Br[:, :k]
        rows = max(1, CHUNK // max(1, 8 * R.shape[0]))
        sums = [rest_sums(_evaluate(g, Uz[lo:lo + rows, None, :] + RzT[None, :, :])
                           - f[lo:lo + rows, None], wr, R, RR, delta)
                for lo in range(0, U.shape[0], rows)]
        return (m1, m2, v, *(np.concatenate(x) for x in zip(*sums, strict=True)))

    def first(W: np.ndarray, U: np.ndarray, s0: np.ndarray, s1: np.ndarray) -> np.ndarray:
        """``sum_u W_u E_rest[s x]`` (W: u x j): j x n."""
        return (W * s0[:, None]).T @ U @ Br + W.T @ s1 @ Bo

    def second(W: np.ndarray, U: np.ndarray, s0, s1, s2) -> np.ndarray:
        """``sum_u W_ug E_rest[s x x^T]`` (W: u x K): K x n x n."""
        A = np.einsum("ug,ui,uj->gij", W * s0[:, None], U, U)
        B = np.einsum("ug,ui,uj->gij", W, U, s1)
        C = (W.T @ s2.reshape(len(s2), m * m)).reshape(K, m, m)
        AB = Br.T @ A @ Br + Br.T @ B @ Bo + Bo.T @ C @ Bo
        return AB + np.swapaxes(Br.T @ B @ Bo, 1, 2)

    def update(U: np.ndarray, wu: np.ndarray, m1, m2, v, E0, E1, E2, N0, N1, N2, C0, C1, D0
               ) -> tuple[np.ndarray, ...]:
        """(a, outside parts, c, the bulk covariances on E + the fresh directions in a basis-free
        form: ``fresh`` written out on the groups) from the rule (U, wu)."""
        m1p = m2 / np.where(sc > 0, sc, 1.0)[None, :]  # d m1 / d(pre-activation) = E sigma''
        wm1 = wu[:, None] * m1
        dX = first(wm1, U, E0, E1)
        e_m2 = (wu * E0) @ m2
        noise_v = (wu * N0) @ v
        noise_mm = (m1 * (wu * N0)[:, None]).T @ m1
        e_m1p = (wu * E0) @ m1p
        J = second(wu[:, None] * m1p, U, E0, E1, E2)  # E[e m1' x x^T]
        NX = second(wu[:, None] * v, U, N0, N1, N2)  # E[(e^2 + delta) Var sigma' x x^T]
        pair = lambda A: (wu[:, None, None] * A[:, :, None] * m1[:, None, :]).reshape(-1, K * K)  # noqa: E731
        T3 = first(pair(m1p), U, N0, N1).reshape(K, K, n)  # E[(e^2 + delta) m1'_g m1_h x]
        T5 = first(pair(v), U, C0, C1).reshape(K, K, n)  # E[(e^3 + 3 e delta) Var_g m1_h x]
        T4 = np.einsum("u,ug,uh,ul->ghl", wu * C0, m1p, m1, m1)
        T6 = np.einsum("u,ug,uh,ul->ghl", wu * D0, v, m1, m1)
        sqrt_c = sc + eta * values * e_m2
        nz = eta**2 * values**2 * noise_v / alpha0 if finite else np.zeros(K)
        outside = state.L + eta * values[:, None] * dX[:, k:]
        fresh = _factor(eta**2 * np.outer(values, values) * noise_mm / alpha0) if finite \
            else np.zeros((K, 0))
        outside = np.hstack([outside, fresh])
        C = _bulk(state, cov, J, e_m1p, T3, T4, T5, T6, NX, noise_v, nz, fresh, eta, values,
                  alpha0)
        T = np.zeros((n + K, n + fresh.shape[1]))
        T[:n, :n] = np.eye(n)
        T[n:, n:] = fresh  # the fresh coordinates written on the groups: basis-free
        return (state.a + eta * values[:, None] * dX[:, :k], outside, sqrt_c**2 + nz,
                np.einsum("ia,gab,jb->gij", T, C, T))

    a_new, outside, c_new, Ct = graded.spike_rule(hs, h, U_MAX, terms, update,
                                                  lambda: _trapezoid(r, h))
    L_new = _factor(outside @ outside.T) if outside.shape[1] else outside
    fresh = outside[:, q:]
    qf = fresh.shape[1]
    Tp = np.zeros((n + qf, n + K))
    Tp[:n, :n] = np.eye(n)
    Tp[n:, n:] = np.linalg.pinv(fresh) if qf else np.zeros((0, K))
    Wt = np.linalg.pinv(L_new) @ outside if L_new.shape[1] else np.zeros((0, q + qf))
    P = np.zeros((k + L_new.shape[1], n + qf))  # to the new E's coordinates
    P[:k, :k] = np.eye(k)
    P[k:, k:] = Wt
    cov_new = np.einsum("ia,ab,gbc,dc,jd->gij", P, Tp, Ct, Tp, P)
    return GroupState(state.step + 1, a_new, L_new, c_new), cov_new


def _bulk(state: GroupState, cov: np.ndarray, J, e_m1p, T3, T4, T5, T6, NX, noise_v, nz,
          fresh: np.ndarray, eta: float, values: np.ndarray, alpha0: float) -> np.ndarray:
    """The bulk covariances on E + the fresh directions after the step (module docstring):
    K x (n + qf) x (n + qf)."""
    K, n = J.shape[0], J.shape[1]
    qf = fresh.shape[1]
    ne = n + qf
    Fp = np.linalg.pinv(fresh) if qf else np.zeros((0, K))  # qf x K
    out = np.empty((K, ne, ne))
    for gi in range(K):
        Jg = np.zeros((ne, ne))
        Jg[:n, :n] = J[gi]
        if qf:
            sf = eta * values[:, None] * Fp.T / alpha0  # K x qf: self-term weights per group h
            Jg[:n, n:] = np.einsum("ha,hb->ab", T3[gi], sf) if n else 0.0
            Jg[n:, :n] = Jg[:n, n:].T
            Jg[n:, n:] = e_m1p[gi] * np.eye(qf) + np.einsum("hl,ha,lb->ab", T4[gi], sf, sf)
        Lg = np.eye(ne) + eta * values[gi] * Jg
        Cg = np.zeros((ne, ne))
        Cg[:n, :n] = cov[gi]
        Cg[n:, n:] = state.c[gi] * np.eye(qf)
        Cg = Lg @ Cg @ Lg.T + nz[gi] * np.eye(ne)
        if qf:  # the self-terms (docs/DERIVATIONS.md §9.5): the row noise already holds the
            # product of two self-terms through a fresh coordinate, and on the fresh
            # coordinates x carries its self part sum_h sf_h e m1_h
            Sg = eta * values[gi] * (Jg[:, n:] - np.vstack([np.zeros((n, qf)),
                                                            e_m1p[gi] * np.eye(qf)]))
            Cg -= state.c[gi] * (Sg @ Sg.T)
            nw = eta**2 * values[gi] ** 2 / alpha0
            Cg[:n, n:] += nw * np.einsum("ha,hb->ab", T5[gi], sf) if n else 0.0
            Cg[n:, :n] = Cg[:n, n:].T
            Cg[n:, n:] += nw * np.einsum("hl,ha,lb->ab", T6[gi], sf, sf)
        if math.isfinite(alpha0):  # the row noise on E: E[(e^2 + delta) Var sigma' x x^T]
            Cg[:n, :n] += eta**2 * values[gi] ** 2 * (NX[gi] - noise_v[gi] * np.eye(n)) / alpha0
        out[gi] = Cg
    return out


#: the states and covariances of every network mapping computed in this process, by
#: (parameters, etas so far), as the surrogate's mappings are cached in multiindex.steps: a
#: mapping is computed once and shared by every point (and a longer run starts from a shorter one)
_CACHE: dict = {}
CACHE_SIZE = 128


def clear_cache() -> None:
    """Forget the cached network mappings, problems and aligned rules (benchmarks time a first
    computation)."""
    from asymptotics.network import channels
    from asymptotics.network.aligned import clear_aligned

    _CACHE.clear()
    _PARAMS.clear()
    channels.PROBLEMS.clear()
    channels.MEANS.clear()
    clear_aligned()


_PARAMS: dict = {}


def network_params(sigma: str | Function, target: str, *, steps: int, alpha0: float,
                   eta: float | Sequence[float], delta: float = 0.0,
                   readout: object = "constant") -> dict:
    """:meth:`NetworkGroups.spiked_params` of :func:`network_groups`, kept per setting (a new
    dict holding the same objects, so that the kappa rules built from them are kept too)."""
    eta_key = tuple(eta) if isinstance(eta, Sequence) and not isinstance(eta, str) else eta
    key = (sigma, target, steps, alpha0, eta_key, delta, repr(readout)) \
        if isinstance(sigma, str) and isinstance(target, str) else None
    hit = _PARAMS.get(key) if key is not None else None
    if hit is None:
        hit = network_groups(sigma, target, steps=steps, alpha0=alpha0, eta=eta, delta=delta,
                             readout=readout).spiked_params()
        if key is not None:
            _PARAMS[key] = hit
            while len(_PARAMS) > CACHE_SIZE:
                _PARAMS.pop(next(iter(_PARAMS)))
    return dict(hit)




def network_groups(sigma: str | Function, target: str, *, steps: int, alpha0: float,
                   eta: float | Sequence[float], delta: float = 0.0,
                   readout: object = "constant", quad: Quadrature = DEFAULT_QUAD
                   ) -> NetworkGroups:
    """The groups and their bulk covariances after ``t = 0..steps`` giant steps (module
    docstring); the states are those of :func:`asymptotics.multiindex.steps.steps_mapping`."""
    m = mapping_inputs(sigma, target, steps=steps, alpha0=alpha0, eta=eta, delta=delta,
                       readout=readout, quad=quad)
    steps, etas, delta, ro, s, g, k = m.steps, m.etas, m.delta, m.readout, m.sigma, m.g, m.k
    values, fractions, degree, K = m.values, m.fractions, m.degree, len(m.values)
    base, done = cached_prefix(_CACHE, (s, target, float(alpha0), delta, ro, quad), etas, steps)
    if done:
        states, covs = (list(x) for x in _CACHE[(base, etas[:done])])
    else:
        states = [GroupState(0, np.zeros((K, k)), np.zeros((K, 0)), np.ones(K))]
        covs = [np.repeat(np.eye(k)[None], K, axis=0)]
    st, cov = states[-1], covs[-1]
    for t in range(done, steps):
        with group_checks.in_float64("the network's steps", eta=etas, alpha0=float(alpha0),
                                     delta=delta, readout=ro.name):
            st, cov = advance_network(st, cov, sigma=s, g=g, values=values,
                                      fractions=fractions, eta=etas[t], alpha0=float(alpha0),
                                      delta=delta, quad=quad, degree=degree, per=m.per)
        group_checks.bulk_scale(float(np.sqrt(np.max(st.c))), s.name)  # as the surrogate's
        for arr in (st.a, st.L, st.c, cov):
            arr.flags.writeable = False  # shared through the cache
        states.append(st)
        covs.append(cov)
        if base is not None:
            _CACHE[(base, etas[:t + 1])] = (tuple(states), tuple(covs))
            while len(_CACHE) > CACHE_SIZE:
                _CACHE.pop(next(iter(_CACHE)))
    return NetworkGroups(sigma=s.name, target=target, readout=ro, alpha0=float(alpha0),
                         eta=etas[:steps], delta=delta, k=k, states=tuple(states[:steps + 1]),
                         cov=tuple(covs[:steps + 1]))
