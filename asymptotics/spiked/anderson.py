"""The solver of the closed (V1, V2) subsystem as one numba kernel (docs/THEORY.md §10.5): the
one Anderson iteration of ``asymptotics.equations.mixing`` (that of the one-spike solver and of
``asymptotics.equations.solver.solve``: damped Picard with Anderson(m) mixing; an
accelerated step that is non-finite, leaves V >= 0 or raises the residual tenfold over the best
seen is rejected and the history reset; relative residual
max_i |F(x)_i - x_i| / max(|x_i|, scale_floor)), without the Python overhead per iteration."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from asymptotics.core.coldstart import kernel
from asymptotics.equations.mean_lsq import mean_coef2
from asymptotics.equations.mixing import CONTINUE, IT, RES, anderson_next, anderson_start
from asymptotics.equations.node_sums import check_sums, mirrored_rows, v_sums
from asymptotics.equations.node_sums_k import check_sums_k
from asymptotics.equations.paired.half_sums import check_sums_half, odd_rows
from asymptotics.equations.small_dense import dresolvent, resolvent
from asymptotics.equations.solver import Status
from asymptotics.spiked.kernels import (
    complete_parts,
    risk_of,
    sizes,
    v_map,
)

if TYPE_CHECKING:
    from asymptotics.spiked.problem import SpikedProblem

# the status codes of Status (the one list), as plain ints the kernel compiles as constants
CONVERGED, MAX_ITER, NON_FINITE, OUT_OF_DOMAIN = (
    int(Status.CONVERGED), int(Status.MAX_ITER), int(Status.NON_FINITE),
    int(Status.OUT_OF_DOMAIN))


@kernel(cache=True, error_model="numpy")
def v_pass(x, w, mb1, ms2, A, lam, beta, pi, half=False):
    """Kernel: ``kernels.v_map``, for up to four groups from ``node_sums.v_sums`` (the same
    numbers, bit for bit, in one pass over the nodes); ``half``: tables symmetric under node
    n - 1 - j <-> j (``node_sums.mirrored_rows``), the sums over the first half, doubled
    (2 A times them: the same product as A times twice them)."""
    K = pi.shape[0]
    if K > 4:
        return v_map(x, w, mb1, ms2, A, lam, beta, pi)
    n = mb1.shape[0] // 2 if half else mb1.shape[0]
    Ah = 2.0 * A if half else A
    M, v2 = v_sums(x, w, mb1, ms2, n)
    tau, nV1, nV2 = resolvent(Ah * M, lam + Ah * v2, beta, pi)
    out = np.empty(K * K + K)
    out[:K * K] = nV1.ravel()
    out[K * K:] = nV2
    return out


@kernel(cache=True, error_model="numpy")
def anderson(x0, nonneg, w, mb1, ms2, A, lam, beta, pi, rtol, floor, max_iter, damping, m_hist,
             blowup=1e12, half=False):
    """Kernel: x = v_map(x) from x0 by the one Anderson iteration (``equations.mixing``);
    returns (x, status, n_iter, residual) with the status codes of
    ``asymptotics.equations.solver.Status`` (0 converged, 1 max_iter, 2 non-finite); ``half``:
    :func:`v_pass`'s."""
    work, meta = anderson_start(x0.shape[0], m_hist)
    x = x0.copy()
    while True:
        fx = v_pass(x, w, mb1, ms2, A, lam, beta, pi, half)
        x, code = anderson_next(x, fx, work, meta, nonneg, rtol, floor, max_iter, damping,
                                m_hist, blowup)
        if code != CONTINUE:
            return x, code, int(meta[IT]), meta[RES]


@kernel(cache=True, error_model="numpy")
def _residual(x: np.ndarray, fx: np.ndarray, floor: float) -> float:
    """max_i |fx_i - x_i| / max(|x_i|, floor), NaN if any term is (``solver.relative_residual``)."""
    out = -np.inf
    for i in range(x.shape[0]):
        r = abs(fx[i] - x[i]) / max(abs(x[i]), floor)
        if np.isnan(r):
            return np.nan
        out = max(out, r)
    return out


@kernel(cache=True, error_model="numpy")
def literal_map(state, parts, w, kap, mu0, mb1, ms2, h, h1, h2, A, delta, beta, pi, p_inv,
                half=False):
    """Kernel: ``kernels.full_map_e`` at the state ``kernels.complete_parts`` returned, from the
    parts it shares with that state ((V1, V2) are the same: the conjugates Vhat, the resolvent,
    psihat, the mean design and the per-node mean parts are reused, the same numbers; the
    rest in one pass over the nodes, ``equations.node_sums.check_sums``); m by the design's SVD of
    ``complete_parts`` (``full_map_e`` asks LAPACK's least squares for the same minimum-norm
    solution with the same 1e-12 cut: equal to round-off); ``half``: ``complete_parts``' (the
    sums over pairs of mirrored nodes, ``equations.paired.half_sums.check_sums_half``)."""
    iv, M, v2, tau, V1, V2, ph, Phi, Psi, ht, U, sv, Vt, nk, b, E0 = parts
    n, K = mb1.shape
    r = kap.shape[1]
    k = h1.shape[1]
    o_q1, o_q2, o_v1, o_v2, o_z, o_p, o_m, end = sizes(K, r, k)
    Q1 = np.ascontiguousarray(state[o_q1:o_q2]).reshape((K, K))
    if half:
        E, Q1h, Q2h, zh = check_sums_half(Q1, state[o_q2:o_v1], iv, b, E0, delta, w, kap, mb1,
                                          ms2, h)
    elif K <= 2:
        E, Q1h, Q2h, zh = check_sums(Q1, state[o_q2:o_v1], iv, b, E0, delta, w, kap, mb1,
                                     ms2, h)
    else:  # (node_sums_k: channel_v's, vhats' numbers, in one pass)
        E, Q1h, Q2h, zh = check_sums_k(Q1, state[o_q2:o_v1], iv, b, E0, delta, w, kap, mb1,
                                       ms2, h)
    Q1h = A * Q1h
    Q2h = A * Q2h
    zh = A * zh
    zeta = np.empty((K, r))
    for g in range(K):
        zeta[g] = beta * pi[g] * tau[g] * zh[g]
    psi = beta * (V1.T @ ph)
    if K == 2 and nk == 2 and U.shape[1] == 2:  # (the completion's full-rank design)
        m = mean_coef2(U, sv, Vt, Psi, ht, zeta.ravel())
    else:
        Qb = np.ascontiguousarray(U[:, :nk])
        m = np.ascontiguousarray(Vt[:nk].T) @ ((Qb.T @ (ht - Psi @ zeta.ravel())) / sv[:nk])
    X1 = Q1h + beta * (ph @ ph.T)
    X2 = Q2h.copy()
    for g in range(K):
        X2[g] += beta * np.sum(zh[g] ** 2) + m[g] * m[g] * p_inv / (V2[g] * V2[g])
    dV1, dV2 = dresolvent(M, tau, beta, pi, X1, X2)
    out = np.empty(end)
    out[o_q1:o_q2] = -dV1.ravel()
    out[o_q2:o_v1] = -dV2
    out[o_v1:o_v2] = V1.ravel()
    out[o_v2:o_z] = V2
    out[o_z:o_p] = zeta.ravel()
    out[o_p:o_m] = psi.ravel()
    out[o_m:] = m
    return out, E


@kernel(cache=True, error_model="numpy")
def solve_point(x0, has_x0, nonneg, w, kap, mu0, mb1, ms2, h, h1, h2, A, lam, delta, beta, pi,
                p_inv, rtol, floor, max_iter, damping, m_hist, blowup=1e12):
    """Kernel: one point of the K-group equations (docs/THEORY.md §10.5) in one call: the
    (V1, V2) solve from ``x0`` (if ``has_x0``), else or then from the cold start 0.5 diag(pi),
    0.5 pi, and once more from it with four times the iterations and damping 0.2; three
    contraction steps; the exact completion; the relative residual of the literal map and the
    physical domain (Q2 >= 0, diag Q1 >= 0 up to round-off). Returns (state, status, n_iter,
    residual, x, solved, risk, sv, power, total): ``x`` the (V1, V2) the solve ended on,
    ``solved`` whether it converged, ``risk`` NaN unless the status is converged; (sv, power,
    total) the mean design's singular values, the target's power along them and in all (the
    contrast check, ``spiked.contrast``), empty unless solved. ``blowup``: as in
    :func:`anderson`."""
    K = pi.shape[0]
    r = kap.shape[1]
    k = h1.shape[1]
    o = sizes(K, r, k)
    cold = np.zeros(K * K + K)
    for g in range(K):
        cold[g * (K + 1)] = 0.5 * pi[g]
        cold[K * K + g] = 0.5 * pi[g]
    n_att = 3 if has_x0 else 2
    half = mirrored_rows(w, mb1, ms2)  # (the (V1, V2) map's sums over half the nodes)
    # (and the completion's over pairs of nodes where kappa and mu0 are odd too)
    paired = half and odd_rows(kap, mu0)
    x = cold
    code = MAX_ITER
    n_it = 0
    rr = np.inf
    for i in range(n_att):
        start = x0 if (has_x0 and i == 0) else cold
        last = i == n_att - 1
        x, code, n_it, rr = anderson(start.copy(), nonneg, w, mb1, ms2, A, lam, beta, pi,
                                     rtol / 10, floor, 4 * max_iter if last else max_iter,
                                     0.2 if last else damping, m_hist, blowup, half)
        if code == CONVERGED:
            break
    solved = code == CONVERGED
    state = np.full(o[7], np.nan)
    sv, power, total = np.zeros(0), np.zeros(0), 0.0
    resid = rr
    status = code
    E = np.zeros(0)
    clamped = True  # (risk from the state unless full_map's E(k) is at this very state)
    if solved:
        v = x
        for _ in range(3):
            v = v_pass(v, w, mb1, ms2, A, lam, beta, pi, half)
        cp = complete_parts(v, w, kap, mu0, mb1, ms2, h, h1, h2, A, lam, delta, beta, pi,
                            p_inv, paired)
        state, ok, sv, power, total = cp[0], cp[1], cp[2], cp[3], cp[4]
        fx, E = literal_map(state, cp[5:], w, kap, mu0, mb1, ms2, h, h1, h2, A, delta, beta,
                            pi, p_inv, paired)
        resid = _residual(state, fx, floor)
        finite = True
        for i in range(state.shape[0]):
            if not np.isfinite(state[i]):
                finite = False
        tiny = 0.0
        if finite:
            big = 0.0
            for i in range(o[2]):
                big = max(big, abs(state[i]))
            tiny = 1e-12 * max(1.0, big)
        q_ok = ok and finite
        for i in range(o[1], o[2]):
            if not state[i] >= -tiny:
                q_ok = False
        for g in range(K):
            if not state[g * (K + 1)] >= -tiny:
                q_ok = False
        if q_ok:
            clamped = False
            for i in range(o[1], o[2]):
                if not state[i] > 0.0:
                    clamped = True
                state[i] = max(state[i], 0.0)
            if not resid <= rtol:
                status = MAX_ITER
        else:
            status = OUT_OF_DOMAIN
    risk = np.nan
    if status == CONVERGED:
        # risk_of(state) is sum w E(k); full_map_e computed E at this state unless Q2 moved
        # (risk_of's matrix products on row-major tables: two groups' per-group tables come in
        # column order, node_args; np.ascontiguousarray: the same numbers)
        risk = risk_of(state, w, np.ascontiguousarray(kap), np.ascontiguousarray(mu0), mb1, ms2,
                       h, np.ascontiguousarray(h1), h2) if clamped else float(np.sum(w * E))
    return state, status, n_it, resid, x, solved, risk, sv, power, total


#: the node tables of the last COLUMNS_SIZE problems of two groups, per-group ones in column order
#: (:func:`node_args`), by the tables' identity (each entry keeps its tables alive)
COLUMNS_SIZE = 16
_COLUMNS: dict = {}


def node_args(prob: SpikedProblem) -> tuple:
    """(weights, kappa, mu0, mub1, mus2, h, h1, h2) of ``prob``'s tables as the kernels take
    them: with two groups the per-group ones (mu0, mub1, mus2) in column (Fortran) order, so
    that the node passes (``equations.node_sums``) read each group's column with unit stride and
    vectorise (the same operations in the same order: the same numbers); every other table,
    and every table of one group or of three and more, as it is (row-major). So the kernels
    take one layout per number of groups' branch, whatever r and the target's rank: a column
    table of one column is row-major to numba, so column order for the (n, r) or (n, 1) ones
    would compile each kernel once more per such shape pattern (~40 s each)."""
    t = prob.tables
    if prob.fractions.shape[0] != 2:
        return t.weights, t.kappa, t.mu0, t.mub1, t.mus2, t.h, t.h1, t.h2
    got = _COLUMNS.get(id(t))
    if got is None or got[0] is not t:
        f = np.asfortranarray
        got = _COLUMNS[id(t)] = (t, (t.weights, t.kappa, f(t.mu0), f(t.mub1), f(t.mus2), t.h,
                                     t.h1, t.h2))
        while len(_COLUMNS) > COLUMNS_SIZE:
            _COLUMNS.pop(next(iter(_COLUMNS)))
    return got[1]
