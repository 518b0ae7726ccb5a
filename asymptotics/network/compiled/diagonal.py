"""The bulk's ``(V1, tau)`` subsystem (:func:`asymptotics.network.solve._bulk_v`, docs/THEORY.md
§15, DERIVATIONS.md §9.7) and the resolvent's Newton loop
(:meth:`asymptotics.network.bulk.GroupBulk.resolvent`) as numba kernels where every group is in
the base class of :mod:`asymptotics.network.schur` (K = 1, or K = 2 groups with equal
covariances outside E): W is diagonal per direction, ``P_i = diag(1/(D s_i)) + Vhat1``, and an
evaluation of the bulk is one pass over the d eigenvalues ``s``. The map is
:func:`asymptotics.network.coupling.fp_map`'s ``fmap`` with
:meth:`~asymptotics.network.bulk.GroupBulk.evaluate`, the same numbers bit for bit (each
operation in the same order; the sums over the directions as numpy's: pairwise for K = 1, where
the sum is over one contiguous run, in order for K = 2), iterated by the one Anderson kernel
(:func:`asymptotics.equations.mixing.anderson_next`): no Python per iteration. The Newton loop's
traces are the same numbers; its Jacobian's Gram is summed in order (BLAS's at rounding: the
step's last bits, not the traces'), and the bulk's kept Jacobian is numpy's. Also the Anderson
driver of a Python map (:func:`map_fixed_point`, ``bulk.fixed_point``)."""

from __future__ import annotations

import numpy as np

from asymptotics.core import coldstart
from asymptotics.core.coldstart import kernel
from asymptotics.equations.mixing import CONTINUE, IT, RES, anderson_next, anderson_start
from asymptotics.equations.solver import SolverResult, Status
from asymptotics.spiked.kernels import channel_v, vhats

#: the code :func:`fixed_point` returns where an evaluation leaves the diagonal path (some
#: ``D_g <= 0`` or ``P_i`` not positive definite: the bulk's general evaluation applies)
FALLBACK = -2
#: the bulk's (V1, tau) subsystem by :func:`fixed_point` where it applies (False: the Python map)
DIAGONAL = True


def map_fixed_point(fmap, x0: np.ndarray, config, nonneg: tuple[int, ...] = ()
                ) -> SolverResult:
    """``x = fmap(x)`` from ``x0``: :func:`asymptotics.equations.solver.solve` (the Python
    reference) by its compiled twin, the one Anderson kernel
    (:func:`asymptotics.equations.mixing.anderson_next`, reverse communication) with a Python
    map (the bulk's (V1, tau) subsystem; ``asymptotics.network.bulk.fixed_point``)."""
    work, meta = anderson_start(x0.shape[0], config.anderson)
    nn = np.array(nonneg, dtype=np.int64)
    x = np.array(x0, dtype=np.float64)
    while True:
        x, code = anderson_next(x, np.asarray(fmap(x), dtype=np.float64), work, meta, nn,
                                config.rtol, config.scale_floor, config.max_iter,
                                config.damping, config.anderson, 1e12)
        if code != CONTINUE:
            st = Status(int(code))
            return SolverResult(x, st == Status.CONVERGED, st, int(meta[IT]), float(meta[RES]),
                                ())


@kernel(cache=True, error_model="numpy")
def _leaf(a: np.ndarray, lo: int, n: int) -> float:
    """numpy's pairwise sum of a run of at most 128 terms (eight accumulators)."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[lo + i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    while i < n - n % 8:
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@kernel(cache=True, error_model="numpy")
def pairwise(a: np.ndarray) -> float:
    """numpy's sum of the contiguous float64 run ``a`` (its add-reduce: :func:`_leaf` up to 128
    terms, above that the two halves split at a multiple of 8, left + right), without recursion
    (a stack of the segments, post-order)."""
    los = np.empty(128, dtype=np.int64)
    ns = np.empty(128, dtype=np.int64)
    marks = np.zeros(128, dtype=np.bool_)
    vals = np.empty(128)
    top, nv = 1, 0
    los[0], ns[0] = 0, a.shape[0]
    while top > 0:
        top -= 1
        lo, n, mark = los[top], ns[top], marks[top]
        if mark:  # both halves done: left + right
            vals[nv - 2] = vals[nv - 2] + vals[nv - 1]
            nv -= 1
        elif n <= 128:
            vals[nv] = _leaf(a, lo, n)
            nv += 1
        else:
            n2 = n // 2
            n2 -= n2 % 8
            los[top], ns[top], marks[top] = lo, n, True
            los[top + 1], ns[top + 1], marks[top + 1] = lo + n2, n - n2, False
            los[top + 2], ns[top + 2], marks[top + 2] = lo, n2, False
            top += 3
    return vals[0]


@kernel(cache=True, error_model="numpy")
def _traces(M, D, s, T, W):
    """``T_ag = sum_i (P_i^-1)_ag`` (K x K, into ``T``; ``P_i = diag(1/(D s_i)) + Vhat1``, as
    ``schur._pinv``; the sums as numpy's over (B, n)), ``P_i^-1`` into ``W`` (d x K x K, flat).
    False where some ``P_i`` is not positive definite (the bulk's general evaluation)."""
    K = D.shape[0]
    n = s.shape[0]
    if K == 1:
        for i in range(n):
            p = 1.0 / (D[0] * s[i]) + M[0, 0]
            if not p > 0.0:
                return False
            W[i] = 1.0 / p
        T[0, 0] = pairwise(W)
        return True
    t00, t01, t11 = 0.0, 0.0, 0.0  # K = 2 (closed form; the sums in order)
    for i in range(n):
        a = 1.0 / (D[0] * s[i]) + M[0, 0]
        dd = 1.0 / (D[1] * s[i]) + M[1, 1]
        det = a * dd - M[0, 1] * M[0, 1]
        if not (a > 0.0 and det > 0.0):
            return False
        p00, p11, p01 = dd / det, a / det, -M[0, 1] / det
        W[4 * i], W[4 * i + 1], W[4 * i + 2], W[4 * i + 3] = p00, p01, p01, p11
        if i == 0:
            t00, t01, t11 = p00, p01, p11
        else:
            t00 += p00
            t01 += p01
            t11 += p11
    T[0, 0], T[0, 1], T[1, 0], T[1, 1] = t00, t01, t01, t11
    return True


@kernel(cache=True, error_model="numpy")
def diag_map(y, w, mb1, ms2, A, lam, beta, pi, s, d, scratch):
    """Kernel: ``(fmap(y), ok)``: the bulk's ``(V1, tau)`` map at ``y`` (``s``: the d
    eigenvalues of the base class's covariance, flat; ``d`` the bulk's float d; ``scratch``:
    d K^2 floats); ``ok`` False where :meth:`GroupBulk.evaluate` would leave the diagonal path."""
    K = pi.shape[0]
    V1 = np.empty((K, K))
    for g in range(K):
        for h in range(K):
            V1[g, h] = y[g * K + h]
    tau = y[K * K:].copy()
    iv = 1.0 / (1.0 + channel_v(V1, pi * tau, mb1, ms2))
    M, v2 = vhats(iv, w, mb1, ms2, A)
    D = beta * pi * tau
    out = np.empty(K * K + K)
    for g in range(K):
        if not D[g] > 0.0:
            return out, False
    T = np.empty((K, K))
    if not _traces(M, D, s, T, scratch):
        return out, False
    for a in range(K):
        for g in range(K):
            T[a, g] = T[a, g] / D[g]
    bd = beta * d
    nV1 = np.empty((K, K))
    for g in range(K):
        for h in range(K):
            nV1[g, h] = D[g] * T[h, g] / bd
    for g in range(K):
        for h in range(K):
            out[g * K + h] = 0.5 * (nV1[g, h] + nV1[h, g])
    for g in range(K):
        e = 0.0
        for a in range(K):
            e += M[g, a] * T[a, g]
        out[K * K + g] = 1.0 / (lam + v2[g] + e / d)
    return out, True


@kernel(cache=True, error_model="numpy")
def fixed_point(y0, nonneg, w, mb1, ms2, A, lam, beta, pi, s, d, rtol, floor, max_iter,
                damping, m_hist, blowup=1e12):
    """Kernel: ``y = diag_map(y)`` from ``y0`` by the one Anderson iteration (as
    :func:`asymptotics.network.bulk.fixed_point` with ``fmap``): ``(y, code, n_iter,
    residual)``, code :data:`FALLBACK` where an evaluation left the diagonal path."""
    work, meta = anderson_start(y0.shape[0], m_hist)
    x = y0.copy()
    scratch = np.empty(s.shape[0] * pi.shape[0] ** 2)
    while True:
        fx, ok = diag_map(x, w, mb1, ms2, A, lam, beta, pi, s, d, scratch)
        if not ok:
            return x, FALLBACK, int(meta[IT]), meta[RES]
        x, code = anderson_next(x, fx, work, meta, nonneg, rtol, floor, max_iter, damping,
                                m_hist, blowup)
        if code != CONTINUE:
            return x, code, int(meta[IT]), meta[RES]


@kernel(cache=True, error_model="numpy")
def ed_of_gram(vhat1, H, D, d, ED) -> None:
    """``ED[g, h] = -sum_ac V_ga V_hc H[a, h, g, c] / (d D_g D_h)`` into ``ED`` (H: the Gram
    of W, :func:`_gram_in_order`; DERIVATIONS.md §9.7)."""
    K = vhat1.shape[0]
    for g in range(K):
        for h in range(K):
            acc = 0.0
            for a in range(K):
                for c in range(K):
                    acc += vhat1[g, a] * vhat1[h, c] * H[a, h, g, c]
            ED[g, h] = -acc / (d * (D[g] * D[h]))


@kernel(cache=True, error_model="numpy")
def _gram_in_order(W, K, n):
    """``H[x,y,c,e] = sum_i W_i[x,y] W_i[c,e]`` (W flat, d x K x K, each ``W_i`` symmetric),
    each sum in the order of i; K = 2: the six distinct sums in one pass (the same numbers)."""
    H = np.zeros((K, K, K, K))
    if K == 1:
        acc = 0.0
        for i in range(n):
            acc += W[i] * W[i]
        H[0, 0, 0, 0] = acc
        return H
    if K == 2:
        h0, h1, h2, h3, h4, h5 = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
        for i in range(n):
            w0, w1, w3 = W[4 * i], W[4 * i + 1], W[4 * i + 3]
            h0 += w0 * w0
            h1 += w0 * w1
            h2 += w0 * w3
            h3 += w1 * w1
            h4 += w1 * w3
            h5 += w3 * w3
        v = np.array([h0, h1, h1, h2, h1, h3, h3, h4, h1, h3, h3, h4, h2, h4, h4, h5])
        for j in range(16):
            H[j // 8, (j // 4) % 2, (j // 2) % 2, j % 2] = v[j]
        return H
    for i in range(n):
        o = i * K * K
        for x in range(K):
            for y in range(K):
                for c in range(K):
                    for e in range(K):
                        H[x, y, c, e] += W[o + x * K + y] * W[o + c * K + e]
    return H


@kernel(cache=True, error_model="numpy")
def newton(vhat1, lamg, beta, pi, s, d, tau0, ED0, has_ed, tol, max_iter, stall, full_next):
    """Kernel: the Newton loop of :meth:`asymptotics.network.bulk.GroupBulk.resolvent` (the
    chord steps with ``ED0`` while ``has_ed``, ``it < 3`` and the last step above ``full_next``,
    else a fresh ``ED`` from the Gram of W; the plain step where Newton's leaves the positive
    orthant; converged at ``tol`` or stalled below ``stall``) on the diagonal path: ``(ok, tau,
    T, W, D, fresh)``, the tau and traces of the last step, the last fresh evaluation's W (flat,
    d x K x K) and D. The Gram's sums in order (BLAS's at rounding: the Jacobian's, not the
    traces'). ``ok`` False where it does not converge or leaves the path."""
    K = pi.shape[0]
    n = s.shape[0]
    W = np.empty(n * K * K)
    Wl = np.empty(n * K * K)
    Dl = np.zeros(K)
    T = np.empty((K, K))
    ED = ED0.copy()
    fresh = False
    tau = tau0.copy()
    last = np.inf
    bp = beta * pi
    for it in range(max_iter):
        D = bp * tau
        for g in range(K):
            if not D[g] > 0.0:
                return False, tau, T, Wl, Dl, fresh
        chord = has_ed and it < 3 and last > full_next
        if not _traces(vhat1, D, s, T, W):
            return False, tau, T, Wl, Dl, fresh
        for a in range(K):
            for g in range(K):
                T[a, g] = T[a, g] / D[g]
        if not chord:  # ED[g, h] = -sum_ac V_ga V_hc <W_ah, W_gc> / (d D_g D_h)
            ed_of_gram(vhat1, _gram_in_order(W, K, n), D, d, ED)
            has_ed, fresh = True, True
            Wl[:] = W
            Dl[:] = D
        u = np.empty(K)
        for g in range(K):
            e = 0.0
            for a in range(K):
                e += vhat1[g, a] * T[a, g]
            u[g] = 1.0 / (lamg[g] + e / d)
        Jm = np.empty((K, K))
        for g in range(K):
            for h in range(K):
                Jm[g, h] = (1.0 if g == h else 0.0) + (u[g] * u[g]) * ED[g, h] * bp[h]
        r = u - tau
        step = r.copy()  # (a singular Jm: the plain step)
        if K == 1:
            if Jm[0, 0] != 0.0:
                step[0] = r[0] / Jm[0, 0]
        else:  # LU with partial pivoting
            a00, a01, a10, a11, r0, r1 = Jm[0, 0], Jm[0, 1], Jm[1, 0], Jm[1, 1], r[0], r[1]
            if abs(a10) > abs(a00):
                a00, a01, a10, a11, r0, r1 = a10, a11, a00, a01, r1, r0
            if a00 != 0.0:
                lf = a10 / a00
                u11 = a11 - lf * a01
                if u11 != 0.0:
                    step[1] = (r1 - lf * r0) / u11
                    step[0] = (r0 - a01 * step[1]) / a00
        new = tau + step
        for g in range(K):
            if not (np.isfinite(new[g]) and new[g] > 0.0):
                new = u.copy()
                break
        rel = 0.0
        for g in range(K):
            q = abs(new[g] - tau[g]) / abs(new[g])
            if np.isnan(q) or q > rel:
                rel = q
                if np.isnan(q):
                    break
        if rel <= tol or (it >= 2 and rel <= stall and rel >= 0.5 * last):
            return True, tau, T, Wl, Dl, fresh
        tau = new
        last = rel
    return False, tau, T, Wl, Dl, fresh


def diagonal_newton(bulk, vhat1: np.ndarray, lamg: np.ndarray, beta: float, pi: np.ndarray,
                    tau: np.ndarray, ED: np.ndarray | None, tol: float, max_iter: int,
                    stall: float, full_next: float) -> tuple | None:
    """The Newton loop of :meth:`GroupBulk.resolvent` from ``tau`` (``ED``: the chord's
    Jacobian, or None) by :func:`newton`: ``(tau, T)`` at its last step, with the bulk's kept
    state as its own loop leaves it (the last fresh W kept, ``_ed_last`` its numpy Jacobian);
    None where the diagonal path does not apply or the loop does not converge on it (then the
    Python loop from the same start)."""
    s = diagonal_ready(bulk)
    if s is None or not np.isfinite(beta):
        return None
    K = bulk.K
    ok, tau, T, Wl, Dl, fresh = newton(
        vhat1, lamg, float(beta), np.asarray(pi, dtype=np.float64), s, float(bulk.d),
        np.asarray(tau, dtype=np.float64), np.zeros((K, K)) if ED is None else ED,
        ED is not None, float(tol), int(max_iter), float(stall), float(full_next))
    if not ok:
        return None
    if fresh:  # (W at the last fresh step, as wkc keeps it; the Jacobian in numpy's sums)
        W = Wl.reshape(bulk.B, bulk.n, K, K)
        bulk._keep(("wkc", vhat1.tobytes(), Dl.tobytes()), (W, None, None))
        bulk._ed_last = bulk._ed_gram(vhat1, bulk._gram(W), Dl)
    return tau, T


def diagonal_ready(bulk) -> np.ndarray | None:
    """The flat eigenvalues ``s`` of ``bulk`` (a :class:`asymptotics.network.bulk.GroupBulk`)
    where :func:`fixed_point` applies (every Sig_g invertible, every group in the base class,
    K <= 2) and runs compiled (:func:`asymptotics.core.coldstart.kernel_ready`: else the Python
    map, while it compiles); else None."""
    eig = getattr(bulk, "_eig", None)
    if not DIAGONAL or eig is None or eig[3] != bulk.K or not eig[5] or bulk.K > 2:
        return None
    s = eig[0].reshape(-1)
    if bulk.K in _READY:
        return s
    K = bulk.K
    one = np.ones(1)
    args = (np.ones(K * K + K), np.zeros(0, dtype=np.int64), one, np.ones((1, K)),
            np.ones((1, K)), 1.0, 1.0, 1.0, np.ones(K), s[:1], 1.0, 1e-10, 1e-3, 1, 0.5, 1)
    ready = coldstart.kernel_ready(fixed_point, args, lambda: fixed_point(*args),
                                   compile_mode_ready=True)
    nargs = (np.eye(K), np.ones(K), 1.0, np.ones(K), s[:1], 1.0, np.ones(K), np.eye(K), False,
             1e-14, 1, 1e-11, 1e-8)
    ready = ready and coldstart.kernel_ready(newton, nargs, lambda: newton(*nargs),
                                             compile_mode_ready=True)
    if ready:
        _READY.add(bulk.K)
    return s if ready else None


_READY: set = set()  # (the K whose kernels are compiled: not asked again)


def solve_diagonal(bulk, vargs: tuple, y0: np.ndarray, config, nonneg: tuple[int, ...]):
    """:func:`asymptotics.network.bulk.fixed_point` of the bulk's ``(V1, tau)`` map (``vargs``:
    ``(w, mub1, mus2, A, lam, beta, pi)``) from ``y0`` by :func:`fixed_point`: the same
    :class:`~asymptotics.equations.solver.SolverResult`, bit for bit; None where the diagonal
    path does not apply or an evaluation leaves it (then the Python map from ``y0``)."""
    s = diagonal_ready(bulk)
    if s is None:
        return None
    w, mb1, ms2, A, lam, beta, pi = vargs
    x, code, n_it, res = fixed_point(np.array(y0, dtype=np.float64),
                                     np.array(nonneg, dtype=np.int64), w, mb1, ms2, float(A),
                                     float(lam), float(beta), np.asarray(pi, dtype=np.float64),
                                     s, float(bulk.d), config.rtol, config.scale_floor,
                                     config.max_iter, config.damping, config.anderson, 1e12)
    if int(code) == FALLBACK:
        return None
    st = Status(int(code))
    return SolverResult(x, st == Status.CONVERGED, st, int(n_it), float(res), ())
