"""The chord to the full model along a line of Re z for
:class:`~asymptotics.spectra.traces.net_chord.ChordPolish` (docs/THEORY.md §16.8), with the
Jacobian difference carried along the line (:data:`JAC_DIFF`).

The chord's Jacobian is the commuting model's (the same directions without the off-diagonal
parts): its error against the full model's makes the chord converge linearly (~4.5 full-model
evaluations a point from the interpolated start). The difference ``Jf - Jc`` of the two models'
Jacobians at the same unknowns is smooth along Re z (as the correction of the solution is): it
is measured on a few points of the line (the full model's difference quotients at its
converged solution, ``sym_jacobian`` of :mod:`~asymptotics.spectra.traces.net_chord`) and
interpolated linearly to the others, whose chord then starts from ``Jc + (Jf - Jc)``
interpolated (nearly the full model's Jacobian: ~3 evaluations a point). The chord's steps
and its tolerance are unchanged: the solutions are the full model's to the solver's tolerance
either way."""

from __future__ import annotations

import numpy as np

from asymptotics.spectra.law import broyden_inverse

#: the chord's Jacobian on the line: the commuting model's plus the interpolated difference of
#: the two models' Jacobians (False: the commuting model's, the former chord)
JAC_DIFF = True
#: the full model's Jacobian by difference quotients on every JAC_EVERY-th point of the chord's
#: subset (the subset's last point too); the subset's other points start from the corrections
#: interpolated from those, the rest from the whole subset's
JAC_EVERY = 4
#: the difference is measured only where the chord on the first points took more than this
#: many evaluations a point (fewer: the commuting model's Jacobian is close enough, and the
#: line takes the former chord)
JAC_PAYS = 3.0
#: from this many points on a line (fewer: the commuting model's Jacobian alone; the full
#: model's difference quotients, ~10 evaluations a point measured, pay over ~30 points each)
JAC_MIN = 128
#: a point the chord left (not converged, or m moved) between two converged points of its line
#: takes Newton's steps on the full model (its difference quotients each step) from their
#: solutions interpolated linearly, before the commuting model's whole path (False: the path,
#: then the full model's); at most NEIGHBOUR_STEPS steps
NEIGHBOURS = True
NEIGHBOUR_STEPS = 6
#: those points' steps after the first reuse its Jacobian (chord steps: one evaluation of the
#: full model a step, not K + K(K+1)/2 + 1), each step at most NEIGHBOUR_RATE times the one
#: before, until a step is below NEIGHBOUR_TIGHT times the solver's tolerance (the error after
#: it is then that step times the rate, far below the tolerance: Newton's root to rounding);
#: at most NEIGHBOUR_CHORD steps; the points where it fails take Newton's steps (False: Newton's
#: steps alone, the reference)
NEIGHBOUR_FIXED = True
NEIGHBOUR_RATE = 0.25
NEIGHBOUR_TIGHT = 0.1
NEIGHBOUR_CHORD = 12
#: the points where those chord steps fail take Broyden's rank-one updates of the same inverse
#: Jacobian from the same start (one evaluation a step, superlinear; measured near a top edge
#: from a run of 12 left points: 8-11 steps, all converged, where Newton's steps took 6 Jacobians
#: and left one), at most NEIGHBOUR_BROYDEN steps, given up where a step above NEIGHBOUR_FLOOR
#: (relative) has not shrunk twice; done at a step below NEIGHBOUR_TIGHT times the tolerance
#: and NEIGHBOUR_RATE times the one before; Newton's steps last (False: Newton's steps)
NEIGHBOUR_QUASI = True
NEIGHBOUR_BROYDEN = 24
NEIGHBOUR_FLOOR = 1e-8


def interp_rows(xq: np.ndarray, xk: np.ndarray, Yk: np.ndarray) -> np.ndarray:
    """The rows ``Yk`` (any trailing shape) at the increasing points ``xk`` interpolated
    linearly to ``xq`` (held constant past the ends)."""
    j = np.clip(np.searchsorted(xk, xq) - 1, 0, xk.size - 2)
    w = np.clip((xq - xk[j]) / (xk[j + 1] - xk[j]), 0.0, 1.0)
    w = w.reshape((-1,) + (1,) * (Yk.ndim - 1))
    return Yk[j] * (1.0 - w) + Yk[j + 1] * w


def _inverse(J: np.ndarray) -> np.ndarray | None:
    """The inverses of the stack ``J`` (None: one is singular or not finite)."""
    if not np.all(np.isfinite(J)):
        return None
    try:
        H = np.linalg.inv(J)
    except np.linalg.LinAlgError:
        return None
    return H if np.all(np.isfinite(H)) else None


def full_jacobian(residual, x: np.ndarray, z: np.ndarray, value: bool = False):
    """``sym_jacobian`` of :mod:`~asymptotics.spectra.traces.net_chord` (the same difference
    quotients: K + K(K+1)/2 columns, those of ``V1_ba`` from ``V1_ab``) with the point and its
    steps in one call of ``residual`` (few points: the calls' overhead dominates); ``value``:
    (J, the residual at x)."""
    n, q = x.shape
    K = int(round((-1.0 + (1.0 + 4.0 * q) ** 0.5) / 2.0))
    cols = list(range(K)) + [K + a * K + b for a in range(K) for b in range(a, K)]
    h = 1e-7 * (1.0 + np.abs(x[:, cols]))  # (n, c)
    X = np.repeat(x[None], len(cols) + 1, axis=0)  # (c + 1, n, q): the point, then its steps
    for i, j in enumerate(cols):
        X[i + 1, :, j] += h[:, i]
    F = residual(X.reshape(-1, q), np.tile(z, len(cols) + 1)).reshape(len(cols) + 1, n, q)
    J = np.empty((n, q, q), dtype=np.complex128)
    for i, j in enumerate(cols):
        J[:, :, j] = (F[i + 1] - F[0]) / h[:, i, None]
        mirror_column(J, j, K)
    return (J, F[0]) if value else J


def mirror_column(J: np.ndarray, j: int, K: int) -> None:
    """Column ``V1_ba`` of a V-part Jacobian from column ``j`` (``V1_ab``, a < b), in place: the
    residual sees V1 through ``V1 . mub1 mub1^T`` and in ``e2 = V1 - Vb``, so the two columns
    differ by that identity only (nothing for tau's columns and the diagonal)."""
    a, b = divmod(j - K, K)
    if j >= K and a != b:
        jt = K + b * K + a
        J[:, :, jt] = J[:, :, j]
        J[:, j, jt] -= 1.0
        J[:, jt, jt] += 1.0


def line_chord(polish, x: np.ndarray, z: np.ndarray, sub: np.ndarray, rest: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray] | None:
    """The chord of ``polish`` (a :class:`~asymptotics.spectra.traces.net_chord.ChordPolish`)
    from the commuting model's solutions ``x`` to the full model: on every :data:`JAC_EVERY`-th
    point of ``sub`` (indices sorted by Re z, its last included) from ``x`` with the commuting
    model's Jacobian, the full model's Jacobian there; then the other points of ``sub`` and
    last ``rest`` from ``x`` plus the corrections interpolated from the points solved, with the
    commuting model's Jacobian at that start plus the interpolated Jacobian difference. The
    solutions and converged flags (the caller redoes the points not converged), or None where
    fewer than two points of the first set converge (the caller's plain subset chord)."""
    full, medium = polish.residual, polish.medium
    mask = np.zeros(sub.size, dtype=bool)
    mask[::JAC_EVERY] = True
    mask[-1] = True
    first, second = sub[mask], sub[~mask]
    out, ok = x.copy(), np.zeros(z.shape[0], dtype=bool)
    seen: list = []

    def counted(xc: np.ndarray, zc: np.ndarray) -> np.ndarray:
        seen.append(xc.shape[0])
        return full(xc, zc)

    out[first], ok[first] = polish._chord(x[first], z[first], counted, medium)
    good = first[ok[first]]
    xr = z.real
    if good.size < 2 or not np.all(np.diff(xr[good]) > 0.0):
        return None
    pays = sum(seen) > JAC_PAYS * first.size  # (else the commuting Jacobian is close enough)
    if pays:
        xg, zg = out[good], z[good]
        dJ = full_jacobian(full, xg, zg) - medium.jacobian(xg, zg)
    xj = xr[good]
    for pts in (second, rest):
        if pts.size == 0:
            continue
        if not pays:  # (the former chord: the subset from x, the rest interpolated)
            x0 = x[pts] if pts is second else None
        known = np.sort(np.nonzero(ok)[0])
        known = known[np.argsort(xr[known], kind="stable")]
        if known.size < 2 or not np.all(np.diff(xr[known]) > 0.0):
            known = good
        if pays or pts is rest:
            x0 = x[pts] + interp_rows(xr[pts], xr[known], out[known] - x[known])
        H = (_inverse(medium.jacobian(x0, z[pts]) + interp_rows(xr[pts], xj, dJ)) if pays
             else None)
        out[pts], ok[pts] = polish._chord(x0, z[pts], full, medium, Jinv=H)
    return out, ok


def fixed_chord(residual, x: np.ndarray, z: np.ndarray, tol: float, start: list | None = None
                ) -> np.ndarray:
    """:data:`NEIGHBOUR_FIXED`: chord steps on ``residual`` from the rows ``x`` (updated in
    place) with the full model's Jacobian at ``x`` (:func:`full_jacobian`), each step at most
    :data:`NEIGHBOUR_RATE` times the one before, to a step below :data:`NEIGHBOUR_TIGHT` ``tol``
    (relative, as Newton's); the converged flags. ``start``: a list given gets the inverse
    Jacobian and the residual at the start (:func:`broyden_chord`'s)."""
    ok = np.zeros(z.shape[0], dtype=bool)
    J, F = full_jacobian(residual, x, z, value=True)
    H = _inverse(J)
    if start is not None:
        start.extend([H, F.copy()])
    if H is None:
        return ok
    act, last = np.arange(z.shape[0]), np.full(z.shape[0], np.inf)
    for k in range(NEIGHBOUR_CHORD):
        dx = -np.einsum("xij,xj->xi", H[act], F)
        fin = np.all(np.isfinite(dx), axis=1)
        dx[~fin] = 0.0
        x[act] += dx
        size = np.max(np.abs(dx), axis=1) / (1.0 + np.max(np.abs(x[act]), axis=1))
        go = fin & (size <= NEIGHBOUR_RATE * last[act])
        done = go & (size < NEIGHBOUR_TIGHT * tol)
        ok[act[done]] = True
        last[act] = size
        act = act[go & ~done]
        if act.size == 0 or k == NEIGHBOUR_CHORD - 1:
            break
        F = residual(x[act], z[act])
    return ok


def broyden_chord(residual, x: np.ndarray, z: np.ndarray, tol: float, H: np.ndarray,
                  F: np.ndarray) -> np.ndarray:
    """:data:`NEIGHBOUR_QUASI`: Broyden's steps on ``residual`` from the rows ``x`` (updated in
    place) with the inverse Jacobians ``H`` and residuals ``F`` there, to a step below
    :data:`NEIGHBOUR_TIGHT` ``tol`` and :data:`NEIGHBOUR_RATE` times the one before (the error
    left far below the tolerance: Newton's root to rounding); a point whose step above
    :data:`NEIGHBOUR_FLOOR` has not shrunk at two steps is given up. The converged flags."""
    n = z.shape[0]
    ok = np.zeros(n, dtype=bool)
    H = H.copy()
    act, last = np.arange(n), np.full(n, np.inf)
    grown = np.zeros(n, dtype=np.int64)
    for k in range(NEIGHBOUR_BROYDEN):
        dx = -np.einsum("xij,xj->xi", H[act], F)
        fin = np.all(np.isfinite(dx), axis=1)
        dx[~fin] = 0.0
        x[act] += dx
        size = np.max(np.abs(dx), axis=1) / (1.0 + np.max(np.abs(x[act]), axis=1))
        done = fin & (size < NEIGHBOUR_TIGHT * tol) & (size <= NEIGHBOUR_RATE * last[act])
        ok[act[done]] = True
        grown[act] += (size >= last[act]) & (size > NEIGHBOUR_FLOOR)
        last[act] = size
        keep = fin & ~done & (grown[act] < 2)
        act, dx, F = act[keep], dx[keep], F[keep]
        if act.size == 0 or k == NEIGHBOUR_BROYDEN - 1:
            break
        Fn = residual(x[act], z[act])
        H[act] = broyden_inverse(H[act], dx, Fn - F, np.all(np.isfinite(Fn), axis=1))
        F = Fn
    return ok


def neighbour_chord(polish, x: np.ndarray, ok: np.ndarray, z: np.ndarray, bad: np.ndarray
                    ) -> np.ndarray:
    """:data:`NEIGHBOURS`: the points ``bad`` of the line ``z`` (one Im z) between two converged
    points (``ok``) by chord steps on the full model of ``polish`` from the Jacobian at the
    start (:func:`fixed_chord`), where they fail by Newton's steps (each step's Jacobian by
    :func:`full_jacobian`, to the solver's tolerance on the step: quadratic convergence, the
    error after it far below) from the linear interpolation of the nearest converged solutions
    on either side along Re z; a point is taken where it converges with m within
    ``|m_left - m_right|`` of the interpolated m (the root next to its neighbours', not another
    branch's). ``x``, ``ok`` updated in place; the points left."""
    xr = z.real
    good = np.nonzero(ok)[0]
    good = good[np.argsort(xr[good], kind="stable")]
    if not NEIGHBOURS or bad.size == 0 or good.size < 2 or float(np.ptp(z.imag)) > 0.0 \
            or not np.all(np.diff(xr[good]) > 0.0):
        return bad
    j = np.searchsorted(xr[good], xr[bad])
    inner = (j > 0) & (j < good.size)
    pts = bad[inner]
    if pts.size == 0:
        return bad
    lo, hi = good[j[inner] - 1], good[j[inner]]
    w = ((xr[pts] - xr[lo]) / (xr[hi] - xr[lo]))[:, None]
    x0 = x[lo] * (1.0 - w) + x[hi] * w
    xs, oks, act = x0.copy(), np.zeros(pts.size, dtype=bool), np.arange(pts.size)
    if NEIGHBOUR_FIXED:  # (chord steps from the first Jacobian; Newton's where they fail)
        first: list = []
        oks = fixed_chord(polish.residual, xs, z[pts], polish.tol, first)
        xs[~oks] = x0[~oks]
        act = np.nonzero(~oks)[0]
        if NEIGHBOUR_QUASI and act.size and first[0] is not None:  # (Broyden's steps next)
            xq = x0[act]
            okq = broyden_chord(polish.residual, xq, z[pts[act]], polish.tol, first[0][act],
                                first[1][act])
            xs[act[okq]], oks[act[okq]] = xq[okq], True
            act = act[~okq]
    for _ in range(NEIGHBOUR_STEPS if act.size else 0):
        J, F = full_jacobian(polish.residual, xs[act], z[pts[act]], value=True)
        try:
            dx = np.linalg.solve(J, -F[..., None])[..., 0]
        except np.linalg.LinAlgError:
            break
        fin = np.all(np.isfinite(dx), axis=1)
        xs[act[fin]] += dx[fin]
        size = np.max(np.abs(dx), axis=1) / (1.0 + np.max(np.abs(xs[act]), axis=1))
        oks[act[fin & (size < polish.tol)]] = True
        act = act[fin & ~(size < polish.tol)]
        if act.size == 0:
            break
    m, m0 = polish.stieltjes(xs), polish.stieltjes(x0)
    spread = np.abs(polish.stieltjes(x[hi]) - polish.stieltjes(x[lo]))
    oks &= np.isfinite(m) & (m.imag >= -1e-9 * np.abs(m)) & (np.abs(m - m0) <= spread)
    x[pts[oks]], ok[pts[oks]] = xs[oks], True
    return np.nonzero(~ok)[0]
