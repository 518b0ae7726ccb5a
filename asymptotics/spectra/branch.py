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
        if not (np.all(np.isfinite(G)) and np.all(np.isfinite(J))):
            return u, None, False
        try:
            if m is None:
                du = np.append(np.linalg.solve(J[:q, :q], -G[:q]), 0.0)
            else:
                G[q] -= m
                du = np.linalg.solve(J, -G)
        except np.linalg.LinAlgError:
            return u, None, False
        size = float(np.max(np.abs(du[:q])) / (1.0 + np.max(np.abs(u[:q]))))
        if not (np.all(np.isfinite(du)) and size < max(2.0 * last, 1e-8)):
            return u, None, False  # (diverging: a step larger than twice the last)
        last = size
        u = u + du
        if (np.max(np.abs(du[:q])) <= TOL * (1.0 + np.max(np.abs(u[:q])))
                and abs(du[q]) <= TOL * abs(u[q])):
            return u, J, True
    return u, J, False


class Point:
    """A solution ``u = (x, lam)`` on the branch with ``m``, the tangent ``t = du/dm`` and
    ``g = dlam/dm``."""

    __slots__ = ("u", "m", "t", "g")

    def __init__(self, solver, u: np.ndarray, J: np.ndarray) -> None:
        self.u = u
        self.m = float(np.real(solver.stieltjes(u[None, :-1].astype(np.complex128))[0]))
        e = np.zeros(u.size)
        e[-1] = 1.0
        try:
            self.t = np.linalg.solve(J, e)
        except np.linalg.LinAlgError:
            self.t = np.full(u.size, np.nan)
        self.g = float(self.t[-1])

    @property
    def lam(self) -> float:
        return float(self.u[-1])


def _at_m(solver, p: Point, m: float) -> Point | None:
    """The point of the branch at ``m``, Newton from ``p`` moved along its tangent."""
    u, J, ok = _newton(solver, p.u + (m - p.m) * p.t, m)
    return Point(solver, u, J) if ok else None


def _at_lam(solver, p: Point, lam: float) -> Point | None:
    """The point of the branch at ``lam`` (fixed-lam Newton from ``p`` on its tangent)."""
    if not (math.isfinite(p.g) and p.g > 0.0):
        return None
    u0 = p.u + (lam - p.lam) / p.g * p.t
    u0[-1] = lam
    u, J, ok = _newton(solver, u0)
    return Point(solver, u, J) if ok else None


def _between(solver, a: Point, b: Point, lam: float) -> Point | None:
    """The point of the branch at ``lam`` between ``a`` and ``b``: fixed-lam Newton from the
    cubic Hermite interpolant in lam of the two (du/dlam = t/g)."""
    if not (math.isfinite(a.g) and a.g > 0.0 and math.isfinite(b.g) and b.g > 0.0):
        return None
    h = b.lam - a.lam
    s = (lam - a.lam) / h
    h00, h10 = (1 + 2 * s) * (1 - s) ** 2, s * (1 - s) ** 2
    h01, h11 = s * s * (3 - 2 * s), s * s * (s - 1)
    u0 = h00 * a.u + h10 * h * a.t / a.g + h01 * b.u + h11 * h * b.t / b.g
    u0[-1] = lam
    u, J, ok = _newton(solver, u0)
    return Point(solver, u, J) if ok else None


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
                break
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


MASS_TOL = 1e-9  # a bulk mass that may hide above the top edge (as the coarse search's)
GUARD_FLOOR = 1e-6  # the guard's windows are not split below this fraction of hi
GUARD_POINTS = 400  # nor past this many points of the branch
ROUND = 1e-11  # the relative error of m and m' at a point (Newton's TOL, with a margin)


def mass_bound(pts: list[Point]) -> float:
    """The largest bulk mass in (lam_0, lam_n) given m and m' = 1/g at the real points ``pts``
    (ascending lam, outside the support), exact for any measure on the real line
    (docs/THEORY.md §16.10): with P(x) = prod_k (x - lam_k), K = max P^2 on [lam_0, lam_n],
    mu(lam_0, lam_n) <= K int dmu/P^2 (K/P^2 >= 1 there, >= 0 everywhere), the integral a
    combination of m(lam_k) and m'(lam_k) by partial fractions (two points: L^2/8 ((m'(a) +
    m'(b))/2 - (m(b) - m(a))/L))."""
    lam = np.array([p.lam for p in pts])
    c, h = 0.5 * (lam[0] + lam[-1]), 0.5 * (lam[-1] - lam[0])
    sk = (lam - c) / h  # the nodes on [-1, 1]
    diff = sk[:, None] - sk[None, :]
    np.fill_diagonal(diff, 1.0)
    A = 1.0 / np.prod(diff, axis=1) ** 2
    np.fill_diagonal(diff, np.inf)
    B = -2.0 * A * np.sum(1.0 / diff, axis=1)
    m = np.array([p.m for p in pts])
    dm = np.array([1.0 / p.g for p in pts])
    terms = np.concatenate([A * h * h * dm, B * h * m])
    integral = float(np.sum(terms)) + ROUND * float(np.sum(np.abs(terms)))  # (its roundoff)
    # K: max P^2 on [-1, 1] bounded gap by gap (|s - s_j| |s - s_j+1| <= gap^2/4, each other
    # factor by its larger value at the gap's ends)
    d = np.abs(sk[:, None] - sk[None, :])
    K = 0.0
    for g in range(sk.size - 1):
        far = np.maximum(d[g], d[g + 1])
        far[[g, g + 1]] = 1.0
        K = max(K, (0.25 * (sk[g + 1] - sk[g]) ** 2 * float(np.prod(far))) ** 2)
    return K * integral


def top_guard(solver, top: Fold, lo: float, inside) -> tuple[float, Point] | None:
    """Whether the walk of ``top`` (the top edge's fold from above) stepped over a component
    (docs/THEORY.md §16.10): the :func:`mass_bound` on windows of five consecutive points of
    the branch, from the walk's physical points above ``lo`` (and the branch's point there);
    each window where it does not exclude :data:`MASS_TOL` gets the middles of its gaps (not
    below :data:`GUARD_FLOOR` hi) and is split, the highest first. A new point is
    fixed-lam Newton from the two around it (:func:`_between`; else the path's solution
    polished); the first inside the support (``inside(lam)`` None: the path's solution is not
    real) is returned as (lam, the physical point above it); else None."""
    pts = sorted((p for p in top.points if p.lam > lo and p.g > 0.0),
                 key=lambda p: -p.lam)
    if not pts:
        return None
    low = _at_lam(solver, pts[-1], lo)
    if low is not None and low.g > 0.0 and low.m < pts[-1].m:
        pts.append(low)

    def node(lam: float, a: Point, b: Point) -> Point | tuple | None:
        c = _between(solver, a, b, lam)
        if c is not None and c.g > 0.0 and a.m < c.m < b.m:
            return c
        x = inside(lam)
        if x is None:
            return (lam, b)
        c = polish(solver, x, lam)
        return c if c is not None and a.m < c.m < b.m else None

    floor = GUARD_FLOOR * pts[0].lam
    stack, budget = _windows(pts[::-1]), GUARD_POINTS
    while stack and budget > 0:
        w = stack.pop()
        if len(w) > 2 and not mass_bound(w) > MASS_TOL:
            continue
        finer = [w[-1]]
        for a in w[-2::-1]:  # the new points from the top down
            b = finer[-1]
            if b.lam - a.lam > floor:
                c = node(0.5 * (a.lam + b.lam), a, b)
                budget -= 1
                if isinstance(c, tuple):
                    return c
                if c is not None:
                    finer.append(c)
            finer.append(a)
        if len(finer) > len(w):
            stack.extend(_windows(finer[::-1]))
        # (else: not resolved, every gap at most the floor)
    return None


def guard(solver, top: Fold, width: float, inner: list, inside, refine) -> Fold:
    """The top edge's fold ``top`` checked for a component above it (docs/THEORY.md §16.10,
    :func:`top_guard`; ``inside(lam)``: the path's solution at lam if real, else None): where
    one is met, the fold of its top edge from the physical point above it (else the edge by
    ``refine(lo, hi)``, the law's grid passes), checked again; the points met inside
    components are appended to ``inner``."""
    for _ in range(8):
        # from where the law's grid ends (1.1 (edge + width) or more, at least 1.1 edge)
        hit = top_guard(solver, top, max(top.edge + width, 1.1 * top.edge), inside)
        if hit is None:
            break
        mid, b = hit
        inner.append(mid)
        above = [p for p in top.points if p.lam > b.lam]
        f = fold(solver, b, mid)
        if f.ok and mid < f.edge < b.lam:
            top = Fold(f.edge, above + f.points, f.at, f.slope)
        else:
            top = Fold(refine(mid, b.lam), above + [b])
    return top


def _windows(pts: list[Point], size: int = 5) -> list[list[Point]]:
    """Consecutive windows of ``size`` points (ascending lam) sharing their ends, the highest
    last."""
    return [pts[i:i + size] for i in range(0, max(len(pts) - 1, 1), size - 1)]


class Fold:
    """An edge found by :func:`fold`: ``edge``, the physical points met (``points``), the point
    of smallest |g| (``at``) and g' there (``slope``; lam - edge = g^2/(2 g') near it)."""

    def __init__(self, edge: float, points: list[Point], at: Point | None = None,
                 slope: float = math.nan) -> None:
        self.edge, self.points, self.at, self.slope = edge, points, at, slope

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
        p = _at_lam(solver, near, lam)
        if p is None and self.top.at is not None:
            at = self.top.at
            side = math.copysign(1.0, near.m - at.m)
            dm = side * math.sqrt(max(2.0 * (lam - self.edge) / abs(self.top.slope), 0.0))
            for _ in range(6):
                q = _at_m(solver, at, at.m + dm)
                if q is not None and q.g > 0.0:
                    p = _at_lam(solver, q, lam)
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
