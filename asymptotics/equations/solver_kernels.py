"""The whole solve of one point (and of a curve) as numba kernels: the compiled solver.

Same algorithm and result semantics as the Python orchestration of ``asymptotics.equations.solver``
+
``asymptotics.api.risk`` (kept callable as ``engine="python"`` for comparison, docs/THEORY.md §5):

1. damped Picard with Anderson(m) mixing on the closed (V1, V2) subsystem (``v_update``) by the
   one Anderson kernel of ``equations.mixing`` (the K-group solver's too), with the safeguards of
   ``solver.solve`` (an accelerated step that is non-finite, negative, or raises the residual
   tenfold over the best seen is rejected and the history reset), relative residual
   ``max_i |F(x)_i - x_i| / max(|x_i|, scale_floor)`` at ``rtol / 10``;
2. fall-backs: a failed warm start is retried cold, then with damping 0.2;
3. three polishing contraction steps, the exact completion of the state (``complete_state``), the
   physical-domain check (q, V >= 0, finite) and the residual of the literal seven-variable map
   (``fixed_point_map``) at ``rtol``;
4. conjugates and the risk (``conjugates``).

A curve kernel runs the points along alpha with warm starts and, on a failure, the halving
continuation from the last converged alpha. Status codes are those of ``solver.Status``.
"""

from __future__ import annotations

import math

import numpy as np

from asymptotics.core.coldstart import kernel
from asymptotics.equations.fixed_point import (
    HAT_NAMES,
    complete_state,
    conjugates,
    fixed_point_map,
    v_update,
)
from asymptotics.equations.mixing import CONTINUE, IT, RES, anderson_next, anderson_start
from asymptotics.equations.mixing import relative_change as _relres
from asymptotics.equations.solver import Status

# the status codes of Status (the one list), as plain ints the kernels compile as constants
CONVERGED = int(Status.CONVERGED)
MAX_ITER = int(Status.MAX_ITER)
NON_FINITE = int(Status.NON_FINITE)
OUT_OF_DOMAIN = int(Status.OUT_OF_DOMAIN)
#: column of the risk in the ``hats`` arrays the kernels return (after the six conjugates)
RISK = len(HAT_NAMES)
V_COLD0 = 0.5
V_COLD1 = 0.5


@kernel(cache=True, error_model="numpy")
def _vmap(v, w, mu1, ms2, A, lam, kind, beta, c, rho, F, H, G, p_inv, omega):
    return v_update(v, w, mu1, ms2, A, lam, kind, beta, c, rho, F, H, G, p_inv, omega)


@kernel(cache=True, error_model="numpy")
def anderson_v(v0, w, mu1, ms2, A, lam, kind, beta, c, rho, F, H, G, p_inv, omega,
               rtol, floor, max_iter, damping, m_hist, blowup):
    """Kernel: (V1, V2) = v_update(V1, V2) from v0 by the one Anderson iteration
    (``equations.mixing``), V >= 0. Returns (V, status, n_iter, residual)."""
    work, meta = anderson_start(np.int64(2), m_hist)  # (int64, not a literal 2: one signature)
    nonneg = np.arange(2)
    x = v0.copy()
    while True:
        fx = _vmap(x, w, mu1, ms2, A, lam, kind, beta, c, rho, F, H, G, p_inv, omega)
        x, code = anderson_next(x, fx, work, meta, nonneg, rtol, floor, max_iter, damping,
                                m_hist, blowup)
        if code != CONTINUE:
            return x, code, int(meta[IT]), meta[RES]


@kernel(cache=True, error_model="numpy")
def solve_point_kernel(x0, has_x0, w, kap, mu0, mu1, ms2, h, h1, h2, A, lam, delta,
                       kind, beta, c, rho, F, H, G, p_inv, omega, rtol, floor, max_iter, damping,
                       m_hist):
    """Kernel: one point. Returns (state[7], hat[7] = conjugates + risk, status, n_iter,
    residual)."""
    blowup = 1e12
    vr = rtol / 10.0
    cold = np.array([V_COLD0, V_COLD1])
    start = x0[2:4].copy() if has_x0 else cold.copy()
    v, status, n_iter, _ = anderson_v(start, w, mu1, ms2, A, lam, kind, beta, c, rho, F, H, G,
                                      p_inv, omega, vr, floor, max_iter, damping, m_hist, blowup)
    if status != CONVERGED and has_x0:
        v2, s2, n2, _ = anderson_v(cold.copy(), w, mu1, ms2, A, lam, kind, beta, c, rho, F, H,
                                   G, p_inv, omega, vr, floor, max_iter, damping, m_hist, blowup)
        if s2 == CONVERGED:
            v, status, n_iter = v2, s2, n2
    if status != CONVERGED and damping > 0.2:
        v3, s3, n3, _ = anderson_v(cold.copy(), w, mu1, ms2, A, lam, kind, beta, c, rho, F, H,
                                   G, p_inv, omega, vr, floor, max_iter, 0.2, m_hist, blowup)
        if s3 == CONVERGED:
            v, status, n_iter = v3, s3, n3
    if status == CONVERGED:
        for _ in range(3):
            v_next = _vmap(v, w, mu1, ms2, A, lam, kind, beta, c, rho, F, H, G, p_inv, omega)
            fin = math.isfinite(v_next[0]) and math.isfinite(v_next[1])
            if not fin:
                break
            v = v_next
    x = complete_state(v, w, kap, mu0, mu1, ms2, h, h1, h2, A, lam, delta, kind, beta, c,
                       rho, F, H, G, p_inv, omega)
    residual = np.inf
    if status == CONVERGED:
        bad = False
        for i in range(7):
            if not math.isfinite(x[i]):
                bad = True
        for i in range(4):
            if x[i] < 0.0:
                bad = True
        if bad:
            status = OUT_OF_DOMAIN
        else:
            fx = fixed_point_map(x, w, kap, mu0, mu1, ms2, h, h1, h2, A, lam, delta, kind, beta,
                                 c, rho, F, H, G, p_inv, omega)
            residual = _relres(x, fx, floor)
            if not residual <= rtol:
                status = MAX_ITER
    hat = conjugates(x, w, kap, mu0, mu1, ms2, h, h1, h2, A, delta)
    return x, hat, status, n_iter, residual


@kernel(cache=True, error_model="numpy", nogil=True)
def solve_path_kernel(As, lams, w, kap, mu0, mu1, ms2, h, h1, h2, delta,
                      kind, beta, c, rho, F, H, G, p_inv, omega, rtol, floor, max_iter, damping,
                      m_hist):
    """Kernel: the points (A_i = alpha_i / beta, lam_i) in the given order, warm starts from the
    last converged point and, on a failure, the halving continuation (fractions 1/2, 3/4, 7/8, 1
    of the way from the last converged point, linear in A and lam).
    Returns (states[n, 7], hats[n, 7], status[n], n_iter[n], residual[n])."""
    n = As.shape[0]
    states = np.empty((n, 7))
    hats = np.empty((n, 7))
    stat = np.empty(n, dtype=np.int64)
    iters = np.empty(n, dtype=np.int64)
    resid = np.empty(n)
    x_prev = np.zeros(7)
    # a bool that is not a compile-time constant, and passed as the walk's flag below (where it
    # is True): solve_point_kernel then compiles once (bool), not also for Literal False/True
    have_prev = n < 0
    a_prev = 0.0
    l_prev = 0.0
    for i in range(n):
        a = As[i]
        lam = lams[i]
        x, hat, st, it, rs = solve_point_kernel(
            x_prev, have_prev, w, kap, mu0, mu1, ms2, h, h1, h2, a, lam, delta,
            kind, beta, c, rho, F, H, G, p_inv, omega, rtol, floor, max_iter, damping, m_hist)
        if st != CONVERGED and have_prev:
            x_walk = x_prev.copy()
            for frac in (0.5, 0.75, 0.875, 1.0):
                am = a_prev + frac * (a - a_prev)
                lm = l_prev + frac * (lam - l_prev)
                xm, hm, sm, im, rm = solve_point_kernel(
                    x_walk, have_prev, w, kap, mu0, mu1, ms2, h, h1, h2, am, lm, delta,
                    kind, beta, c, rho, F, H, G, p_inv, omega, rtol, floor, max_iter, damping,
                    m_hist)
                if sm != CONVERGED:
                    break
                x_walk = xm.copy()
                if frac == 1.0:
                    x, hat, st, it, rs = xm, hm, sm, im, rm
        states[i] = x
        hats[i] = hat
        stat[i] = st
        iters[i] = it
        resid[i] = rs
        if st == CONVERGED:
            x_prev = x.copy()
            have_prev = True
            a_prev = a
            l_prev = lam
    return states, hats, stat, iters, resid
