"""The guard of the top edge (docs/THEORY.md §16.10): whether the walk down the real branch
from above the bulk (:func:`asymptotics.spectra.branch.fold`) stepped over a narrow top
component of mass above :data:`MASS_TOL`, by the exact mass bound of five points of the branch
(m and m' there) on windows split where it does not exclude one. The search is replayed on the
points known and the points it misses are computed in one batch a round
(:func:`asymptotics.spectra.branch.between`: the batched fixed-lam Newton), the same points
and the same answer as one at a time."""

from __future__ import annotations

import numpy as np

from asymptotics.spectra.branch import Fold, Point, at_lam, between, fold, polish

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
    fixed-lam Newton from the two around it (:func:`between`; else the path's solution
    polished); the first inside the support (``inside(lam)`` None: the path's solution is not
    real) is returned as (lam, the physical point above it); else None. The search is replayed
    (:func:`_search`) on the points known, those it misses computed in one batch a round."""
    pts = sorted((p for p in top.points if p.lam > lo and p.g > 0.0),
                 key=lambda p: -p.lam)
    if not pts:
        return None
    low = at_lam(solver, pts[-1], lo)
    if low is not None and low.g > 0.0 and low.m < pts[-1].m:
        pts.append(low)
    known: dict = {}
    bounds: dict = {}  # the windows' mass bounds (by their points)
    while True:
        need: list = []
        hit = _search(pts[::-1], GUARD_FLOOR * pts[0].lam, known, need, bounds)
        if not need:
            return hit
        for (lam, a, b), c in zip(need, between(solver, need), strict=True):
            if not (c is not None and c.g > 0.0 and a.m < c.m < b.m):
                x = inside(lam)
                if x is None:
                    known[id(a), id(b)] = (lam, b)
                    break  # (the search ends there: the points after it are not needed)
                c = polish(solver, x, lam)
                c = c if c is not None and a.m < c.m < b.m else None
            known[id(a), id(b)] = c


def _search(pts: list[Point], floor: float, known: dict, need: list, bounds: dict):
    """The search of :func:`top_guard` on the points ``known`` (by their two neighbours; a
    tuple: inside the support): its result, or with ``need`` not empty the points it misses
    (the first, then those of the windows after it, until a point inside the support);
    ``bounds``: the windows' :func:`mass_bound` excludes a mass (by their points' ids)."""
    stack, budget = _windows(pts), GUARD_POINTS
    while stack and budget > 0:
        w = stack.pop()
        key = tuple(map(id, w))
        if key not in bounds:
            bounds[key] = len(w) > 2 and not mass_bound(w) > MASS_TOL
        if bounds[key]:
            continue
        finer, full = [w[-1]], True
        for a in w[-2::-1]:  # the new points from the top down
            b = finer[-1]
            if b.lam - a.lam > floor:
                budget -= 1
                if (id(a), id(b)) not in known:
                    need.append((0.5 * (a.lam + b.lam), a, b))
                    full = False
                else:
                    c = known[id(a), id(b)]
                    if isinstance(c, tuple):
                        return c
                    if c is not None:
                        finer.append(c)
            finer.append(a)
        if full and len(finer) > len(w):
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
