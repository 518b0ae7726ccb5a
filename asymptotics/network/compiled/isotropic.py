"""A point's completion and its residual check with the isotropic bulk outside E
(:func:`asymptotics.network.solve.complete_net` and :func:`~asymptotics.network.solve.
full_map_net` with ``bulk=None`` and the anisotropic channels of
:class:`asymptotics.network.channels.Channels`, docs/THEORY.md §15, DERIVATIONS.md §9.3) as one
numba kernel: the rungs of the isotropic climb that decides a coupled point's kappa rule
(``solve.BORROW``, :func:`asymptotics.equations.ladder.climb_borrowed`) and the points of the
isotropic route.

The same operations in the same order as the Python (the resolvent and its derivative by the
kernels of :mod:`asymptotics.equations.small_dense`, ``X = A (I + M A)^-1`` by a solve with the
identity as numpy's ``inv``, the channels' field parts direction by direction); the small
products by BLAS or in loops: the numbers agree to rounding. The mean channel's functions are
the nodes (``kap`` n x r, :func:`asymptotics.spiked.kernels.mean_design`) or a
:func:`asymptotics.network.channels.mean_table` (n x K x r with the rows' outside scale); the
risk stays the caller's (:func:`asymptotics.network.channels.risk_of`)."""

from __future__ import annotations

import math

import numpy as np

from asymptotics.core.coldstart import kernel
from asymptotics.equations.mixing import relative_change
from asymptotics.network.compiled.complete import c_array as _c
from asymptotics.network.compiled.complete import (
    project_out,
    ready_once,
    solve_q,
    table_design,
    table_parts,
)
from asymptotics.spiked import kernels as _k
from asymptotics.spiked.kernels import (
    channel_v,
    dresolvent_along,
    dresolvent_parts,
    mean_lstsq,
    resolvent,
    sizes,
    vhats,
)

#: the completion and residual by :func:`complete_flat` (False: the Python)
COMPILED = True


@kernel(cache=True, error_model="numpy")
def _x_parts(M, dl, stt) -> tuple:
    """:meth:`asymptotics.network.channels.Channels.x_matrix`: ``(X, A, M (x) I_k, B)``."""
    K, k = stt.shape[0], stt.shape[1]
    Ab = _blockdiag(dl, stt)
    Mk = _kron_eye(M, k)
    eye = np.eye(K * k)
    B = np.linalg.solve(eye + Mk @ Ab, eye)
    return Ab @ B, Ab, Mk, B


@kernel(cache=True, error_model="numpy")
def _kron_eye(M, k) -> np.ndarray:
    """``np.kron(M, I_k)``."""
    K = M.shape[0]
    out = np.zeros((K * k, K * k))
    for g in range(K):
        for hh in range(K):
            for j in range(k):
                out[g * k + j, hh * k + j] = M[g, hh]
    return out


@kernel(cache=True, error_model="numpy")
def _blockdiag(dl, blocks) -> np.ndarray:
    """:meth:`asymptotics.network.channels.Channels.blockdiag`."""
    K, n = blocks.shape[0], blocks.shape[1]
    out = np.zeros((K * n, K * n))
    for g in range(K):
        for i in range(n):
            for j in range(n):
                out[g * n + i, g * n + j] = dl[g] * blocks[g, i, j]
    return out


@kernel(cache=True, error_model="numpy")
def _field_q(parts, xp, M, tau, beta, pi, zh, ph, kbig, e, stt) -> tuple:
    """:meth:`asymptotics.network.channels.Channels.field_q` (``zh`` K x r, ``ph`` K x k) with
    the isotropic derivative (its direction-free ``parts``) and ``xp`` of :func:`_x_parts`."""
    K = e.shape[0]
    X, Ab, Mk, B = xp
    u = kbig @ np.ascontiguousarray(zh).ravel() + np.ascontiguousarray(ph).ravel()
    zq = np.empty(K)
    for g in range(K):
        zq[g] = (zh[g] @ e[g]) @ zh[g]
    q1 = np.zeros((K, K))
    q2 = np.zeros(K)
    for g in range(K):
        for hh in range(-1, K):  # (-1: the direction Vhat2_g, then Vhat1_gh)
            d1, d2 = np.zeros((K, K)), np.zeros(K)
            if hh < 0:
                d2[g] = 1.0
            else:
                d1[g, hh] = 1.0
            dv2 = dresolvent_along(parts, M, tau, beta, pi, d1, d2)[1]
            ddl = beta * dv2
            dA = _blockdiag(ddl, stt)
            dM = _kron_eye(d1, stt.shape[1])
            dX = dA @ B - (X @ (dM @ Ab + Mk @ dA)) @ B
            val = -((u @ dX) @ u + ddl @ zq)
            if hh < 0:
                q2[g] = val
            else:
                q1[g, hh] = val
    return 0.5 * (q1 + q1.T), q2


@kernel(cache=True, error_model="numpy")
def _error_parts(state, kap2, kap3, three, mu0, mb1, ms2, h, h1, h2) -> tuple:
    """:func:`asymptotics.network.channels.error_parts`: ``(b, E0)`` at ``state``."""
    if not three:
        b, E0, _, _ = _k.error_parts(state, kap2, mu0, mb1, ms2, h, h1, h2)
        return b, E0
    K, r, k = kap3.shape[1], kap3.shape[2], h1.shape[1]
    o = sizes(K, r, k)
    return table_parts(state[o[4]:o[5]].reshape((K, r)), state[o[5]:o[6]].reshape((K, k)),
                       state[o[6]:o[7]], kap3, mu0, mb1, h, h1, h2)


@kernel(cache=True, error_model="numpy")
def _ph(iv, w, mb1, h1, A) -> np.ndarray:
    """``A E[mub1_g h1/(1+V)]`` (K x k)."""
    n, K = mb1.shape
    k = h1.shape[1]
    ph = np.zeros((K, k))
    for j in range(n):
        a = w[j] * iv[j]
        for g in range(K):
            for i in range(k):
                ph[g, i] += a * mb1[j, g] * h1[j, i]
    return A * ph


@kernel(cache=True, error_model="numpy")
def _zh(iv, w, b, kap, h, A) -> np.ndarray:
    """``A E[(h - b) P/(1+V)]`` (K x r) of a mean table ``kap`` (n x K x r), as
    :func:`asymptotics.network.channels.hats_of`."""
    n, K, r = kap.shape
    zh = np.zeros((K, r))
    for j in range(n):
        a = w[j] * iv[j] * (h[j] - b[j])
        for g in range(K):
            for i in range(r):
                zh[g, i] += a * kap[j, g, i]
    return A * zh


@kernel(cache=True, error_model="numpy")
def complete_flat(v, w, kap2, kap3, three, mu0, mb1, ms2, h, h1, h2, A, lam, delta, beta, pi,
                  p_inv, stt, kbig, e, floor) -> tuple:
    """Kernel: ``(state, ok, residual)``: :func:`asymptotics.network.solve.complete_net` of
    ``v = (V1, V2)`` with the isotropic bulk and the channels ``(stt, kbig, e)``
    (:class:`asymptotics.network.channels.Channels`), and the relative residual of
    :func:`~asymptotics.network.solve.full_map_net` there (NaN where the state is not finite;
    the NaN state and not ok where the resolvent fails). ``three``: the mean channel's table is
    ``kap3`` (n x K x r), else the nodes ``kap2`` (n x r)."""
    n, K = mb1.shape
    r, k = (kap3.shape[2] if three else kap2.shape[1]), h1.shape[1]
    o = sizes(K, r, k)
    nq = K * K + K
    V1in, V2in = v[:K * K].reshape((K, K)), v[K * K:]
    iv = 1.0 / (1.0 + channel_v(V1in, V2in, mb1, ms2))
    M, v2 = vhats(iv, w, mb1, ms2, A)
    tau, V1, V2 = resolvent(M, lam + v2, beta, pi)
    for g in range(K):
        if not np.isfinite(tau[g]):
            return np.full(o[7], np.nan), False, math.nan
    dl = beta * pi * tau
    eps = p_inv / (A * V2) if p_inv > 0.0 else np.zeros(K)
    Phi, Psi, ht = table_design(iv, w, kap3, mu0, h, eps) if three else \
        _k.mean_design(iv, w, kap2, mu0, mb1, h, eps)
    ph = _ph(iv, w, mb1, h1, A)
    phv = ph.ravel()
    Psr, htr = project_out(Phi, Psi, ht)
    xp = _x_parts(M, dl, stt)
    X = xp[0]
    kT = np.ascontiguousarray(kbig.T)
    pzz = (kT @ X) @ kbig + _blockdiag(dl, e)
    c = kT @ (X @ phv)
    PsrT = np.ascontiguousarray(Psr.T)
    Apzz = A * pzz
    Sys = np.eye(K * r) + Apzz @ (PsrT @ Psr)
    zeta = np.linalg.solve(Sys, Apzz @ (PsrT @ htr) + c)
    m = mean_lstsq(Phi, ht - Psi @ zeta)
    PsiT = np.ascontiguousarray(Psi.T)
    zh = A * (PsiT @ (ht - Psi @ zeta - Phi @ m))
    psi = X @ (kbig @ zh + phv)
    state = np.zeros(o[7])
    state[o[2]:o[4]] = v
    state[o[4]:o[5]] = zeta
    state[o[5]:o[6]] = psi
    state[o[6]:] = m
    _, E0 = _error_parts(state, kap2, kap3, three, mu0, mb1, ms2, h, h1, h2)
    iv2 = iv * iv
    R1, R2 = vhats(iv2 * (E0 + delta), w, mb1, ms2, A)
    parts = dresolvent_parts(M, tau, beta, pi)
    dV1, dV2 = dresolvent_along(parts, M, tau, beta, pi, R1, R2 + m * m * p_inv / (V2 * V2))
    f1, f2 = _field_q(parts, xp, M, tau, beta, pi, zh.reshape((K, r)), ph, kbig, e, stt)
    c0 = np.concatenate(((f1 - dV1).ravel(), f2 - dV2))
    Mq = np.eye(nq)
    for col in range(nq):  # node_jacobian, then the derivative along each column
        qi = mb1[:, col // K] * mb1[:, col % K] if col < K * K else ms2[:, col - K * K]
        dM, dv = vhats(iv2 * qi, w, mb1, ms2, A)
        e1, e2 = dresolvent_along(parts, M, tau, beta, pi, dM, dv)
        for i in range(K * K):
            Mq[i, col] += e1.ravel()[i]
        for g in range(K):
            Mq[K * K + g, col] += e2[g]
    qv, ok = solve_q(Mq, c0)
    state[:nq] = qv
    for i in range(o[7]):
        if not np.isfinite(state[i]):
            return state, ok, math.nan
    return state, ok, relative_change(state, _map(state, w, kap2, kap3, three, mu0, mb1, ms2,
                                                  h, h1, h2, A, lam, delta, beta, pi, p_inv,
                                                  stt, kbig, e), floor)


@kernel(cache=True, error_model="numpy")
def _map(state, w, kap2, kap3, three, mu0, mb1, ms2, h, h1, h2, A, lam, delta, beta, pi, p_inv,
         stt, kbig, e) -> np.ndarray:
    """:func:`asymptotics.network.solve.full_map_net` with the isotropic bulk."""
    n, K = mb1.shape
    r, k = (kap3.shape[2] if three else kap2.shape[1]), h1.shape[1]
    o = sizes(K, r, k)
    if three:  # (channels.hats_of)
        b, E0 = _error_parts(state, kap2, kap3, three, mu0, mb1, ms2, h, h1, h2)
        q = channel_v(state[o[0]:o[1]].reshape((K, K)), state[o[1]:o[2]], mb1, ms2)
        V = channel_v(state[o[2]:o[3]].reshape((K, K)), state[o[3]:o[4]], mb1, ms2)
        iv = 1.0 / (1.0 + V)
        M, v2 = vhats(iv, w, mb1, ms2, A)
        Q1h, Q2h = vhats(iv * iv * (E0 + q + delta), w, mb1, ms2, A)
        zh = _zh(iv, w, b, kap3, h, A)
        ph = _ph(iv, w, mb1, h1, A)
    else:
        M, v2, Q1h, Q2h, zh, ph, _, V = _k.hats_of(state, w, kap2, mu0, mb1, ms2, h, h1, h2, A,
                                                   delta)
        iv = 1.0 / (1.0 + V)
    tau, V1, V2 = resolvent(M, lam + v2, beta, pi)
    dl = beta * pi * tau
    xp = _x_parts(M, dl, stt)
    X = xp[0]
    zv = zh.ravel()
    psi = X @ (kbig @ zv + ph.ravel())
    zeta = np.ascontiguousarray(kbig.T) @ psi + _blockdiag(dl, e) @ zv
    eps = p_inv / (A * V2) if p_inv > 0.0 else np.zeros(K)
    Phi, Psi, ht = table_design(iv, w, kap3, mu0, h, eps) if three else \
        _k.mean_design(iv, w, kap2, mu0, mb1, h, eps)
    m = mean_lstsq(Phi, ht - Psi @ zeta)
    parts = dresolvent_parts(M, tau, beta, pi)
    dV1, dV2 = dresolvent_along(parts, M, tau, beta, pi, Q1h, Q2h + m * m * p_inv / (V2 * V2))
    f1, f2 = _field_q(parts, xp, M, tau, beta, pi, zh, ph, kbig, e, stt)
    out = np.empty(o[7])
    out[o[0]:o[1]] = (f1 - dV1).ravel()
    out[o[1]:o[2]] = f2 - dV2
    out[o[2]:o[3]] = V1.ravel()
    out[o[3]:o[4]] = V2
    out[o[4]:o[5]] = zeta
    out[o[5]:o[6]] = psi
    out[o[6]:] = m
    return out


_NO2, _NO3 = _c(np.zeros((1, 1))), _c(np.zeros((1, 1, 1)))


def complete_iso(v: np.ndarray, ch, a: tuple, floor: float) -> tuple | None:
    """``(state, ok, residual, None)`` of :func:`asymptotics.network.solve.complete_net` with
    the isotropic bulk and the relative residual of its literal map by :func:`complete_flat`
    (the risk: the caller's); None where it does not apply or does not run compiled yet, or a
    solve in the kernel is singular (then the Python completion)."""
    w, kap, mu0, mb1, ms2, h, h1, h2, A, lam, delta, beta, pi, p_inv = a
    if (not COMPILED or kap.ndim not in (2, 3) or not isinstance(getattr(ch, "kbig", None),
                                                                  np.ndarray) or not _ready()):
        return None
    three = kap.ndim == 3
    try:
        state, ok, res = complete_flat(
            _c(v), _c(w), _NO2 if three else _c(kap), _c(kap) if three else _NO3, three,
            _c(mu0), _c(mb1), _c(ms2), _c(h), _c(h1), _c(h2), float(A), float(lam),
            float(delta), float(beta), _c(pi), float(p_inv), _c(ch.stt), _c(ch.kbig),
            _c(ch.e), float(floor))
    except np.linalg.LinAlgError:
        return None
    return state, bool(ok), float(res), None


def _ready() -> bool:
    """Whether :func:`complete_flat` runs compiled (:func:`coldstart.kernel_ready`)."""
    if _READY:
        return True
    n, K, r, k = 2, 1, 1, 1
    args = (_c(np.ones(2)), _c(np.ones(n)), _c(np.ones((n, r))), _NO3, False,
            *(_c(np.ones((n, K))) for _ in range(3)), _c(np.ones(n)), _c(np.ones((n, k))),
            _c(np.ones(n)), 1.0, 0.1, 0.0, 1.0, _c(np.ones(K)), 0.0,
            _c(np.ones((K, k, k))), _c(np.ones((K * k, K * r))), _c(np.ones((K, r, r))),
            1e-3)
    return ready_once(_READY, complete_flat, args)


_READY: list = []
