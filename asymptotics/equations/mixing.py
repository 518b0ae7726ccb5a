"""The one Anderson(m) iteration of the theory's compiled solvers (docs/THEORY.md §5 and §10.5).

Every compiled fixed-point solve (the one-spike (V1, V2) subsystem of
``equations.solver_kernels``, the K-group (V1, V2) subsystem of ``spiked.anderson``, which the
network's K-group route also calls) iterates x -> F(x) through :func:`anderson_next`, by reverse
communication: the caller evaluates its map and nothing else,

    work, meta = anderson_start(n, m_hist)
    x = x0.copy()
    while True:
        fx = F(x)
        x, code = anderson_next(x, fx, work, meta, nonneg, rtol, floor, max_iter, damping,
                                m_hist, blowup)
        if code != CONTINUE:
            break          # x: the answer; meta[IT], meta[RES]: iterations and residual

and this module holds the whole policy, once: the algorithm of ``equations.solver.solve`` (the
Python reference) verbatim. Damped Picard x + damping g (g = F(x) - x) with Anderson(m_hist)
mixing over the last m_hist + 1 iterates, the least-squares problem scaled by
max(|x_i|, floor) (rcond 1e-12); the relative residual max_i |F(x)_i - x_i| / max(|x_i|, floor)
<= rtol to stop (the answer is then F(x)); an F(x) that is non-finite or above ``blowup`` ends
the solve (status non-finite); an accelerated step that is non-finite, leaves ``nonneg`` >= 0,
or whose residual exceeds ten times the best seen is rejected, the history reset to its last
entry and the damped step taken; the ``nonneg`` components are clipped at 0. Status codes are
those of ``solver.Status``; :data:`CONTINUE` asks for F at the returned x.

The maps stay with their solvers (a numba kernel cannot take another kernel as an argument in
the cold-start modes' interpreted runs and queue), so one Anderson kernel serves maps of any
signature at no cost per iteration.
"""

from __future__ import annotations

import math

import numpy as np

from asymptotics.core.coldstart import kernel
from asymptotics.equations.solver import Status

# the status codes of Status (the one list), as plain ints the kernels compile as constants
CONVERGED, MAX_ITER, NON_FINITE = (
    int(Status.CONVERGED), int(Status.MAX_ITER), int(Status.NON_FINITE))
#: the code of :func:`anderson_next` asking the caller for F at the x it returns
CONTINUE = -1
#: entries of ``meta``: history length, iterations, phase, best residual, last residual
NH, IT, PHASE, BEST, RES = 0, 1, 2, 3, 4
#: phases: x is an accepted iterate / an accelerated candidate to check / a damped step
FRESH, ACCELERATED, PLAIN = 0.0, 1.0, 2.0


@kernel(cache=True, error_model="numpy")
def finite_below(x: np.ndarray, blowup: float) -> bool:
    """Kernel: every x_i finite and |x_i| < blowup."""
    for i in range(x.shape[0]):
        if not math.isfinite(x[i]) or abs(x[i]) >= blowup:
            return False
    return True


@kernel(cache=True, error_model="numpy")
def relative_change(x: np.ndarray, fx: np.ndarray, floor: float) -> float:
    """Kernel: max_i |fx_i - x_i| / max(|x_i|, floor), NaN if a term is NaN
    (``solver.relative_residual``)."""
    out = 0.0
    for i in range(x.shape[0]):
        r = abs(fx[i] - x[i]) / max(abs(x[i]), floor)
        if not r <= out:  # also propagates NaN
            out = r
    return out


@kernel(cache=True, error_model="numpy")
def anderson_start(n: int, m_hist: int) -> tuple:
    """Kernel: the workspace of an Anderson(m_hist) solve of n unknowns: ``work`` (rows
    0..m_hist+1 the iterates, m_hist+2..2 m_hist+3 their residuals) and ``meta`` (:data:`NH`,
    :data:`IT`, :data:`PHASE`, :data:`BEST`, :data:`RES`)."""
    work = np.zeros((2 * m_hist + 4, n))
    meta = np.zeros(5)
    meta[PHASE] = FRESH
    meta[BEST] = np.inf
    meta[RES] = np.inf
    return work, meta


@kernel(cache=True, error_model="numpy")
def _reset(work: np.ndarray, meta: np.ndarray, m_hist: int) -> None:
    """Keep only the last (iterate, residual) of the history."""
    nh = int(meta[NH])
    work[0] = work[nh - 1]
    work[m_hist + 2] = work[m_hist + 2 + nh - 1]
    meta[NH] = 1.0


@kernel(cache=True, error_model="numpy")
def anderson_next(x: np.ndarray, fx: np.ndarray, work: np.ndarray, meta: np.ndarray,
                  nonneg: np.ndarray, rtol: float, floor: float, max_iter: int, damping: float,
                  m_hist: int, blowup: float) -> tuple:
    """Kernel: one step of the iteration of the module docstring, given fx = F(x) at the x the
    previous step returned (or x0). Returns (x, code): code :data:`CONTINUE` asks for F at x;
    any other code ends the solve with x its answer, ``meta[IT]`` the iterations and
    ``meta[RES]`` the last residual (inf if non-finite)."""
    n = x.shape[0]
    mh2 = m_hist + 2
    if meta[PHASE] == ACCELERATED:
        if not finite_below(fx, blowup) or relative_change(x, fx, floor) > 10.0 * meta[BEST]:
            _reset(work, meta, m_hist)  # the damped step of the proposing (x, g), recomputed
            x_new = work[0] + damping * work[m_hist + 2]
            for i in nonneg:
                if x_new[i] < 0.0:
                    x_new[i] = 0.0
            meta[PHASE] = PLAIN
            return x_new, CONTINUE
    meta[PHASE] = FRESH
    it = int(meta[IT])
    if it >= max_iter:
        return x, MAX_ITER
    it += 1
    meta[IT] = it
    if not finite_below(fx, blowup):
        meta[RES] = np.inf
        return x, NON_FINITE
    g = fx - x
    res = relative_change(x, fx, floor)
    meta[RES] = res
    if res <= rtol:
        return fx, CONVERGED
    meta[BEST] = min(meta[BEST], res)
    # push (x, g) into the history (at most m_hist + 1 entries)
    nh = int(meta[NH])
    if nh == m_hist + 1:
        for k in range(nh - 1):
            work[k] = work[k + 1]
            work[mh2 + k] = work[mh2 + k + 1]
        nh -= 1
    work[nh] = x
    work[mh2 + nh] = g
    nh += 1
    meta[NH] = nh
    x_new = x + damping * g
    accelerated = False
    if m_hist > 0 and nh >= 2:
        k = nh - 1
        dX = np.empty((n, k))
        dG = np.empty((n, k))
        good = True
        for j in range(k):
            for i in range(n):
                a = work[j + 1, i] - work[j, i]
                b = work[mh2 + j + 1, i] - work[mh2 + j, i]
                dX[i, j] = a
                dG[i, j] = b
                if not (math.isfinite(a) and math.isfinite(b) and abs(a) < blowup
                        and abs(b) < blowup):
                    good = False
        if good:
            Ms = np.empty((n, k))
            rhs = np.empty(n)
            for i in range(n):
                scale = max(abs(x[i]), floor)
                rhs[i] = g[i] / scale
                for j in range(k):
                    Ms[i, j] = dG[i, j] / scale
            gam = np.linalg.lstsq(Ms, rhs, 1e-12)[0]
            cand = x + damping * g - (dX + damping * dG) @ gam
            inside = finite_below(cand, blowup)
            for i in nonneg:
                if not cand[i] >= 0.0:
                    inside = False
            if inside:
                x_new = cand
                accelerated = True
        if not accelerated:
            _reset(work, meta, m_hist)
    for i in nonneg:
        if x_new[i] < 0.0:
            x_new[i] = 0.0
    meta[PHASE] = ACCELERATED if accelerated else PLAIN
    return x_new, CONTINUE
