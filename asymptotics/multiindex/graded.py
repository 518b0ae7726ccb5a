"""relu's xi-moments in closed form and the graded spike lattice (docs/THEORY.md §12.4).

With at least :data:`CLOSED_GROUPS` groups (a readout of three or more values: up to three spike
axes), the steps' integrals for relu are taken with its Gaussian moments in closed form
(:func:`asymptotics.multiindex.xi_lines.relu_closed`: entire functions of the shift, where the
96-node xi rule's moments have kinks at every node) on a lattice that is

* **graded** per spike axis: a group whose shift ``M_g = <Mmat_g, u>`` is steep along axis i
  (``|M_gi| / sqrt(c_g)`` large) varies only where ``|M_g| <~ ZONE sqrt(c_g)``, a band around
  u_i = 0 of known half-width; a smooth map ``u = psi(t)`` puts the trapezoid nodes ``t = delta j``
  ``rho`` times closer there (``rho`` the ratio of the fine to the coarse step), the
  coarse step elsewhere. The rule stays a trapezoid rule of an analytic integrand in t, with
  geometric convergence in 1/delta, and nested in delta;
* **checked**: the rule is accepted when its sub-rule of twice every step agrees to
  :data:`CLOSED_TOL` (with a geometric error the accepted rule is then accurate to about the
  square of that, or better); otherwise only the axes whose own sub-rule does not agree are
  refined.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from asymptotics.coefficients import step_quadrature
from asymptotics.coefficients.functions import Function
from asymptotics.coefficients.gauss_rules import gauss_hermite
from asymptotics.multiindex import step_rules
from asymptotics.multiindex.step_rules import PRUNE, difference, next_steps

#: from this many groups (readout values) relu's xi-moments are taken in closed form at every
#: step (fewer groups keep the 96-node rule, which the network route's groups share)
CLOSED_GROUPS = 3
#: the margin of the first steps (Gaussian spectra below e^-SPAN^2/2), the agreement of the
#: rules of delta and 2 delta required, the largest step, |M| / sqrt(c) beyond which relu's
#: moments are flat (Phi(-8) = 6e-16), the most nodes refined to
CLOSED_SPAN = 5.0
CLOSED_TOL = 1e-3
LOW_RANK_TOL = 1e-6  # with one or two spike axes (a few hundred or thousand nodes)
CLOSED_H_MAX = 0.5
ZONE = 8.0
SWITCH = 2.0  # the map's switch width in t
CLOSED_NODES = 1_500_000
#: the agreement required for a sigma without kinks (its spectrum may decay only exponentially:
#: the error of delta about the square of that of 2 delta)
SMOOTH_TOL = 1e-5
#: whether a sigma without kinks takes the per-axis checked lattice (off: on three benchmark
#: draws it was slower than the former rule as often as faster)
SMOOTH_GRADED = False
#: the scale on which the moments of a sigma without kinks vary at a bulk near 0 (tanh, erf,
#: softplus: ~1; a sigma varying faster is caught by the check, at more nodes)
SIGMA_SCALE = 0.5


def closed_moments(sigma: Function, K: int) -> list | None:
    """With at least :data:`CLOSED_GROUPS` groups: for relu the groups' xi rules
    (``xi_lines.xi_moments``' ``rules``), ``xi_lines.CLOSED`` for each (closed forms, a graded
    lattice); for a sigma without kinks ``[]`` (its xi rules, a lattice checked per axis:
    :func:`uniform_steps`); else None (the rules of ``step_rules``)."""
    from asymptotics.multiindex import xi_lines

    if xi_lines.erf_affine(sigma) is not None:  # erf(a z + b): closed forms with any K
        return [xi_lines.CLOSED] * K
    if K < CLOSED_GROUPS:
        return None
    if xi_lines.is_relu(sigma):
        return [xi_lines.CLOSED] * K
    return [] if SMOOTH_GRADED and not sigma.kinks else None


def start(direct: Callable[..., np.ndarray], sigma: Function, c: np.ndarray, Mmat: np.ndarray,
          h0: float, xi: np.ndarray, wxi: np.ndarray, u_max: float, closed: list | None
          ) -> tuple[np.ndarray | Graded | None, list | None]:
    """``step_rules.start``, or with ``closed`` (:func:`closed_moments`) relu's closed forms on
    the graded lattice (:func:`graded_steps`), or for ``[]`` the per-axis checked lattice
    (:func:`uniform_steps`) with the xi rules of ``step_rules``."""
    from asymptotics.multiindex import xi_lines

    if closed is None:
        return step_rules.start(direct, sigma, c, Mmat, h0, xi, wxi, u_max)
    if not np.all(np.asarray(c) > 0):
        return None, closed or None
    if closed and xi_lines.erf_affine(sigma) is not None:
        # no xi rule, no ripples: step_rules' lattice on the moments' own Gaussian width
        # (k erf(a x + b): a Gaussian CDF of variance 1 / (2 a^2); sigma'^2 of half that)
        a = xi_lines.erf_affine(sigma)[1]
        c_eff = np.asarray(c, dtype=np.float64) + 0.25 / (a * a)
        return step_rules.first_steps(Mmat, c_eff, h0, np.zeros(len(c_eff)), 1.0), closed
    if closed:
        return graded_steps(Mmat, c, u_max), closed
    ripples, rules, dxi = step_rules.xi_rules(direct, sigma, c, Mmat, xi, wxi, u_max)
    return uniform_steps(Mmat, c, ripples, dxi, h0, u_max), rules


def choose(direct: Callable[..., np.ndarray], sigma: Function, c: np.ndarray, Mmat: np.ndarray,
           h0: float, xi: np.ndarray, wxi: np.ndarray, u_max: float, closed: list | None,
           plain: bool) -> tuple[np.ndarray | Graded | None, list | None]:
    """The rule of one step's spike axes, shared by the surrogate's mapping and the network
    route's groups: :func:`start`, or with ``plain`` the default lattice (None) and the xi rules
    ``closed or None`` (relu's closed forms, else the xi rule)."""
    if plain:
        return None, closed or None
    return start(direct, sigma, c, Mmat, h0, xi, wxi, u_max, closed)


def spike_rule(hs: np.ndarray | Graded | None, h0: float, u_max: float, terms: Callable,
               update: Callable, default: Callable, check: Callable | None = None) -> tuple:
    """:func:`graded_rule` for a :class:`Graded` ``hs``, else ``step_rules.spike_rule``."""
    if isinstance(hs, Graded):
        return graded_rule(hs, u_max, terms, update)
    return step_rules.spike_rule(hs, h0, u_max, terms, update, default, check)


def uniform_steps(Mmat: np.ndarray, c: np.ndarray, ripples: np.ndarray, dxi: float, h0: float,
                  u_max: float) -> Graded | np.ndarray | None:
    """A sigma without kinks, three or more groups: the lattice of ``step_rules.first_steps``
    with the margin :data:`CLOSED_SPAN`, bulks below :data:`SIGMA_SCALE` squared counted at it
    (the moments vary on sigma's own scale then) and no default step below which an axis goes
    unchecked, every axis uniform, checked per axis to :data:`SMOOTH_TOL`; the former steps
    (``h0`` the least) when that lattice would exceed :data:`CLOSED_NODES` (None: the default
    lattice)."""
    first_steps = step_rules.first_steps
    c_eff = np.maximum(np.asarray(c, dtype=np.float64), SIGMA_SCALE**2)
    h = first_steps(Mmat, c_eff, 0.0, ripples, dxi, CLOSED_SPAN, CLOSED_H_MAX)
    if h is None:
        return None
    r = len(h)
    g = Graded(h, np.ones(r), np.zeros(r), np.ones(r), SMOOTH_TOL)
    return g if lattice_size(g, u_max) <= CLOSED_NODES else first_steps(Mmat, c, h0, ripples, dxi)


def lattice_size(g: Graded, u_max: float) -> float:
    """About the nodes of :func:`graded_lattice` (the product of the axes' nodes times the
    ball's share of the cube)."""
    n = [len(graded_axis(float(d), float(rh), float(T), float(sw), u_max)[0])
         for d, rh, T, sw in zip(g.delta, g.rho, g.T, g.s, strict=True)]
    r = len(n)
    return float(np.prod(n)) * math.pi ** (r / 2) / math.gamma(r / 2 + 1) / 2.0**r


def rest_nodes(degree: int, K: int) -> int:
    """Gauss-Hermite nodes per other axis for a target polynomial of total degree ``degree``:
    ``degree + 1`` is exact for the sums of e, e R and e^2 (degree 2 degree); with fewer than
    :data:`CLOSED_GROUPS` groups the former ``degree + 2`` (their numbers unchanged)."""
    return degree + 1 if K >= CLOSED_GROUPS else degree + 2


@dataclass(frozen=True)
class Graded:
    """Per spike axis the trapezoid step ``delta`` in t of the map ``u = psi(t)`` with
    ``psi'(t) = 1 - (1 - rho) (tanh((t + T) / s) - tanh((t - T) / s)) / 2``: node spacing
    ``rho delta`` for ``|t| < T`` (|u| < rho T), ``delta`` beyond, switching over ``s``."""

    delta: np.ndarray
    rho: np.ndarray
    T: np.ndarray
    s: np.ndarray
    tol: float = 1e-3  # CLOSED_TOL: the agreement with the sub-rules required


def _step(b: np.ndarray | float) -> np.ndarray:
    return np.minimum(2.0 * math.pi / (CLOSED_SPAN * np.sqrt(1.0 + 4.0 * np.square(b))),
                      CLOSED_H_MAX)


def graded_steps(Mmat: np.ndarray, c: np.ndarray, u_max: float) -> Graded | None:
    """The first graded lattice: on axis i group g varies on the scale ``sqrt(c_g) / |M_gi|``
    (ratio b_gi), but relu's closed-form moments only where ``|M_g| <= ZONE sqrt(c_g)``, i.e.
    ``|u_i| <= z_gi = (ZONE sqrt(c_g) + u_max |M_g,other|) / |M_gi|``. The groups whose zone is
    narrow (z < u_max / 3) set the fine spacing there, the others the coarse one. None (the
    default lattice) when it would exceed :data:`CLOSED_NODES`."""
    sc = np.sqrt(np.asarray(c, dtype=np.float64))
    ratio = np.abs(Mmat) / sc[:, None]
    r = Mmat.shape[1]
    delta, rho, T, s = np.empty(r), np.ones(r), np.zeros(r), np.ones(r)
    for i in range(r):
        other = np.sqrt(np.maximum(np.sum(Mmat * Mmat, axis=1) - Mmat[:, i] ** 2, 0.0))
        with np.errstate(divide="ignore"):
            z = np.where(np.abs(Mmat[:, i]) > 0, (ZONE * sc + u_max * other)
                         / np.abs(Mmat[:, i]), np.inf)
        narrow = z < u_max / 3
        fine = float(_step(np.max(ratio[:, i])))
        coarse = float(_step(np.max(ratio[~narrow, i], initial=0.0)))
        delta[i] = coarse
        if fine < 0.8 * coarse:
            rho[i] = fine / coarse
            T[i] = float(np.max(z[narrow])) / rho[i]
            s[i] = SWITCH
        else:
            delta[i] = fine
    g = Graded(delta, rho, T, s, CLOSED_TOL if r >= 3 else LOW_RANK_TOL)
    return g if lattice_size(g, u_max) <= CLOSED_NODES else None


def _logcosh(x: np.ndarray) -> np.ndarray:
    ax = np.abs(x)
    return ax + np.log1p(np.exp(-2.0 * ax)) - math.log(2.0)


def graded_axis(delta: float, rho: float, T: float, s: float, u_max: float
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(u, w, j)``: the nodes ``psi(delta j)`` in [-u_max, u_max], their weights
    ``delta psi' phi(u)`` (normalised) and indices j."""
    J = math.floor((u_max + (1.0 - rho) * T) / delta) + 2
    t = delta * np.arange(-J, J + 1)
    u = t - (1.0 - rho) * 0.5 * s * (_logcosh((t + T) / s) - _logcosh((t - T) / s))
    dpsi = 1.0 - (1.0 - rho) * 0.5 * (np.tanh((t + T) / s) - np.tanh((t - T) / s))
    keep = np.abs(u) <= u_max * (1 + 1e-12)
    w = dpsi * np.exp(-0.5 * u * u)
    return u[keep], w[keep] / w[keep].sum(), np.arange(-J, J + 1)[keep]


def graded_lattice(g: Graded, u_max: float) -> tuple[np.ndarray, np.ndarray, list]:
    """``(nodes, weights, subs)``: the product rule of the graded axes (pruned as
    ``step_rules.lattice``) and its sub-rules ``(indices, weights)``: first the nodes with even
    j on every axis (steps 2 delta), then per axis i those with even j on axis i."""
    if np.any(g.delta < 0):
        return _weak_lattice(g, u_max)
    axes, w1, ratio = [], [], []
    for d, rh, T, sw in zip(g.delta, g.rho, g.T, g.s, strict=True):
        x, w, j = graded_axis(float(d), float(rh), float(T), float(sw), u_max)
        ev = (j % 2) == 0
        axes.append(x)
        w1.append(w)
        ratio.append(np.where(ev, 1.0, 0.0) / w[ev].sum())
    wts = w1[0]
    for a in w1[1:]:
        wts = np.multiply.outer(wts, a)
    wts = wts.ravel()
    keep = np.flatnonzero(wts > PRUNE * wts.max())
    idx = np.unravel_index(keep, tuple(len(x) for x in axes))
    pts = np.stack([x[i] for x, i in zip(axes, idx, strict=True)], axis=-1)
    wts = wts[keep] / wts[keep].sum()
    factors = [f[i] for f, i in zip(ratio, idx, strict=True)]
    subs = []
    for f in [np.prod(factors, axis=0)] + factors:
        ws = wts * f
        sub = np.flatnonzero(ws > PRUNE * ws.max())
        subs.append((sub, ws[sub] / ws[sub].sum()))
    return pts, wts, subs


def _weak_lattice(g: Graded, u_max: float) -> tuple[np.ndarray, np.ndarray, list]:
    """:func:`graded_lattice` with weak axes (``delta_i = -n``, :func:`weak_axes`): Gauss-Hermite
    of n nodes there, each checked as in ``step_rules.lattice_checks`` (n against n / 2)."""
    axes, w1, w2, wm = [], [], [], []
    for d, rh, T, sw in zip(g.delta, g.rho, g.T, g.s, strict=True):
        if d < 0:
            (xn, wn), (xh, wh) = gauss_hermite(int(-d)), gauss_hermite(int(-d) // 2)
            axes.append(np.concatenate([xn, xh]))
            w1.append(np.concatenate([wn, 0.0 * wh]))
            w2.append(w1[-1])
            wm.append(np.concatenate([0.0 * wn, wh]))
            continue
        x, w, j = graded_axis(float(d), float(rh), float(T), float(sw), u_max)
        axes.append(x)
        w1.append(w)
        w2.append(np.where((j % 2) == 0, w, 0.0))
        wm.append(None)

    def product(ws: list) -> np.ndarray:
        p = ws[0]
        for a in ws[1:]:
            p = np.multiply.outer(p, a)
        return p.ravel()

    r = len(axes)
    rules = [w1, w2] + [[w2[a] if a == i else w1[a] for a in range(r)] for i in range(r)]
    rules += [[wm[a] if a == i else w2[a] for a in range(r)] for i in range(r) if wm[i] is not None]
    prods = [product(ws) for ws in rules]
    on = prods[0] > PRUNE * prods[0].max()
    for p in prods[2 + r:]:
        on |= p > PRUNE * p.max()
    keep = np.flatnonzero(on)
    idx = np.unravel_index(keep, tuple(len(x) for x in axes))
    pts = np.stack([x[i] for x, i in zip(axes, idx, strict=True)], axis=-1)
    subs = []
    for p in prods[1:]:
        ws = p[keep]
        sub = np.flatnonzero(ws > PRUNE * ws.max())
        subs.append((sub, ws[sub] / ws[sub].sum()))
    # a weak axis' entry: its rule of n (the even nodes elsewhere) against that of n / 2
    weak = iter(subs[1 + r:])
    subs = subs[:1] + [(*subs[0], *next(weak)) if wm[i] is not None else subs[1 + i]
                       for i in range(r)]
    return pts, prods[0][keep] / prods[0][keep].sum(), subs


def _sub_difference(U: np.ndarray, t: tuple, new: tuple, sub: np.ndarray, wsub: np.ndarray,
                    update: Callable) -> float:
    """How far the state of the sub-rule ``(sub, wsub)`` is from ``new`` (step_rules.difference
    of a, the spike Gram, c and any further arrays ``update`` returns: the network route's
    bulk covariances, in a basis-free form)."""
    coarse = update(*step_rules.subset(U, wsub, t, sub))
    return difference((new[0], new[1] @ new[1].T, *new[2:]),
                      (coarse[0], coarse[1] @ coarse[1].T, *coarse[2:]))


def _check(U: np.ndarray, t: tuple, new: tuple, sw: tuple, update: Callable) -> float:
    """:func:`_sub_difference` of a sub-rule ``(sub, w)`` from ``new``, or of the second rule of
    a pair ``(sub, w, sub2, w2)`` from the first."""
    if len(sw) == 2:
        return _sub_difference(U, t, new, *sw, update)
    one = update(*step_rules.subset(U, sw[1], t, sw[0]))
    return _sub_difference(U, t, one, sw[2], sw[3], update)


def graded_rule(g: Graded, u_max: float, terms: Callable, update: Callable
                ) -> tuple[np.ndarray, ...]:
    """The step's new state from the graded lattice ``g`` once it agrees with its sub-rule of
    twice every step to :data:`CLOSED_TOL`; otherwise the axes whose own sub-rule does not
    agree are refined (as in ``step_rules.next_steps``); at most :data:`CLOSED_NODES` nodes (the
    finest such lattice is then used)."""
    while True:
        U, wu, subs = graded_lattice(g, u_max)
        t = terms(U)
        new = update(U, wu, *t)
        tols = np.where(g.delta < 0, min(g.tol, step_rules.ACCEPT_TOL), g.tol)  # weak: 1e-6
        ok = _sub_difference(U, t, new, *subs[0], update) <= g.tol
        wd = {i: _check(U, t, new, subs[1 + i], update) for i in np.flatnonzero(g.delta < 0)}
        if ok and all(e <= tols[i] for i, e in wd.items()):
            return new
        diffs = [wd[i] if i in wd else _check(U, t, new, sw, update)
                 for i, sw in enumerate(subs[1:])]
        d = np.array([float(next_steps(np.array([h]), e, 0.0, tol)[0]) if e > tol
                      else h for h, e, tol in zip(g.delta, diffs, tols, strict=True)])
        if np.all(d == g.delta):  # every axis agrees alone: refine the one farthest off
            i = int(np.argmax(diffs))
            d[i] = float(next_steps(np.array([g.delta[i]]), diffs[i], 0.0, g.tol)[0])
        if U.shape[0] * float(np.prod(g.delta / d)) > CLOSED_NODES:
            return new
        g = Graded(d, g.rho, g.T, g.s, g.tol)


def weak_axes(hs: np.ndarray | object, b: np.ndarray, degree: np.ndarray, u_max: float
              ) -> np.ndarray | object:
    """The first steps ``hs`` with each weak axis (``b_i <=`` :data:`WEAK_B`: the largest rate
    at which a group's shift, or a non-polynomial variable of the target, moves along it, per
    unit of its own scale; ``degree_i`` the target's polynomial degree along it, negative: not
    weak) as ``-n``: a Gauss-Hermite rule of n nodes checked against its own of n / 2 nodes
    (``lattice``; error of n about the square of that of n / 2, as the trapezoid's h against
    2 h), when its n + n / 2 nodes are fewer than the trapezoid's."""
    if isinstance(hs, Graded):
        out = np.array(hs.delta, dtype=np.float64)
        for i in range(len(out)):
            n = step_quadrature.weak_nodes(float(b[i]), int(degree[i]))
            if (b[i] <= step_quadrature.WEAK_B and degree[i] >= 0 and hs.rho[i] == 1.0
                    and n <= step_rules.WEAK_MAX and 1.5 * n < 0.75 * len(graded_axis(
                        float(out[i]), 1.0, 0.0, 1.0, u_max)[0])):
                out[i] = -n
        return Graded(out, hs.rho, hs.T, hs.s, hs.tol)
    if not isinstance(hs, np.ndarray):
        return hs
    out = np.array(hs, dtype=np.float64)
    for i in range(len(out)):
        if b[i] <= step_quadrature.WEAK_B and degree[i] >= 0 and out[i] > 0:
            n = step_quadrature.weak_nodes(float(b[i]), int(degree[i]))
            if n <= step_rules.WEAK_MAX and 1.5 * n < 0.75 * (2 * math.floor(u_max / out[i]) + 1):
                out[i] = -n
    return out


RELU_TARGET_GRADED = True  # relu's sigma and target on the graded lattice (THEORY.md §12.4)


def relu_rest_steps(hs: np.ndarray | object, bz: np.ndarray, beta: np.ndarray, h0: float,
                    Mmat: np.ndarray, c: np.ndarray, u_max: float) -> np.ndarray | Graded | None:
    """The first steps ``hs`` of :func:`start` also resolving the smoothed kink (scale |beta| /
    |bz_i| along spike axis i); graded (relu's sigma): the default lattice (None) or, with
    :data:`RELU_TARGET_GRADED`, the kink as one more group (shift ``bz . u``, bulk ``|beta|^2``)
    if that has under a fifth of the default lattice's nodes (its checks cost about that)."""
    nb, r = float(np.linalg.norm(beta)), len(bz)
    if isinstance(hs, Graded) and RELU_TARGET_GRADED:
        g = graded_steps(np.vstack([Mmat, bz[None, :]]), np.append(c, nb * nb), u_max)
        full = Graded(np.full(r, h0), np.ones(r), np.zeros(r), np.ones(r))
        return g if g and lattice_size(g, u_max) < 0.2 * lattice_size(full, u_max) else None
    if not isinstance(hs, np.ndarray):
        return None
    h = 2.0 * math.pi / (step_rules.SPAN * np.sqrt(1.0 + 4.0 * (b := np.abs(bz) / nb) * b))
    return np.maximum(np.minimum(hs, h), h0)


RELU_REST_MIN = 0.05  # the other axes' least share of relu's target direction (relu_rest_ok)


def relu_target(g: Function | Callable) -> bool:
    """Whether the target is relu of its one variable (the other axes' sums in closed form)."""
    return isinstance(g, Function) and g.identity is None and g.expression == "relu(z)"


def relu_rest_ok(beta: np.ndarray, bz: np.ndarray) -> bool:
    """The closed form is used when the other axes carry at least :data:`RELU_REST_MIN` of the
    target direction (|beta| against |bz|, its spike part): the Gaussian of width |beta| then
    smooths the kink into an entire function of the spike coordinates."""
    nb = float(np.linalg.norm(beta))
    return nb > 0 and nb >= RELU_REST_MIN * max(nb, float(np.linalg.norm(bz)))


def relu_rest(a: np.ndarray, beta: np.ndarray, f: np.ndarray, delta: float
              ) -> tuple[np.ndarray, ...]:
    """``(e0, e1, e2)`` of ``steps.advance``'s node terms for the target relu(z1), z1 = a +
    beta . R with R ~ N(0, I) on the other axes, exactly (docs/THEORY.md §12.4): with
    b = |beta|, x = a / b, E relu = a Phi(x) + b phi(x), E[relu R] = beta Phi(x) (Stein),
    E relu^2 = (a^2 + b^2) Phi(x) + a b phi(x); e = relu - f, E R = 0."""
    G0, Phi, e2 = step_quadrature.relu_rest_sums(a, float(np.linalg.norm(beta)), f, delta)
    return G0, Phi[:, None] * beta[None, :], e2


def rotation(Mmat: np.ndarray, c: np.ndarray, sigma: Function, checked: bool, h0: float,
             u_max: float) -> np.ndarray | None:
    """``step_quadrature.spike_rotation``: a sigma without kinks, the checked lattice (moments'
    widths as in ``step_rules.start``; erf(a z + b): c + 1/(4 a^2))."""
    if sigma.kinks or not checked or not np.all(np.asarray(c) > 0):
        return None
    ab = step_quadrature.erf_affine(sigma)
    c_eff = np.asarray(c) + (0.25 / ab[1] ** 2 if ab is not None else step_rules.SIGMA_SCALE**2)
    return step_quadrature.spike_rotation(Mmat, c_eff, h0, step_rules.SPAN, step_rules.H_MAX, u_max)
