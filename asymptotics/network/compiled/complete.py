"""A point's completion and its residual check (:func:`asymptotics.network.solve.complete_net`
and :func:`~asymptotics.network.solve.full_map_net`, docs/THEORY.md §15, DERIVATIONS.md §9.7)
as one numba kernel where the mean channel carries each group's mean functions
(:func:`asymptotics.network.channels.mean_table`, n x K x r) and the coupled bulk's W is
diagonal per direction (every group in the base class of :mod:`asymptotics.network.schur`), or
not (:data:`GENERAL_W`: a group outside the base class, every ``D_g > 0``; the field parts'
forms then from the coupling's ``W a``, kept by :meth:`~asymptotics.network.coupling.
CoupledChannels.acal` as the Python completion asks for it:
:func:`~asymptotics.network.compiled.coupled.forms_wa`).

The bulk's own steps stay in Python, so its warm starts and kept results are exactly those of
the Python completion: the resolvent (:meth:`~asymptotics.network.bulk.GroupBulk.resolvent`, its
Newton loop compiled), ``Acal`` (:meth:`~asymptotics.network.coupling.CoupledChannels.acal`),
the derivative matrix (:meth:`~asymptotics.network.bulk.GroupBulk.dlin`), ``jac_last`` and
``lin_last`` are asked for and kept in the same order with the same numbers. The kernel does the
rest: the mean design, its SVD and the (zeta, m) system, the channels' blocks of ``Acal``, the
fields, the error parts, the Q-system (with :func:`~asymptotics.network.compiled.coupled.
field_q_diag`), then the literal map at that state (its ``(Vhat1, Vhat2)`` are the completion's
bit for bit: the resolvent's kept result) and its relative residual. The same operations; the
small products by BLAS or in loops: the numbers agree to rounding."""

from __future__ import annotations

import math

import numpy as np

from asymptotics.core import coldstart
from asymptotics.core.coldstart import kernel
from asymptotics.equations.mixing import relative_change
from asymptotics.network.compiled.coupled import NO_WA, diag_w, field_q_diag
from asymptotics.network.compiled.diagonal import pairwise
from asymptotics.spiked.kernels import DET_MIN, channel_v, mean_lstsq, sizes, vhats

#: the completion and residual by :func:`complete_check` where it applies (False: Python)
COMPILED = True
#: also where W is not diagonal (a group outside the base class: the field parts' forms from
#: ``W a``, :func:`asymptotics.network.compiled.coupled.forms_wa`; False: Python there)
GENERAL_W = True
#: the ``Wd`` argument of :func:`complete_check` where W is not diagonal (zero-size)
NO_W = np.zeros((0, 1, 1, 1))
NO_W.flags.writeable = False
#: :func:`complete_check`'s codes: done; the field parts not finite (the Python completion);
#: the literal map's conjugates not the completion's (the Python residual)
DONE, GENERAL, RESIDUAL = 0, 1, 2


@kernel(cache=True, error_model="numpy")
def table_design(iv, w, kap, mu0, h, eps) -> tuple:
    """:func:`asymptotics.network.channels.mean_design` (``kap`` n x K x r): the same
    numbers."""
    n, K, r = kap.shape
    Phi = np.zeros((n + K, K))
    Psi = np.zeros((n + K, K * r))
    ht = np.zeros(n + K)
    for j in range(n):
        sq = np.sqrt(w[j] * iv[j])
        ht[j] = sq * h[j]
        for g in range(K):
            Phi[j, g] = sq * mu0[j, g]
            for i in range(r):
                Psi[j, g * r + i] = sq * kap[j, g, i]
    for g in range(K):
        Phi[n + g, g] = np.sqrt(eps[g])
    return Phi, Psi, ht


@kernel(cache=True, error_model="numpy")
def table_parts(zeta, psi, m, kap, mu0, mb1, h, h1, h2) -> tuple:
    """Per node ``(b, E0)`` (:func:`asymptotics.network.channels._mean_parts`; ``zeta`` K x r,
    ``psi`` K x k)."""
    n, K, r = kap.shape
    k = h1.shape[1]
    b = np.empty(n)
    E0 = np.empty(n)
    for j in range(n):
        bm = 0.0
        for g in range(K):
            bm += mu0[j, g] * m[g]
        bz = 0.0
        c = 0.0
        for g in range(K):
            for i in range(r):
                bz += kap[j, g, i] * zeta[g, i]
            hp = 0.0
            for i in range(k):
                hp += h1[j, i] * psi[g, i]
            c += mb1[j, g] * hp
        bj = bm + bz
        b[j] = bj
        E0[j] = h2[j] - 2.0 * bj * h[j] + bj * bj - 2.0 * c
    return b, E0


@kernel(cache=True, error_model="numpy")
def _blocks(Ac, order, nv, k, M) -> tuple:
    """``(Phi_VV, Phi_VT, X_TT)`` of ``Acal`` and ``M = Vhat1 (x) I_k``
    (:meth:`asymptotics.network.coupling.CoupledChannels.blocks`)."""
    nA = Ac.shape[0]
    nt = nA - nv
    K = M.shape[0]
    Avv = np.empty((nv, nv))
    Avt = np.empty((nv, nt))
    Att = np.empty((nt, nt))
    for x in range(nv):
        for y in range(nv):
            Avv[x, y] = Ac[order[x], order[y]]
        for y in range(nt):
            Avt[x, y] = Ac[order[x], order[nv + y]]
    for x in range(nt):
        for y in range(nt):
            Att[x, y] = Ac[order[nv + x], order[nv + y]]
    Mk = np.zeros((nt, nt))
    for g in range(K):
        for hh in range(K):
            for j in range(k):
                Mk[g * k + j, hh * k + j] = M[g, hh]
    eye = np.eye(nt)
    Bi = np.linalg.solve(eye + Mk @ Att, eye)
    Xtt = Att @ Bi
    Pvt = Avt @ Bi
    Ci = np.linalg.solve(eye + Att @ Mk, eye)
    Pvv = Avv - ((Avt @ Mk) @ Ci) @ np.ascontiguousarray(Avt.T)
    return Pvv, Pvt, Xtt


@kernel(cache=True, error_model="numpy")
def _dres(lin, X1, X2) -> tuple:
    """:meth:`asymptotics.network.bulk.GroupBulk.dresolvent` from its matrix ``lin``."""
    K = X2.shape[0]
    x = np.concatenate((X1.ravel(), X2))
    y = lin @ x
    dV1 = np.empty((K, K))
    for g in range(K):
        for hh in range(K):
            dV1[g, hh] = 0.5 * (y[g * K + hh] + y[hh * K + g])
    return dV1, y[K * K:].copy()


@kernel(cache=True, error_model="numpy")
def solve_q(Mq, c0) -> tuple:
    """The Q-system's solution and whether its matrix is admissible (determinant above
    ``DET_MIN``, positive diagonal)."""
    nq = Mq.shape[0]
    ok = np.linalg.det(Mq) > DET_MIN
    for i in range(nq):
        ok = ok and Mq[i, i] > 0.0
    qv = np.linalg.solve(Mq, c0)
    return qv, ok


@kernel(cache=True, error_model="numpy")
def project_out(Phi, Psi, ht) -> tuple:
    """``Psi`` and ``ht`` with their parts in the range of ``Phi`` removed (its left singular
    vectors above 1e-12 of the largest): the mean channels solved out of the V-type system."""
    U, sv, _ = np.linalg.svd(Phi, False)
    nk = 0
    if sv.shape[0] > 0 and sv[0] > 0:
        for i in range(sv.shape[0]):
            if sv[i] > 1e-12 * sv[0]:
                nk += 1
    Qb = np.ascontiguousarray(U[:, :nk])
    QbT = np.ascontiguousarray(Qb.T)
    Psr = Psi - Qb @ (QbT @ Psi)
    htr = ht - Qb @ (QbT @ ht)
    return Psr, htr


@kernel(cache=True, error_model="numpy")
def complete_check(v, iv, M, v2, tau, V1, V2, w, kap, mu0, mb1, ms2, h, h1, h2, A, delta, beta,
                   pi, p_inv, Ac, order, k, Wd, Wa, a_w, D, ecov, lin, floor) -> tuple:
    """Kernel: ``(state, ok, residual, code, dMv, dv2v, risk)``: the completion of ``v = (V1, V2)``
    (:func:`asymptotics.network.solve.complete_net` past the resolvent ``(tau, V1, V2)`` at
    ``(Vhat1, Vhat2) = (M, v2)``, ``iv = 1/(1 + V)`` on the nodes), the literal map's relative
    residual there (NaN where the state is not finite) and ``-d(Vhat1, Vhat2)/d(V1, V2)``
    (:func:`asymptotics.network.channels.node_jacobian`); ``code`` :data:`GENERAL` where the
    completion's field parts are not finite, :data:`RESIDUAL` where the map's are not or its
    conjugates differ from the completion's (the residual NaN: the caller's); ``risk`` that of
    :func:`asymptotics.network.channels.risk_of` at the state with ``Q2``'s negative entries
    set to 0 (as :func:`asymptotics.network.solve.solve_network` cuts them before it)."""
    n, K, r = kap.shape
    nq = K * K + K
    o = sizes(K, r, k)
    nv = K * r
    ph = np.empty((K, k))
    for g in range(K):
        for i in range(k):
            acc = 0.0
            for j in range(n):
                acc += w[j] * iv[j] * mb1[j, g] * h1[j, i]
            ph[g, i] = A * acc
    phv = ph.ravel()
    eps = np.zeros(K)
    if p_inv > 0.0:
        for g in range(K):
            eps[g] = p_inv / (A * V2[g])
    Phi, Psi, ht = table_design(iv, w, kap, mu0, h, eps)
    Psr, htr = project_out(Phi, Psi, ht)
    Pvv, Pvt, Xtt = _blocks(Ac, order, nv, k, M)
    PsrT = np.ascontiguousarray(Psr.T)
    Apzz = A * Pvv
    Sys = np.eye(nv) + Apzz @ (PsrT @ Psr)
    zeta = np.linalg.solve(Sys, Apzz @ (PsrT @ htr) + Pvt @ phv)
    m = mean_lstsq(Phi, ht - Psi @ zeta)
    PsiT = np.ascontiguousarray(Psi.T)
    zh = A * (PsiT @ (ht - Psi @ zeta - Phi @ m))
    psi = Xtt @ phv + np.ascontiguousarray(Pvt.T) @ zh
    state = np.zeros(o[7])
    state[o[2]:o[4]] = v
    state[o[4]:o[5]] = zeta
    state[o[5]:o[6]] = psi
    state[o[6]:] = m
    dMv, dv2v = np.empty((nq, K, K)), np.empty((nq, K))
    nan = np.full(o[7], np.nan)
    _, E0 = table_parts(zeta.reshape((K, r)), psi.reshape((K, k)), m, kap, mu0, mb1, h, h1,
                        h2)
    iv2 = iv * iv
    R1, R2 = vhats(iv2 * (E0 + delta), w, mb1, ms2, A)
    dV1, dV2 = _dres(lin, R1, R2 + m * m * p_inv / (V2 * V2))
    f1, f2, fine = field_q_diag(Ac, order, nv, k, zh, phv, Wd, Wa, a_w, M, D, ecov, lin, beta)
    if not fine:
        return nan, False, math.nan, GENERAL, dMv, dv2v, math.nan
    c0 = np.concatenate(((f1 - dV1).ravel(), f2 - dV2))
    for col in range(nq):  # node_jacobian
        qi = mb1[:, col // K] * mb1[:, col % K] if col < K * K else ms2[:, col - K * K]
        dMv[col], dv2v[col] = vhats(iv2 * qi, w, mb1, ms2, A)
    G = np.empty((nq, nq))
    for col in range(nq):
        for i in range(K * K):
            G[i, col] = dMv[col].ravel()[i]
        for g in range(K):
            G[K * K + g, col] = dv2v[col, g]
    Y = lin @ G
    Mq = np.eye(nq)
    for i in range(K * K):
        a, b = i // K, i % K
        for col in range(nq):
            Mq[i, col] += 0.5 * (Y[i, col] + Y[b * K + a, col])
    for g in range(K):
        for col in range(nq):
            Mq[K * K + g, col] += Y[K * K + g, col]
    qv, ok = solve_q(Mq, c0)
    state[:nq] = qv
    for i in range(o[7]):
        if not np.isfinite(state[i]):
            return state, ok, math.nan, DONE, dMv, dv2v, math.nan
    # the risk at the state with Q2's rounding below 0 cut (risk_of after solve_network's cut)
    b, E0 = table_parts(zeta.reshape((K, r)), psi.reshape((K, k)), m, kap, mu0, mb1, h, h1,
                        h2)
    q = channel_v(qv[:K * K].reshape((K, K)), np.maximum(qv[K * K:], 0.0), mb1, ms2)
    risk = pairwise(w * (E0 + q))
    # the literal map at this state (full_map_net): its Vhat are the completion's
    q = channel_v(qv[:K * K].reshape((K, K)), qv[K * K:], mb1, ms2)
    Vn = channel_v(state[o[2]:o[3]].reshape((K, K)), state[o[3]:o[4]], mb1, ms2)
    ivn = 1.0 / (1.0 + Vn)
    Mn, v2n = vhats(ivn, w, mb1, ms2, A)
    for j in range(n):
        if ivn[j] != iv[j]:
            return state, ok, math.nan, RESIDUAL, dMv, dv2v, risk
    for g in range(K):
        for hh in range(K):
            if Mn[g, hh] != M[g, hh]:
                return state, ok, math.nan, RESIDUAL, dMv, dv2v, risk
        if v2n[g] != v2[g]:
            return state, ok, math.nan, RESIDUAL, dMv, dv2v, risk
    Q1h, Q2h = vhats(ivn * ivn * (E0 + q + delta), w, mb1, ms2, A)
    zhn = np.zeros((K, r))
    for j in range(n):
        aj = w[j] * ivn[j] * (h[j] - b[j])
        for g in range(K):
            for i in range(r):
                zhn[g, i] += aj * kap[j, g, i]
    zv = A * zhn.ravel()
    zn = Pvt @ phv + Pvv @ zv
    pn = Xtt @ phv + np.ascontiguousarray(Pvt.T) @ zv
    mn = mean_lstsq(Phi, ht - Psi @ zn)
    dV1, dV2 = _dres(lin, Q1h, Q2h + mn * mn * p_inv / (V2 * V2))
    f1, f2, fine = field_q_diag(Ac, order, nv, k, zv, phv, Wd, Wa, a_w, M, D, ecov, lin, beta)
    if not fine:
        return state, ok, math.nan, RESIDUAL, dMv, dv2v, risk
    out = np.empty(o[7])
    out[:K * K] = (f1 - dV1).ravel()
    out[K * K:nq] = f2 - dV2
    out[o[2]:o[3]] = V1.ravel()
    out[o[3]:o[4]] = V2
    out[o[4]:o[5]] = zn
    out[o[5]:o[6]] = pn
    out[o[6]:] = mn
    return state, ok, relative_change(state, out, floor), DONE, dMv, dv2v, risk


def _ro(x: np.ndarray) -> np.ndarray:
    """A read-only C-contiguous float64 view (one kernel signature whatever the flags)."""
    y = np.ascontiguousarray(x, dtype=np.float64).view()
    y.flags.writeable = False
    return y


def c_array(x: np.ndarray) -> np.ndarray:
    """A writable C-contiguous float64 array (``x`` itself if it is one, else a copy): one kernel
    signature whatever the flags, and the types of the K-group route's tables, so the kernels
    the routes share inside (``spiked.kernels``', the resolvent's, the tables') compile once."""
    y = np.ascontiguousarray(x, dtype=np.float64)
    return y if y.flags.writeable else y.copy()


_c = c_array


def complete_fast(v: np.ndarray, ch, a: tuple, bulk, floor: float) -> tuple | None:
    """``(state, ok, residual, risk)`` of :func:`asymptotics.network.solve.complete_net` and the
    relative residual of its literal map (None: the caller's, by
    :func:`~asymptotics.network.solve.full_map_net`; ``risk``: :func:`complete_check`'s) by
    :func:`complete_check`, the bulk and
    the coupling asked and kept as the Python completion does; None where it does not apply
    (then the Python completion: no kept result differs)."""
    w, kap, mu0, mb1, ms2, h, h1, h2, A, lam, delta, beta, pi, p_inv = a
    if (not COMPILED or bulk is None or kap.ndim != 3 or getattr(ch, "bulk", None) is not bulk
            or not _ready()):
        return None
    K = mb1.shape[1]
    iv = 1.0 / (1.0 + channel_v(v[:K * K].reshape((K, K)), v[K * K:], mb1, ms2))
    M, v2 = vhats(iv, w, mb1, ms2, A)
    tau, V1, V2 = bulk.resolvent(M, lam + v2, beta, pi, accept=getattr(bulk, "tau_accept", 0.0))
    if not np.all(np.isfinite(tau)):
        return (np.full(sizes(K, kap.shape[2], h1.shape[1])[-1], np.nan), False, math.nan,
                math.nan)
    D = beta * pi * tau
    if (Wd := diag_w(bulk, M, D)) is not None:
        Ac, Wa = ch.acal(M, D), NO_WA
    elif not (GENERAL_W and _not_diagonal(bulk, D)):
        return None
    else:  # W in another form: its W a (Acal's, kept), as the Python completion asks them
        Ac = ch.acal(M, D)
        formed, Wa = ch._w_parts(M, D)[1::2]
        if formed:  # (Kc formed: the Python's forms of P1, P2)
            return None
        Wd = NO_W
    lin = bulk.dlin(M, tau, beta, pi)
    try:  # (a singular solve in the kernel: the Python completion decides, as without it)
        state, ok, res, code, dMv, dv2v, risk = complete_check(
            _c(v), _c(iv), _ro(M), _c(v2), _c(tau), _c(V1), _c(V2), _c(w), _c(kap), _c(mu0),
            _c(mb1), _c(ms2), _c(h), _c(h1), _c(h2), float(A), float(delta), float(beta),
            _c(pi), float(p_inv), _ro(Ac), ch._ord, int(ch.k), _ro(Wd),
            _ro(Wa), _ro(ch.a_w), _ro(D), _ro(ch.ecov), _ro(lin), float(floor))
    except np.linalg.LinAlgError:
        return None
    if code == GENERAL:
        return None
    bulk.jac_last = (M, tau, beta, pi, dMv, dv2v)
    bulk.lin_last = (M, tau, V1, 1.0 / tau - (lam + v2))
    return state, bool(ok), None if code == RESIDUAL else float(res), float(risk)


def _not_diagonal(bulk, D: np.ndarray) -> bool:
    """Whether W is not diagonal per direction (a group outside the base class of
    :mod:`asymptotics.network.schur`) and every ``D_g > 0`` (W from the Schur route)."""
    eig = bulk._eig
    return (eig is not None and eig[3] < bulk.K and not np.iscomplexobj(D)
            and bool(np.all(D > 0.0)))


def _ready() -> bool:
    """Whether :func:`complete_check` runs compiled (:func:`coldstart.kernel_ready`)."""
    if _READY:
        return True
    n, K, r, k = 2, 1, 1, 1
    one = np.ones(1)
    args = tuple((_ro if i == 2 else _c)(x) for i, x in enumerate((
        np.ones(2), np.ones(n), np.eye(K), one, one, np.eye(K), one, np.ones(n),
        np.ones((n, K, r)), np.ones((n, K)), np.ones((n, K)), np.ones((n, K)), np.ones(n),
        np.ones((n, k)), np.ones(n))))
    args = args + (1.0, 0.0, 1.0, _c(one), 0.0, _ro(np.eye(2)), np.arange(2), 1,
                   _ro(np.ones((1, 1, K, K))), NO_WA, _ro(np.ones((1, K, 2, 1))), _ro(one),
                   _ro(np.ones((K, 2, 2))), _ro(np.eye(2)), 1e-3)
    return ready_once(_READY, complete_check, args)


def ready_once(flag: list, disp, args: tuple) -> bool:
    """Whether the kernel ``disp`` runs compiled on ``args``' types
    (:func:`coldstart.kernel_ready`; in compile mode it compiles on its first call), kept in
    ``flag`` once it does."""
    ok = coldstart.kernel_ready(disp, args, lambda: disp(*args), compile_mode_ready=True)
    if ok:
        flag.append(True)
    return ok


_READY: list = []
