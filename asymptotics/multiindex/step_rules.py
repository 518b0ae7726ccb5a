"""Quadrature rules of one giant step's integrals (docs/THEORY.md §12.4, "The rules of one step").

The integrals of :func:`asymptotics.multiindex.steps.advance` run over the r spike axes (the
groups' pre-activations depend on these) and the other axes (the target alone does).

* **Spike axes**: a product trapezoid rule whose step is set per axis from how fast the
  xi-moments vary along it (the spike map's column norm against the bulk's smoothing width,
  and the period of the xi rule's ripples), never finer than the default step of that r. The
  lattice holds 0 and is nested: its nodes with even indices on the axes coarser than the
  default step form the rule of twice those steps, so the step's new state is computed from
  both at no extra cost. The trapezoid rule of an analytic integrand converges geometrically in
  1/h (the error of h is about the square of the error of 2 h), so the rule is accepted when
  both states agree to :data:`CHECK_TOL` of each array's largest entry; otherwise the steps
  shrink (:func:`next_steps`), down to the default lattice
  (:func:`asymptotics.multiindex.steps.trapezoid`), which is then used unchecked.
* **The xi rule**: a rule with nodes ``xi_i`` gives moments ``sum_i w_i sigma(sqrt(c) xi_i + M)``
  that ripple in M with period ``sqrt(c) (xi_{i+1} - xi_i)`` (:func:`ripple`); for a wide bulk
  a group whose Gauss-Hermite rule ripples takes the trapezoid rule :func:`xi_trapezoid`, and
  the lattice resolves what ripple is left (:func:`first_steps`).
* **Other axes**: for a target that is analytic (no kink) and polynomial in all its variables
  but those of a set N whose directions span at most one other axis, the other axes are rotated
  so that the variables of N see one axis (Gauss-Hermite, ``n_smooth`` nodes) and the rest see
  the target only polynomially (``polynomial_spikes.triangular_span``: exact Gauss-Hermite);
  unseen axes are dropped. A polynomial target: N empty. Else the given tensor rule.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache

import numpy as np

from asymptotics.coefficients.functions import Function
from asymptotics.coefficients.gauss_rules import gauss_hermite
from asymptotics.core import group_checks, meta
from asymptotics.multiindex.compiled.lattice import kept_nodes
from asymptotics.multiindex.polynomial_spikes import triangular_span
from asymptotics.spiked.coefficients import tensor_rule

#: the coarsest step, the aliasing margin (Gaussian spectra below e^-40), the agreement of the
H_MAX = 0.5  # rules of h and 2 h required, the weights kept (relative to the largest)
SPAN = math.sqrt(80.0)
CHECK_TOL = 1e-8
#: the agreement with the sub-rule at which a lattice is accepted (the rule of h is off by about
#: the square of that, geometric in 1/h); a refused lattice is refined towards CHECK_TOL
ACCEPT_TOL = 1e-6
#: the xi rule's ripples that the spike lattice must resolve (relative to each moment's scale)
RIPPLE_TOL = 1e-13
RIPPLE_MAX = 1e-10
XI_STEP = 0.25  # the spacing of the nodes sqrt(c) xi_i of the xi trapezoid rule (xi_trapezoid)
PRUNE = 1e-18
#: the most Gauss-Hermite nodes of a weak spike axis (graded.weak_axes; beyond: step H_MAX)
WEAK_MAX = 32
#: a direction of the other axes shorter than this is not seen by the target
SEEN = 1e-14
#: the width on which a sigma without kinks varies (tanh, erf, softplus: ~1; its moments at a
#: bulk c vary on sqrt(c + SIGMA_SCALE^2); a sigma varying faster is caught by the check)
SIGMA_SCALE = 0.5


def check_size(r: int, h: float, n_rest: int, m: int, u_max: float, what: str) -> None:
    """The default rules' size refused above ``group_checks``' limits (their count of nodes in
    the pruned ball, exact near the limit)."""
    ball = math.pi ** (r / 2) / math.gamma(r / 2 + 1) * (2 * math.log(1 / PRUNE)) ** (r / 2)
    ball /= h**r
    if ball * float(n_rest) ** m > group_checks.MAX_EVALUATIONS / 2:
        x = np.arange(-u_max, u_max + h / 2, h)
        w = np.exp(-0.5 * x * x)
        wts = w
        for _ in range(r - 1):
            wts = np.multiply.outer(wts, w)
        ball = int(np.count_nonzero(wts > PRUNE * wts.max()))
    group_checks.quadrature_size(ball * float(n_rest) ** m, int(float(n_rest) ** m), what)


def start(direct: Callable[..., np.ndarray], sigma: Function, c: np.ndarray, Mmat: np.ndarray,
          h0: float, xi: np.ndarray, wxi: np.ndarray, u_max: float
          ) -> tuple[np.ndarray | None, list | None]:
    """``(steps, rules)``: the first steps of the spike lattice (:func:`first_steps` with each
    group's :func:`ripple` over its range of shifts; None: the default lattice) and each group's
    xi rule (None: ``xi, wxi``; for a sigma without kinks whose rule ripples, the trapezoid
    rule :func:`xi_trapezoid` when it ripples less)."""
    if not np.all(np.asarray(c) > 0):
        return None, None
    ripples, rules, dxi = xi_rules(direct, sigma, c, Mmat, xi, wxi, u_max)
    if not sigma.kinks and np.all(ripples <= RIPPLE_MAX):
        # a smooth sigma's moments vary on the scale sqrt(c + SIGMA_SCALE^2) (the bulk's
        # Gaussian and sigma's own width; a narrow bulk does not make them vary faster)
        c = np.asarray(c, dtype=np.float64) + SIGMA_SCALE**2
    return first_steps(Mmat, c, h0, ripples, dxi), rules


def xi_rules(direct: Callable[..., np.ndarray], sigma: Function, c: np.ndarray,
             Mmat: np.ndarray, xi: np.ndarray, wxi: np.ndarray, u_max: float
             ) -> tuple[np.ndarray, list, float]:
    """``(ripples, rules, dxi)`` of :func:`start`: each group's ripple and xi rule, and the
    least node spacing of the rules in use."""
    span = u_max * np.sqrt(np.sum(Mmat * Mmat, axis=1))
    ripples, rules = [], []
    for cg, sg in zip(c, span, strict=True):
        sc = group_checks.bulk_scale(float(np.sqrt(cg)), sigma.name)
        rp, rule = ripple(direct, sigma, sc, xi, wxi, sg, "xi"), None
        if rp > RIPPLE_TOL and not sigma.kinks:
            t, w = xi_trapezoid(sc)
            rt = ripple(direct, sigma, sc, t, w, sg, "xi-trapezoid")
            if rt < rp:
                rp, rule = rt, (t, w, "xi-trapezoid")
        ripples.append(rp)
        rules.append(rule)
    dxi = min([float(np.min(np.diff(np.sort(xi))))]
              + [float(r[0][1] - r[0][0]) for r in rules if r is not None])
    return np.array(ripples), rules, dxi


def xi_trapezoid(sc: float) -> tuple[np.ndarray, np.ndarray]:
    """A trapezoid rule for xi ~ N(0, 1) on [-9.5, 9.5], step ``XI_STEP / sc``: nodes ``sc xi_i +
    M`` XI_STEP apart whatever the bulk (ripples as Gauss-Hermite's at sc <= 1; it would need
    ~ sc^2 times its nodes)."""
    step = min(0.5, XI_STEP / sc)
    t = np.arange(-math.floor(9.5 / step), math.floor(9.5 / step) + 1) * step
    w = np.exp(-0.5 * t * t)
    return t, w / w.sum()


def spike_rule(hs: np.ndarray | None, h0: float, u_max: float, terms: Callable,
               update: Callable, default: Callable, check: Callable | None = None
               ) -> tuple[np.ndarray, ...]:
    """The step's new state from the lattice of steps ``hs`` once it agrees with its sub-rule
    (module docstring; refined by :func:`next_steps`), else from the default rule
    ``default()``: ``update(U, w, *terms(U))``. ``check(U, w, *terms(U), rows)``: a sub-rule's
    update from its rows of the node arrays (default: ``update`` on them taken; it only decides)."""
    check = check or (lambda U, w, *x: update(*subset(U, w, x[:-1], x[-1])))
    while hs is not None and (np.any(hs > h0) or np.any(hs < 0)):
        U, wu, checks = lattice_checks(hs, u_max, h0)
        t = terms(U)
        new = update(U, wu, *t) if any(c[0] is None for c in checks) else None
        diff = 0.0
        for ia, wa, ib, wb in checks:  # each pair of rules must agree
            one = new if ia is None else check(U, wa, *t, ia)
            two = check(U, wb, *t, ib)
            diff = max(diff, difference((one[0], one[1] @ one[1].T, one[2]),
                                        (two[0], two[1] @ two[1].T, two[2])))
        if diff <= ACCEPT_TOL:
            return new if new is not None else update(U, wu, *t)
        hs = next_steps(hs, diff, h0)
    U, wu = default()
    return update(U, wu, *terms(U))


def subset(U: np.ndarray, w: np.ndarray, t: tuple, idx: np.ndarray) -> tuple[np.ndarray, ...]:
    """``(U[idx], w, *(x[idx] for x in t))``, the rows taken by ``np.take`` (the same arrays)."""
    return (np.take(U, idx, axis=0), w, *(np.take(x, idx, axis=0) for x in t))


def first_steps(Mmat: np.ndarray, c: np.ndarray, h0: float, ripples: np.ndarray,
                dxi: float, span: float = SPAN, h_max: float = H_MAX) -> np.ndarray | None:
    """Per spike axis, the first step to try: ``2 pi / (SPAN sqrt(1 + 4 b^2))`` with ``b`` the
    largest ``|M_gi| / sqrt(c_g)`` over the groups (four such factors multiply in the
    integrands), at most :data:`H_MAX`, at least ``h0``. Where a group's xi-moments carry the
    ripples of the xi rule (``ripples``: :func:`ripple` per group; node spacing ``dxi``: period
    ``sqrt(c) dxi`` in the shift) above :data:`RIPPLE_TOL` the lattice resolves them with the
    same margin: ``2 pi / h >= 2 pi b / dxi + SPAN sqrt(1 + 4 b^2)``. None (the default lattice)
    when a bulk is (near) zero or a ripple exceeds :data:`RIPPLE_MAX` (a kinked sigma: its
    rule's moments have kinks)."""
    c = np.asarray(c, dtype=np.float64)
    ripples = np.asarray(ripples, dtype=np.float64)
    if not np.all(c > 1e-8) or len(ripples) != len(c) or not np.all(ripples <= RIPPLE_MAX):
        return None
    ratio = np.abs(Mmat) / np.sqrt(c)[:, None]
    b = np.max(ratio, axis=0)
    width = span * np.sqrt(1.0 + 4.0 * b * b)
    h = 2.0 * math.pi / width
    if np.any(ripples > RIPPLE_TOL):
        br = np.max(ratio[ripples > RIPPLE_TOL], axis=0)
        h = np.minimum(h, 2.0 * math.pi / (2.0 * math.pi * br / dxi + width))
    return np.maximum(np.minimum(h, h_max), h0)


#: per (sigma, scale, xi rule, range): the ripple of the xi rule's moments
_RIPPLES: dict = {}


def clear_cache() -> None:
    """Forget the ripples measured."""
    _RIPPLES.clear()


def ripple(direct: Callable[..., np.ndarray], sigma: Function, sc: float, xi: np.ndarray,
           wxi: np.ndarray, span: float, name: str = "xi") -> float:
    """How far the moments ``direct(sigma, sc, M, xi, wxi)`` (xi_lines' columns) of the xi rule
    are from a fine trapezoid rule's in xi (step ``min(0.1, XI_STEP / (2 sc))`` on [-12, 12]),
    relative to their largest value, for |M| <= span: nodes ``sc xi_i + M`` leave ripples of
    period ``sc (xi_{i+1} - xi_i)`` in M (and a kinked sigma kinks)."""
    key = (sigma, round(sc, 12), name, xi.shape[0], math.ceil(span))
    try:
        if key in _RIPPLES:
            return _RIPPLES[key]
    except TypeError:
        key = None
    M = np.linspace(-math.ceil(span), math.ceil(span), 61) + 0.0137
    step = min(0.1, 0.5 * XI_STEP / sc)
    t = np.arange(-12.0, 12.0 + step / 2, step)
    wt = np.exp(-0.5 * t * t)
    coarse = direct(sigma, sc, M, xi, wxi, least=0)  # compiled sums: the rules' choice alone
    fkey = None if key is None else ("fine", direct, *key[:2], key[4])  # one per group and step
    fine = _RIPPLES.get(fkey) if fkey is not None else None
    fine = direct(sigma, sc, M, t, wt / wt.sum(), least=0) if fine is None else fine
    scale = np.maximum(np.max(np.abs(fine), axis=0), 1e-300)
    out = float(np.max(np.max(np.abs(coarse - fine), axis=0) / scale))
    if key is not None:
        if len(_RIPPLES) > 512:
            _RIPPLES.clear()
        _RIPPLES[key], _RIPPLES[fkey] = out, fine
    return out


def lattice(h: np.ndarray, u_max: float, h0: float) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                              np.ndarray]:
    """``(nodes, weights, sub, sub_weights)``: the product trapezoid rule for N(0, I_r) on
    [-u_max, u_max]^r with nodes ``h_i j`` (pruned below :data:`PRUNE` of the largest weight),
    and the nodes and weights of its sub-rule: steps ``2 h_i`` (even j) on the axes coarser
    than the default step ``h0``, the same nodes on the others (not checked)."""
    pts, wts, checks = lattice_checks(h, u_max, h0)
    return pts, wts, checks[0][2], checks[0][3]


def axis_weights(h: np.ndarray, u_max: float, h0: float) -> tuple[list, list]:
    """Per axis of :func:`lattice_checks`: its nodes and its four rules' weights on them."""
    axes, w1, w2, w3, w4 = [], [], [], [], []
    for hi in h:
        if hi < 0:
            (xn, wn), (xm, wm) = gauss_hermite(int(-hi)), gauss_hermite(int(-hi) // 2)
            axes.append(np.concatenate([xn, xm]))
            w1.append(np.concatenate([wn, 0.0 * wm]))
            w2.append(w1[-1]), w3.append(w1[-1])
            w4.append(np.concatenate([0.0 * wn, wm]))
            continue
        j = np.arange(-math.floor(u_max / hi + 1e-9), math.floor(u_max / hi + 1e-9) + 1)
        x = hi * j
        w = np.exp(-0.5 * x * x)
        ev = (j % 2) == 0 if hi > h0 else np.ones(len(j), dtype=bool)
        axes.append(x)
        w1.append(w / w.sum())
        w2.append(np.where(ev, w, 0.0) / w[ev].sum())
        w3.append(np.where((j % 2) == 0, w, 0.0))
        w4.append(w3[-1])
    return axes, [w1, w2, w3, w4]


def lattice_checks(h: np.ndarray, u_max: float, h0: float) -> tuple[np.ndarray, np.ndarray, list]:
    """``(nodes, weights, checks)``: :func:`lattice`'s rule and its checks ``(ia, wa, ib, wb)``,
    rules (node indices, weights; ``ia`` None: the rule itself) that must agree: its sub-rule;
    with an axis ``h_i = -n`` (Gauss-Hermite of n nodes, ``graded.weak_axes``) also the rules
    of n and n / 2 nodes on it, both with the even nodes on every other axis (nodes of the
    rule itself, but for the n / 2 nodes')."""
    axes, (w1, w2, w3, w4) = axis_weights(h, u_max, h0)
    weak = bool(np.any(np.asarray(h) < 0))
    # each rule's weights ((w_0 w_1) w_2) ... at the nodes kept (C order; no grid formed)
    pts, kept = kept_nodes(axes, [w1, w2] + ([w3, w4] if weak else []), PRUNE, 3 if weak else None)
    wts, subs = kept[0], []
    for ws in kept[1:]:  # (the temporaries on buffers kept per thread: core.meta.scratch)
        on = np.greater(ws, PRUNE * ws.max(), out=meta.scratch("on", ws.shape, bool))
        x = np.take(ws, sub := np.flatnonzero(on), out=meta.scratch("sub", len(sub)), mode="clip")
        subs.append((sub, np.divide(x, x.sum(), out=meta.scratch("sub_w", sub.shape))))
    checks = [(None, None, *subs[0])] + ([(*subs[1], *subs[2])] if weak else [])
    if weak and not np.any(np.asarray(h) > h0):  # no axis coarsened: the sub-rule is the rule
        checks = checks[1:]
    return pts, np.divide(wts, wts.sum(), out=meta.scratch("wts", wts.shape)), checks


def difference(new: tuple[np.ndarray, ...], coarse: tuple[np.ndarray, ...]) -> float:
    """The largest difference of an array of ``new`` from ``coarse`` relative to its largest
    entry (the scale floored at 1e-10 of the largest entry over all arrays)."""
    top = max(float(np.max(np.abs(x), initial=0.0)) for x in new)
    out = 0.0
    for x, y in zip(new, coarse, strict=True):
        scale = max(float(np.max(np.abs(x), initial=0.0)), 1e-10 * top, 1e-300)
        d = float(np.max(np.abs(x - y), initial=0.0)) / scale
        out = max(out, d) if d == d else math.inf
    return out


def next_steps(h: np.ndarray, diff: float, h0: float, tol: float = CHECK_TOL) -> np.ndarray:
    """Finer steps after a refused check: the error of a geometric rule is ``exp(-A / h)``, so
    steps ``h log(1/diff) / log(1/CHECK_TOL)`` bring the rule of twice the steps to the
    tolerance (times 0.95, and between 0.3 h and 0.9 h), never below ``h0``; a Gauss-Hermite
    axis (``-n``): n / f nodes, the trapezoid's H_MAX above :data:`WEAK_MAX`."""
    f = 0.3
    if 0.0 < diff < 1.0:
        f = min(0.9, max(0.3, 0.95 * math.log(diff) / math.log(tol)))
    h = np.asarray(h, dtype=np.float64)
    out = np.maximum(h * f, h0)
    for i in np.flatnonzero(h < 0):
        n = 2 * math.ceil(-h[i] / 2 / f)
        out[i] = -n if n <= WEAK_MAX else H_MAX
    return out


def smooth_variables(g: Function | Callable, target: object, k: int,
                     degrees: tuple[int | None, ...] | None) -> tuple[int | None, ...] | None:
    """Per target variable its polynomial degree or None (not polynomial in it), when the target
    is analytic; None when it may have a kink (or its form is unknown). The steps' rule on the
    other axes is then exact for a polynomial one-variable target (``z1 + 0.5*z1**2``)."""
    if isinstance(g, Function):  # one variable: a polynomial expression has a degree
        if g.kinks or g.identity is not None:
            return None
        return expression_degree(g.expression) if g.expression else (None,)
    if not isinstance(target, str) or degrees is None or len(degrees) != k:
        return None
    return tuple(degrees) if _analytic(target) else None


@lru_cache(maxsize=64)
def expression_degree(expression: str) -> tuple[int | None]:
    """``(degree,)`` of a one-variable target expression in z that is a polynomial, else
    ``(None,)`` (Gauss-Hermite with degree + 1 nodes is exact on the other axes)."""
    from asymptotics.coefficients.functions import to_sympy

    try:
        expr, symbols = to_sympy(expression, ("z",))
        z = symbols["z"]
        return (int(expr.as_poly(z).degree()),) if expr.is_polynomial(z) else (None,)
    except Exception:  # noqa: BLE001 (sympy raises many kinds on non-polynomials)
        return (None,)


def total_degree(degree: int | None, per: tuple[int | None, ...] | None) -> int | None:
    """The target's total degree: ``degree``, else the sum of ``per`` when all are known."""
    if degree is not None or per is None or any(d is None for d in per):
        return degree
    return int(sum(per))


@lru_cache(maxsize=64)
def _analytic(text: str) -> bool:
    """No kinked function (max, abs, sign, ...) in the target's expression."""
    import sympy as sp

    from asymptotics.coefficients.targets import parse_target

    expr, _ = parse_target(text)
    return not expr.has(sp.Max, sp.Min, sp.Abs, sp.sign, sp.Heaviside, sp.Piecewise, sp.floor,
                        sp.ceiling)


def other_axes(Bo: np.ndarray, k: int, n_rest: int, per: tuple[int | None, ...] | None,
               n_smooth: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(R, w, B)``: the rule on the other axes (module docstring) in its own coordinates and
    the rows ``B`` (its axes x (k + q)) of the basis that map them to (z, h); ``Bo`` (m x
    (k + q)) are the other axes' rows. ``per``: :func:`smooth_variables` (None: the tensor rule
    of ``n_rest`` nodes on all m axes, ``B = Bo``)."""
    m = Bo.shape[0]
    if m == 0:
        return np.zeros((1, 0)), np.ones(1), Bo
    split = per is not None and len(per) == k
    if split:  # a polynomial target too: its N is empty (the axes it does not see dropped)
        N = [j for j in range(k) if per[j] is None]
        D = sum(int(per[j]) for j in range(k) if per[j] is not None)
        QN = _span(Bo[:, N])
        split = QN.shape[1] <= 1
    if not split:
        R, w = tensor_rule(m, n_rest)
        return R, w, Bo
    P = sorted((j for j in range(k) if per[j] is not None), key=lambda j: -int(per[j]))
    rest = Bo[:, P] - QN @ (QN.T @ Bo[:, P]) if P else np.zeros((m, 0))
    QP, nodes = triangular_span(rest, [int(per[j]) for j in P], D, SEEN)
    Q = np.hstack([QN, QP])
    if Q.shape[1] == 0:
        return np.zeros((1, 0)), np.ones(1), np.zeros((0, Bo.shape[1]))
    R, w = tensor_rule(Q.shape[1], (n_smooth,) * QN.shape[1] + tuple(nodes))
    return R, w, Q.T @ Bo


def _span(A: np.ndarray) -> np.ndarray:
    """An orthonormal basis (columns) of the span of the columns of ``A`` (directions shorter
    than :data:`SEEN` dropped)."""
    if A.shape[1] == 0:
        return np.zeros((A.shape[0], 0))
    u, s, _ = np.linalg.svd(A, full_matrices=False)
    return u[:, s > SEEN]


#: bounded analytic targets of one variable whose other-axes sums (>= SMOOTH_REST_NODES nodes)
BOUNDED_TARGETS = ("tanh(z)", "sin(z)", "cos(z)", "erf(z)", "sigmoid(z)")  # are interpolated
SMOOTH_REST_NODES = 32


def smooth_target(g: Function | Callable, n_rest: int) -> bool:
    """Whether :func:`smooth_rest` takes the other axes' sums (a registered bounded analytic
    target of one variable, a rule of at least :data:`SMOOTH_REST_NODES` nodes)."""
    return (isinstance(g, Function) and g.identity is None and not g.kinks
            and g.expression in BOUNDED_TARGETS and n_rest >= SMOOTH_REST_NODES)


def smooth_rest(g: Function, a: np.ndarray, R: np.ndarray, wr: np.ndarray, bz: np.ndarray,
                f: np.ndarray, delta: float) -> tuple[np.ndarray, ...]:
    """``(e0, e1, e2)`` of ``steps.advance``'s node terms for a target g(z1), z1 = a + R bz:
    the other axes' sums G0 = E g, G1 = E[g R], G2 = E g^2 by the rule (R, wr) depend on a alone,
    so they are taken from ``xi_lines.on_pieces`` (the rule's checked piecewise Chebyshev
    interpolant, to 1e-13 of each sum's scale; g bounded: that scale is g's), and e = g - f
    expanded: e0 = G0 - f, e1 = G1 - f E R, e2 = G2 - 2 f G0 + f^2 + delta (the rule's weights)."""
    from asymptotics.multiindex.xi_lines import on_pieces

    zR, W = R @ bz, np.column_stack([wr, wr[:, None] * R])
    def direct(pts: np.ndarray) -> np.ndarray:  # in blocks of ~131k evaluations (memory)
        rows, out = max(1, 131_072 // len(zR)), np.empty((len(pts), W.shape[1] + 1))
        for lo in range(0, len(pts), rows):
            V = g(pts[lo:lo + rows, None] + zR[None, :])
            out[lo:lo + rows] = np.column_stack([V @ W, (V * V) @ wr])
        return out

    G = on_pieces(direct, np.ascontiguousarray(a), 1.0, None)
    sw, sR = float(wr.sum()), wr @ R
    e0 = G[:, 0] - f * sw
    e1 = G[:, 1:-1] - f[:, None] * sR[None, :]
    e2 = G[:, -1] - 2.0 * f * G[:, 0] + f * f * sw + delta * sw
    return e0, e1, e2

