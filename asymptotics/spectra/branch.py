"""The spectral fixed point on the real axis outside the bulk (docs/THEORY.md §16.10): its real
solutions, continued along the physical branch, and the bulk's edges as the folds of that
branch.

Outside the support the physical solution x(lam) at real lam is real (the limit Im z -> 0 of the
path of :class:`~asymptotics.spectra.law.Solver`) and analytic in lam. Parametrised by
m = stieltjes(x), the branch is smooth through an edge, where lam(m) has an extremum:
dlam/dm = 1/m'(lam) > 0 outside the support and -> 0 at an edge (a minimum of lam(m) at an
upper edge, a maximum at a lower one), where the Jacobian of F in x alone is singular. So

* a point of the branch solves ``F(x, lam) = 0, stieltjes(x) = m`` in the real unknowns
  ``(x, lam)`` by Newton (well conditioned through the fold);
* an edge is the root of ``g(m) = dlam/dm`` (the last entry of the tangent ``J^-1 e``), found
  by a secant on g from a point outside the support, bracketed and refined by the Illinois
  rule; the edge is ``lam - g^2/(2 g')`` at the last point (the quadratic model of the fold);
* a point above the top edge (the outliers' equations) is Newton at fixed lam started from the
  nearest point of the branch on its tangent.

Every Jacobian is the solver's exact one (``real_jacobian``, the sRF features' compiled V-part)
or a forward difference in one batched call of the solver's residual.
"""

from __future__ import annotations

import math

import numpy as np

TOL = 1e-12  # Newton's relative step (as the path's NEWTON_TOL)
NEWTON_MAX = 30
FOLD_STEPS = 40  # points of the branch a fold may take
WALK_STEPS = 6  # points of the walk from a grid point toward a fold (before its bracket)
FOLD_TOL = 1e-15  # the quadratic model's distance to the fold, relative to lam, at the end
H_FD = 1e-7  # forward differences: h = H_FD (1 + |u|)


def _eval(solver, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``G = (Re F(x, lam), stieltjes(x))`` at ``u = (x, lam)`` (real) and its Jacobian in u
    (q + 1 square): the solver's exact one (``solver.real_jacobian(u)``, where it has one and
    it runs compiled), else forward differences (one residual call of q + 2 rows)."""
    exact = getattr(solver, "real_jacobian", None)
    out = exact(u) if exact is not None else None
    if out is not None:
        return out
    q = u.size - 1
    h = H_FD * (1.0 + np.abs(u))
    U = np.tile(u, (q + 2, 1))
    idx = np.arange(q + 1)
    U[1 + idx, idx] += h
    X = U[:, :q].astype(np.complex128)
    F = solver.residual(X, U[:, q].astype(np.complex128))
    S = solver.stieltjes(X)
    G = np.concatenate([np.real(F), np.real(S)[:, None]], axis=1)
    return G[0], ((G[1:] - G[0]) / h[:, None]).T


def _newton(solver, u: np.ndarray, m: float | None = None
            ) -> tuple[np.ndarray, np.ndarray | None, bool]:
    """Newton on ``F(x, lam) = 0`` at fixed lam (``m`` None) or with ``stieltjes(x) = m`` (lam
    free). Returns (u, the Jacobian at the last step's start, converged)."""
    q = u.size - 1
    J = None
    last = math.inf
    for _ in range(NEWTON_MAX):
        G, J = _eval(solver, u)
        if not (np.isfinite(G).all() and np.isfinite(J).all()):
            return u, None, False
        try:
            if m is None:
                du = np.append(np.linalg.solve(J[:q, :q], -G[:q]), 0.0)
            else:
                G[q] -= m
                du = np.linalg.solve(J, -G)
        except np.linalg.LinAlgError:
            return u, None, False
        size = float(np.abs(du[:q]).max() / (1.0 + np.abs(u[:q]).max()))
        if not (np.isfinite(du).all() and size < max(2.0 * last, 1e-8)):
            return u, None, False  # (diverging: a step larger than twice the last)
        last = size
        u = u + du
        if (np.abs(du[:q]).max() <= TOL * (1.0 + np.abs(u[:q]).max())
                and abs(du[q]) <= TOL * abs(u[q])):
            return u, J, True
    return u, J, False


def _eval_many(solver, U: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_eval` at the rows of ``U`` (n, q + 1) in one call of the solver (its exact
    ``real_jacobians``, else one residual call of n (q + 2) rows); each row's numbers as alone."""
    exact = getattr(solver, "real_jacobians", None)
    out = exact(U) if exact is not None else None
    if out is not None:
        return out
    if getattr(solver, "real_jacobian", None) is not None:
        G, J = zip(*(_eval(solver, u) for u in U), strict=True)
        return np.array(G), np.array(J)
    n, q = U.shape[0], U.shape[1] - 1
    h = H_FD * (1.0 + np.abs(U))
    W = np.repeat(U[:, None, :], q + 2, axis=1)
    idx = np.arange(q + 1)
    W[:, 1 + idx, idx] += h
    W = W.reshape(-1, q + 1)
    X = W[:, :q].astype(np.complex128)
    F = solver.residual(X, W[:, q].astype(np.complex128))
    S = solver.stieltjes(X)
    G = np.concatenate([np.real(F), np.real(S)[:, None]], axis=1).reshape(n, q + 2, q + 1)
    return G[:, 0], np.swapaxes((G[:, 1:] - G[:, :1]) / h[:, :, None], 1, 2)


def _newton_many(solver, U: np.ndarray) -> list:
    """:func:`_newton` at fixed lam from each row of ``U``, the points' steps in one batch
    (the same steps as alone); a list of (u, J, converged)."""
    n, q = U.shape[0], U.shape[1] - 1
    U, Js, ok = U.copy(), [None] * n, np.zeros(n, dtype=bool)
    last, act = np.full(n, math.inf), np.arange(n)
    for _ in range(NEWTON_MAX):
        if act.size == 0:
            break
        G, J = _eval_many(solver, U[act])
        fin = np.all(np.isfinite(G), axis=1) & np.all(np.isfinite(J), axis=(1, 2))
        du = np.full((act.size, q), np.nan)
        du[fin] = _solve(J[fin, :q, :q], -G[fin, :q])
        a = np.abs(du)
        size = np.max(a, axis=1) / (1.0 + np.max(np.abs(U[act, :q]), axis=1))
        good = np.all(np.isfinite(du), axis=1) & (size < np.maximum(2.0 * last[act], 1e-8))
        act, du, a, J = act[good], du[good], a[good], J[good]
        last[act] = size[good]
        U[act, :q] += du
        for i, k in enumerate(act):
            Js[k] = J[i]
        conv = np.max(a, axis=1) <= TOL * (1.0 + np.max(np.abs(U[act, :q]), axis=1))
        ok[act[conv]] = True
        act = act[~conv]
    return [(U[k].copy(), Js[k], bool(ok[k])) for k in range(n)]


def _solve(J: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``J^-1 b`` for each (J, b) (LAPACK's gesv on each, the numbers of a solve alone); NaN
    where J is singular."""
    try:
        return np.linalg.solve(J, b[..., None])[..., 0]
    except np.linalg.LinAlgError:
        out = np.full(b.shape, np.nan)
        for i in range(b.shape[0]):
            try:
                out[i] = np.linalg.solve(J[i], b[i])
            except np.linalg.LinAlgError:
                pass
        return out


class Point:
    """A solution ``u = (x, lam)`` on the branch with ``m``, the tangent ``t = du/dm`` and
    ``g = dlam/dm``."""

    __slots__ = ("u", "m", "t", "g")

    def __init__(self, solver, u: np.ndarray, J: np.ndarray, t: np.ndarray | None = None
                 ) -> None:
        self.u = u
        self.m = float(np.real(solver.stieltjes(u[None, :-1].astype(np.complex128))[0]))
        if t is None:
            e = np.zeros(u.size)
            e[-1] = 1.0
            try:
                t = np.linalg.solve(J, e)
            except np.linalg.LinAlgError:
                t = np.full(u.size, np.nan)
        self.t = t  # (given: J^-1 e solved in a batch, :func:`between`)
        self.g = float(self.t[-1])

    @property
    def lam(self) -> float:
        return float(self.u[-1])


def _at_m(solver, p: Point, m: float) -> Point | None:
    """The point of the branch at ``m``, Newton from ``p`` moved along its tangent."""
    u, J, ok = _newton(solver, p.u + (m - p.m) * p.t, m)
    return Point(solver, u, J) if ok else None


def at_lam(solver, p: Point, lam: float) -> Point | None:
    """The point of the branch at ``lam`` (fixed-lam Newton from ``p`` on its tangent)."""
    if not (math.isfinite(p.g) and p.g > 0.0):
        return None
    u0 = p.u + (lam - p.lam) / p.g * p.t
    u0[-1] = lam
    u, J, ok = _newton(solver, u0)
    return Point(solver, u, J) if ok else None


def between(solver, reqs: list) -> list:
    """The points of the branch at ``lam`` between ``a`` and ``b`` for each ``(lam, a, b)`` of
    ``reqs`` (None where not found): fixed-lam Newton (:func:`_newton_many`, in one batch)
    from the cubic Hermite interpolant in lam of the two (du/dlam = t/g)."""
    rows, out = [], [None] * len(reqs)
    for lam, a, b in reqs:
        if math.isfinite(a.g) and a.g > 0.0 and math.isfinite(b.g) and b.g > 0.0:
            h = b.lam - a.lam
            s = (lam - a.lam) / h
            h00, h10 = (1 + 2 * s) * (1 - s) ** 2, s * (1 - s) ** 2
            h01, h11 = s * s * (3 - 2 * s), s * s * (s - 1)
            rows.append(h00 * a.u + h10 * h * a.t / a.g + h01 * b.u + h11 * h * b.t / b.g)
            rows[-1][-1] = lam
        else:
            rows.append(None)
    use = [i for i, r in enumerate(rows) if r is not None]
    res = _newton_many(solver, np.array([rows[i] for i in use])) if use else []
    done = [(i, u, J) for i, (u, J, ok) in zip(use, res, strict=True) if ok]
    if done:
        Js = np.array([J for _, _, J in done])
        e = np.zeros(Js.shape[:2])
        e[:, -1] = 1.0
        for (i, u, J), t in zip(done, _solve(Js, e), strict=True):
            out[i] = Point(solver, u, J, t)
    return out


def polish(solver, x: np.ndarray, lam: float) -> Point | None:
    """The real solution at ``lam`` outside the support from a nearby complex one ``x`` (e.g.
    the path's at lam + i0): fixed-lam Newton from its real part; None unless it converges to a
    point with g > 0 (the physical side)."""
    u, J, ok = _newton(solver, np.append(np.real(np.asarray(x)).ravel(), float(lam)))
    if not ok:
        return None
    p = Point(solver, u, J)
    return p if math.isfinite(p.g) and p.g > 0.0 else None


def fold(solver, p: Point, bound: float, monotone: bool = False) -> Fold:
    """The edge between ``p`` (a physical point outside the support) and ``bound`` (a point
    inside the support, or a bound of the spectrum beyond the edge): the root of g along the
    branch toward ``bound`` (:class:`Fold`; its edge NaN if not found). Each step moves lam
    toward ``bound``, not past it; ``monotone`` (the top edge from far above, where m'(lam)
    increases toward the edge): on the physical side by at most half the way, g decreasing."""
    s = 1.0 if bound > p.lam else -1.0  # lam's direction (m moves the same way: g > 0)
    seen, cur, prev = [p], p, None
    bracket = None
    # the walk: secant on g, at most to the quadratic model's fold (from a grid point, a few
    # steps: no fold met means none in the bracket)
    for _ in range(FOLD_STEPS if monotone else WALK_STEPS):
        far = -2.0 * (cur.lam - bound) / cur.g  # the fold's m if the edge were at bound
        dm = far
        if prev is not None and prev.g != cur.g:
            sec = -cur.g * (cur.m - prev.m) / (cur.g - prev.g)
            if sec * far > 0.0:
                dm = math.copysign(min(max(abs(sec), 0.1 * abs(far)), abs(far)), far)
        nxt = None
        for _ in range(16):
            nxt = _at_m(solver, cur, cur.m + dm)
            if (nxt is not None and math.isfinite(nxt.g) and s * (nxt.lam - cur.lam) > 0.0
                    and s * (nxt.lam - bound) < 0.0
                    and (not monotone or nxt.g <= 0.0 or (
                        nxt.g < cur.g
                        and s * (nxt.lam - cur.lam - 0.5 * (bound - cur.lam)) <= 0.0))):
                break
            nxt, dm = None, 0.5 * dm
        if nxt is None:
            return Fold(math.nan, seen)
        if nxt.g <= 0.0:
            bracket = (cur, nxt)
            break
        seen.append(nxt)
        prev, cur = cur, nxt
    if bracket is None:
        return Fold(math.nan, seen)
    a, b = bracket  # g(a) > 0 >= g(b): Illinois on g(m)
    ga, gb = a.g, b.g
    side = 0
    best = b if abs(b.g) < abs(a.g) else a
    for _ in range(FOLD_STEPS):
        slope = (b.g - a.g) / (b.m - a.m)
        err = best.g * best.g / (2.0 * slope)
        if abs(err) <= FOLD_TOL * abs(best.lam) or abs(b.m - a.m) <= 1e-14 * abs(a.m):
            edge = best.lam - err
            if s * (edge - p.lam) <= 0.0 or s * (edge - bound) >= 0.0:
                return Fold(math.nan, seen, beyond=edge if s * (edge - bound) >= 0.0
                            and s * (edge - p.lam) > 0.0 else math.nan)
            return Fold(edge, seen, best, slope)
        mc = (a.m * gb - b.m * ga) / (gb - ga)
        if not (min(a.m, b.m) < mc < max(a.m, b.m)):
            mc = 0.5 * (a.m + b.m)
        c = _at_m(solver, a if abs(mc - a.m) <= abs(mc - b.m) else b, mc)
        if c is None or not math.isfinite(c.g):
            break
        if abs(c.g) < abs(best.g):
            best = c
        if c.g > 0.0:
            a, ga = c, c.g
            seen.append(c)
            gb = 0.5 * gb if side == 1 else gb
            side = 1
        else:
            b, gb = c, c.g
            ga = 0.5 * ga if side == -1 else ga
            side = -1
    return Fold(math.nan, seen)


class Fold:
    """An edge found by :func:`fold`: ``edge``, the physical points met (``points``), the point
    of smallest |g| (``at``) and g' there (``slope``; lam - edge = g^2/(2 g') near it);
    ``beyond``: a fold the bracket converged to past ``bound`` (``edge`` NaN; a grid point
    beyond the edge taken for inside the support, see law.bulk_support)."""

    def __init__(self, edge: float, points: list[Point], at: Point | None = None,
                 slope: float = math.nan, beyond: float = math.nan) -> None:
        self.edge, self.points, self.at, self.slope = edge, points, at, slope
        self.beyond = beyond

    @property
    def ok(self) -> bool:
        return math.isfinite(self.edge)


class Branch:
    """The physical branch above the bulk's top edge (the :class:`Fold` of the top edge and
    every point met since), for :func:`real_solution`."""

    def __init__(self, top: Fold) -> None:
        self.top = top
        self.edge = top.edge
        self.points = [p for p in top.points if p.lam > self.edge and p.g > 0.0]

    def reach(self, solver, lam: float) -> Point | None:
        """The point at ``lam`` (> edge): fixed-lam Newton from the nearest known point; else
        from the point of the fold's quadratic model at lam (m = m* + sqrt(2 (lam - edge)/g'),
        on the side of the physical points)."""
        near = min(self.points, key=lambda p: abs(math.log(p.lam / lam)))
        p = at_lam(solver, near, lam)
        if p is None and self.top.at is not None:
            at = self.top.at
            side = math.copysign(1.0, near.m - at.m)
            dm = side * math.sqrt(max(2.0 * (lam - self.edge) / abs(self.top.slope), 0.0))
            for _ in range(6):
                q = _at_m(solver, at, at.m + dm)
                if q is not None and q.g > 0.0:
                    p = at_lam(solver, q, lam)
                    break
                dm *= 0.5
        if p is not None and p.g > 0.0:
            self.points.append(p)
            return p
        return None


def real_solution(solver, lam: float) -> tuple[np.ndarray, bool]:
    """The solution at real ``lam`` above the bulk (rows (1, q), complex dtype): on the branch
    stored by :func:`asymptotics.spectra.law.bulk_support` (``solver.branch``); else (no
    branch, or Newton fails) the path's solution at lam + i0."""
    br = getattr(solver, "branch", None)
    if br is not None and br.points and lam > br.edge:
        p = br.reach(solver, lam)
        if p is not None:
            return p.u[None, :-1].astype(np.complex128), True
    x, ok = solver.solve(np.array([lam + 0j]))
    return x, bool(ok[0])
