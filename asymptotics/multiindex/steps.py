"""Several giant steps with fresh batches as K neuron groups and r spikes (docs/THEORY.md §12).

Protocol (THEORY.md §1, steps repeated): rows of ``W0`` on the unit sphere, a fixed readout
``a_i = eps_i / sqrt(p)`` with ``eps_i`` drawn from a finite support (``values``, ``fractions``;
the constant readout is eps = 1), then for ``t = 1..T`` one gradient step with
``eta_t = eta_tilde_t p`` on a fresh batch of ``n0 = alpha0 d`` samples of
``y = g(theta_1 . x, ..., theta_k . x) + sqrt(delta) xi``.

The state after each step: group ``g`` has rows ``w_i = sqrt(c_g) G_i + s_g`` with a common
spike ``s_g``, read in coordinates ``s_g = Theta^T a_g + (outside part)``; only the Gram matrix
``L L^T`` of the outside parts matters, so ``L`` (K x q, q <= K) is kept in any orthonormal
basis. One step (population gradient plus, at finite alpha0, the batch's fluctuation):

    e(x)   = y - sum_h pi_h eps_h F_h(s_h . x),        F_g(m) = E_xi sigma(sqrt(c_g) xi + m)
    a_g   += eta eps_g E[e m1_g z],   L_g += eta eps_g E[e m1_g h]     (m1_g = E_xi sigma')
    sqrt(c_g) -> sqrt(c_g) + eta eps_g E[e m2_g]                       (m2_g = E_xi[xi sigma'])
    c_g   += eta^2 eps_g^2 E[(e^2 + delta) v_g] / alpha0              (v_g = Var_xi sigma')
    new outside directions with Gram eta^2 eps_g eps_h E[(e^2 + delta) m1_g m1_h] / alpha0

with ``(z, h)`` independent standard Gaussians (target coordinates, outside coordinates). With
``alpha0 = inf`` this is the exact population recursion; at finite alpha0 the bulk noise is a
closure (it treats every step's row noise as isotropic, as the one-step mapping of §3 does).
T = 1 reproduces :func:`asymptotics.step.srf.step_moments` for every finite-support readout.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from asymptotics.coefficients import step_kernels, step_quadrature
from asymptotics.coefficients.functions import Function, get_function
from asymptotics.coefficients.gauss_rules import gauss_hermite
from asymptotics.core import checks, group_checks, meta
from asymptotics.multiindex import graded, polynomial_spikes, reused, step_rules, xi_lines
from asymptotics.multiindex.compiled.poly_rows import poly_e_rows as e_rows  # poly: e compiled
from asymptotics.multiindex.xi_lines import fits, xi_moments
from asymptotics.spiked.problem import resolve_target, target_degrees
from asymptotics.spiked.readouts import Readout, parse_readout

MAX_STEPS, XI_NODES, RANK_TOL = 8, 96, 1e-10
U_MAX = 9.0  # the trapezoid rule's range on the spike axes
TRAPEZOID_STEP = {0: 1.0, 1: 0.04, 2: 0.08, 3: 0.2}  # its step, by the number r of spike axes
REST_NODES = {1: 128, 2: 48, 3: 24, 4: 12}  # other axes' nodes each (non-polynomial g), by count
CHUNK, BLOCK = 2_000_000, 131_072  # nodes per block: the network route's groups; a step's
#: the largest product trapezoid rule (nodes; 73^4 would need tens of GB), spike axes it allows
MAX_NODES, MAX_SPIKE_AXES = 4_000_000, 3
SPLIT_MIN = 1_000_000  # target evaluations from which a split target is split (cheaper below)
FUSED = 20_000  # nodes from which a rule's sums take one compiled pass (step_kernels.node_sums)


@dataclass(frozen=True)
class GroupState:
    """Groups after ``step`` steps: spike target coordinates ``a`` (K x k), outside coordinates
    ``L`` (K x q, orthonormal basis of the outside span), bulk variances ``c`` (K)."""

    step: int
    a: np.ndarray = field(repr=False)
    L: np.ndarray = field(repr=False)
    c: np.ndarray = field(repr=False)

    @property
    def spike_gram(self) -> np.ndarray:
        """``<s_g, s_h>`` (K x K)."""
        return self.a @ self.a.T + self.L @ self.L.T

    def mean_overlaps(self, fractions: Sequence[float]) -> np.ndarray:
        """``mean_i |<w_i, theta_j>| / |w_i|`` over the rows as d -> infinity (k): group g
        contributes ``|a_gj| / sqrt(c_g + |s_g|^2)`` with weight ``pi_g``."""
        norms = np.sqrt(self.c + np.diag(self.spike_gram))
        return np.asarray(fractions, dtype=np.float64) @ (np.abs(self.a) / norms[:, None])

    def spiked_model(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(loadings K x r, overlaps r x k, rotation Q k x k)`` of the K-group model
        (THEORY.md §10.1): ``V`` spans the spikes; target coordinates are rotated, ``z = Q z'``,
        so that the columns of ``overlaps`` are orthogonal (one unlearned direction each)."""
        K, k = self.a.shape
        S = np.hstack([self.a, self.L])
        _, sv, wt = np.linalg.svd(S, full_matrices=False)
        r = int(np.sum(sv > RANK_TOL * max(1.0, sv.max(initial=0.0))))
        if r == 0:
            return np.zeros((K, 1)), np.zeros((1, k)), np.eye(k)
        basis = wt[:r].T  # (k + q) x r, orthonormal columns
        loadings = S @ basis
        gamma = basis[:k].T  # r x k
        _, _, qt = np.linalg.svd(gamma, full_matrices=True)
        Q = qt.T
        return loadings, gamma @ Q, Q


@dataclass(frozen=True)
class StepsMapping:
    """Every state t = 0..T of several giant steps (module docstring) and their parameters."""

    sigma: str
    target: str
    readout: Readout
    alpha0: float
    eta: tuple[float, ...]
    delta: float
    k: int
    states: tuple[GroupState, ...]
    batch: str = "fresh"  # or "reused": every step on the same batch (reused.py)

    @property
    def steps(self) -> int:
        return len(self.states) - 1

    def spiked_params(self, step: int | None = None) -> dict:
        """Keyword arguments of :func:`asymptotics.spiked.risk_spiked` after ``step`` steps
        (default: all): loadings, bulk, fractions, overlaps and the rotated target."""
        t = self.steps if step is None else checks.integer("step", step, 0)
        if not (0 <= t <= self.steps):
            raise ValueError(f"step must be in 0..{self.steps}, got {step}")
        return group_params(self.states[t], self.target, self.readout.weights)


def group_params(state: GroupState, target: str, fractions: Sequence[float]) -> dict:
    """Keyword arguments of :func:`asymptotics.spiked.risk_spiked` for the groups ``state``
    (fractions ``fractions``) and the target text ``target`` (rotated, THEORY.md §12.3)."""
    loadings, overlaps, Q = state.spiked_model()
    return dict(loadings=loadings.tolist(), bulk=state.c.tolist(), fractions=list(fractions),
                overlaps=overlaps.tolist(), target=rotated_target(target, Q))


@dataclass(frozen=True, eq=False)
class RotatedTarget:
    """``g'(z') = g(Q z')`` for a target text ``g`` in z1..zk (vectorised over ``(..., k)``)."""

    text: str
    Q: np.ndarray

    @property
    def k(self) -> int:
        return self.Q.shape[0]

    @property
    def name(self) -> str:
        return f"{self.text} (rotated)"

    @property
    def degrees(self) -> tuple[int | None, ...]:
        """Per rotated variable, a bound on the degree (the total degree, when polynomial)."""
        per = target_degrees(self.text)
        return (None if any(d is None for d in per) else int(sum(per)),) * self.k

    def __call__(self, Z: np.ndarray) -> np.ndarray:
        g, _, _ = resolve_target(self.text)
        return evaluate(g, np.asarray(Z, dtype=np.float64) @ self.Q.T)


def rotated_target(text: str, Q: np.ndarray) -> str | RotatedTarget:
    """The text itself when ``Q`` is the identity, else a :class:`RotatedTarget`."""
    if np.allclose(Q, np.eye(Q.shape[0]), atol=1e-14):
        return text
    return RotatedTarget(text, np.ascontiguousarray(Q))


def evaluate(g: Function | Callable, Z: np.ndarray) -> np.ndarray:
    """The target at the points ``Z`` (..., k): a one-variable Function at ``Z[..., 0]``."""
    return np.asarray(g(Z[..., 0]) if isinstance(g, Function) else g(Z), dtype=np.float64)


def eta_schedule(eta: float | Sequence[float], steps: int) -> tuple[float, ...]:
    return group_checks.steps_eta(eta, steps)  # eta_tilde of every step (checked)


def trapezoid(r: int, h: float) -> tuple[np.ndarray, np.ndarray]:
    """A product trapezoid rule for N(0, I_r) on [-U_MAX, U_MAX]^r with step h (spectral)."""
    if r == 0:
        return np.zeros((1, 0)), np.ones(1)
    x = np.arange(-U_MAX, U_MAX + h / 2, h)
    wts = w = (w := np.exp(-0.5 * x * x)) / w.sum()
    if (fast := step_kernels.product_rule(x, w, r, 1e-18)) is not None:  # the same, compiled
        return fast[0], fast[1] / fast[1].sum()
    for _ in range(r - 1):
        wts = np.multiply.outer(wts, w)
    on = wts > 1e-18 * wts.max()  # the nodes kept, in C order: per axis its coordinates
    pts = np.empty((int(np.count_nonzero(on)), r))
    for j in range(r):
        pts[:, j] = np.broadcast_to(x.reshape((-1,) + (1,) * (r - 1 - j)), wts.shape)[on]
    return pts, (kept := wts[on]) / kept.sum()


def factor(gram: np.ndarray) -> np.ndarray:
    """``L`` (K x q) with ``L L^T = gram`` and q its numerical rank."""
    lam, vec = np.linalg.eigh((gram + gram.T) / 2)
    keep = lam > RANK_TOL * max(1.0, lam.max(initial=0.0))
    return vec[:, keep] * np.sqrt(lam[keep])[None, :]


@dataclass(frozen=True)
class Quadrature:
    """Nodes of the step integrals: a trapezoid rule (step ``h``) on the r coordinates the
    groups' pre-activations depend on, Gauss-Hermite (``rest`` nodes) on the others."""

    h: float | None = None
    rest: int | None = None
    xi: int = XI_NODES


def advance(state: GroupState, *, sigma: Function, g: Function | Callable, values: np.ndarray,
            fractions: np.ndarray, eta: float, alpha0: float, delta: float,
            quad: Quadrature = Quadrature(), degree: int | None = None,
            per: tuple[int | None, ...] | None = None, split: object = None) -> GroupState:
    """One giant step on a fresh batch (module docstring, THEORY.md §12.2). The integrals over
    (z, h) in R^(k+q) are taken in a basis whose first r axes span the K spikes: the xi-moments
    depend on those axes only (computed once per trapezoid node), the target on all. The rules:
    :mod:`asymptotics.multiindex.step_rules` (``per``: its ``smooth_variables``)."""
    (K, k), q = state.a.shape, state.L.shape[1]
    S = np.hstack([state.a, state.L])
    _, sv, vt = np.linalg.svd(S, full_matrices=True)
    r = int(np.sum(sv > RANK_TOL * max(1.0, sv.max(initial=0.0))))
    basis = vt.T  # columns: r spike axes, then the rest
    rot = graded.rotation(S @ basis[:, :r], state.c, sigma, quad.h is None and per is not None,
                          TRAPEZOID_STEP.get(r, 0.25), U_MAX)  # a steep group onto one axis
    basis[:, :r] = basis[:, :r] @ (rot if rot is not None else np.eye(r))
    h = quad.h if quad.h is not None else TRAPEZOID_STEP.get(r, 0.25)
    if len(np.arange(-U_MAX, U_MAX + h / 2, h)) ** r > MAX_NODES:
        raise ValueError(f"the groups span r = {r} directions after {state.step} steps; the "
                         f"steps' integrals use a product rule of more than {MAX_NODES:.0e} nodes "
                         f"there (r <= {MAX_SPIKE_AXES} at the default step; a readout with at "
                         f"most {MAX_SPIKE_AXES} values, or fewer steps)")
    degree = step_rules.total_degree(degree, per)  # also a polynomial one-variable target's
    n_rest = quad.rest if quad.rest is not None else (  # exact: degree + 1 (K >= 3) or + 2
        graded.rest_nodes(degree, K) if degree is not None else REST_NODES.get(k + q - r, 8))
    step_rules.check_size(r, h, n_rest, k + q - r, U_MAX, f"step {state.step + 1}")
    Br, Bo = basis[:, :r].T, basis[:, r:].T
    R, wr, Bq = step_rules.other_axes(Bo, k, n_rest, per if quad.rest is None else None,
                                      REST_NODES[1])
    xi, wxi = gauss_hermite(quad.xi)
    Mmat, RzT = S @ basis[:, :r], np.ascontiguousarray((R @ Bq[:, :k]).T)
    W = np.column_stack([wr, wr[:, None] * R])  # (rest, 1 + other axes)
    # relu's target seen by the other axes: their sums in closed form (graded.relu_rest)
    beta = Bq[:, 0] if quad.rest is None and graded.relu_target(g) else None
    beta = beta if beta is not None and graded.relu_rest_ok(beta, Br[:, 0]) else None
    smooth = beta is None and quad.rest is None and step_rules.smooth_target(g, R.shape[0])  # tanh
    poly, split = (split, None) if isinstance(split, step_kernels.Polynomial) else (None, split)
    split = split if quad.rest is None and not smooth and beta is None else None  # g = p + t
    R2, w2 = polynomial_spikes.split_rule(split, step_rules.other_axes, Bo, k, n_rest, per, R, Bq)
    new = meta.scratch  # the per-node work arrays on buffers kept per thread (core.meta)

    def terms(U: np.ndarray) -> tuple[np.ndarray, ...]:
        """Per spike node m1, m2, v (u, K), e0 = E_rest e, e1 = E_rest[e R], E_rest e^2 + delta."""
        M = np.matmul(U, Mmat.T, out=new("M", (len(U), K)))  # on buffers kept per thread
        F, m1, m2, v = xi_moments(sigma, state.c, M, xi, wxi, rules, K >= 3, fits(sigma))
        f, F, M = np.matmul(F, fractions * values, out=new("f", len(U))), None, None
        if beta is not None:
            return (m1, m2, v, *graded.relu_rest(U @ Br[:, 0], beta, f, delta))
        if smooth:
            return m1, m2, v, *step_rules.smooth_rest(g, U @ Br[:, 0], R, wr, Bq[:, 0], f, delta)
        if R2 is not None and U.shape[0] * R.shape[0] >= SPLIT_MIN:
            return (m1, m2, v, *polynomial_spikes.split_rest(split, U @ Br[:, :k], R, wr, R2, w2,
                                                             Bq[:, :k], f, delta))
        (Uz := new("Uz", (k, len(U))))[...] = np.matmul(U, Br[:, :k], out=new("uz", (len(U), k))).T
        e01, e2 = step_kernels.rest_sums(g, evaluate, poly, Uz, RzT, W, wr, f, delta, BLOCK, e_rows)
        return m1, m2, v, e01[:, 0], e01[:, 1:], e2

    def update(U: np.ndarray, wu: np.ndarray, m1: np.ndarray, m2: np.ndarray, v: np.ndarray,
               e0: np.ndarray, e1: np.ndarray, e2: np.ndarray, fused: object = False) -> tuple:
        """(a, outside parts, c) after the step from the rule (U, wu) and its node terms."""
        # on a large rule or a sub-rule's check (``fused``: True, or the sub-rule's rows of the
        # node arrays) the sums for a and the outside Gram in one compiled pass (another order);
        # c's (sqrt(c) + eta eps E[e m2] may cancel) by numpy's, but a check's (it only decides)
        idx, fused = (fused, True) if isinstance(fused, np.ndarray) else (None, fused)
        sums = step_kernels.node_sums(U, wu, m1, m2, v, e0, e1, e2, idx) if fused or len(
            U) >= FUSED else None
        if idx is not None and sums is None:  # not compiled yet: the sub-rule's rows taken
            return update(*step_rules.subset(U, wu, (m1, m2, v, e0, e1, e2), idx), fused=True)
        e_m2, noise_v = sums[2:4] if idx is not None else (np.multiply(wu, e0, out=new(  # kept
            "we0", len(wu))) @ m2, (noise := np.multiply(wu, e2, out=new("we2", len(wu)))) @ v)
        if sums is not None:
            dX, noise_mm = sums[0] @ Br + sums[1] @ Bq, sums[4]
        else:
            wm1 = (wu * e0)[:, None] * m1  # (u, K)
            dX = wm1.T @ (U @ Br) + ((wu[:, None] * m1).T @ e1) @ Bq  # (K, k + q)
            noise_mm = (m1 * noise[:, None]).T @ m1
        sqrt_c, finite = np.sqrt(state.c) + eta * values * e_m2, math.isfinite(alpha0)
        c_new = sqrt_c**2 + (eta**2 * values**2 * noise_v / alpha0 if finite else 0.0)
        outside = state.L + eta * values[:, None] * dX[:, k:]
        if finite:
            outside = np.hstack([outside, factor(eta**2 * np.outer(values, values) * noise_mm
                                                   / alpha0)])
        return state.a + eta * values[:, None] * dX[:, :k], outside, c_new

    cl = graded.closed_moments(sigma, K)  # per None: a kink (the default lattice)
    hs, rules = graded.choose(xi_lines.xi_direct_small if K >= 3 else xi_lines.xi_direct,
                              sigma, state.c, Mmat, h, xi, wxi, U_MAX, cl,
                              quad.h is not None or r == 0 or (per is None and beta is None))
    if beta is not None and hs is not None:  # the smoothed kink's own scale, checked as ever
        hs = graded.relu_rest_steps(hs, Br[:, 0], beta, h, Mmat, state.c, U_MAX)
    rates = step_quadrature.weak_rates(Mmat, state.c, Br[:, :k], degree, per, beta, smooth)
    hs = graded.weak_axes(hs, *rates, U_MAX)
    kink = (graded.relu_target(g) and beta is None and quad.h is None and r == 1  # at u = 0
            and not np.any(Bq[:, 0]))  # step_kernels.kink_split; relu's own K < 3 rule: warned
    rule = lambda: graded.spike_rule(hs, h, U_MAX, terms, update, lambda: trapezoid(r, h),  # noqa
                                     lambda *x: update(*x[:-1], fused=x[-1]))  # rows
    a_new, outside, c_new = (step_kernels.kink_split(terms, update, step_rules.difference, U_MAX,
                             rule if sigma.kinks and K < 3 else None) if kink else rule())
    return GroupState(state.step + 1, a_new, factor(outside @ outside.T) if outside.shape[1]
                      else outside, c_new)


#: the states of every mapping computed in this process, by (parameters, etas so far), shared
#: by every point, curve and grid (a longer run starts from a shorter one)
_CACHE: dict = {}
CACHE_SIZE = 128


def clear_cache() -> None:
    """Forget the cached mappings, xi pieces, ripples and this thread's work buffers."""
    _CACHE.clear(), xi_lines.clear_cache(), step_rules.clear_cache(), meta.release_scratch()


@dataclass(frozen=True)
class MappingInputs:
    """The checked and parsed inputs of a mapping of several steps (THEORY.md §12): shared by
    :func:`steps_mapping` and the network route's groups (``asymptotics.network``)."""

    steps: int
    etas: tuple[float, ...]
    delta: float
    readout: Readout
    sigma: Function
    g: Function | Callable
    k: int
    values: np.ndarray
    fractions: np.ndarray
    degree: int | None
    per: tuple[int | None, ...] | None = None  # step_rules.smooth_variables


def cached_prefix(cache: dict, base: tuple, etas: tuple[float, ...], steps: int
                  ) -> tuple[tuple | None, int]:
    """``(base, done)``: ``base``, or None when a part of it is unhashable (computed, not
    cached), and the most steps t <= ``steps`` whose states ``cache`` holds under
    ``(base, etas[:t])`` (0: none)."""
    try:
        hash(base)
    except TypeError:
        return None, 0
    return base, next((t for t in range(steps, 0, -1) if (base, etas[:t]) in cache), 0)


def mapping_inputs(sigma: str | Function, target: str, *, steps: int, alpha0: float,
                   eta: float | Sequence[float], delta: float, readout: object,
                   quad: Quadrature) -> MappingInputs:
    """Check and parse the parameters of a mapping (one-line errors naming the parameter)."""
    steps = checks.integer("steps", steps, 1)
    if steps > MAX_STEPS:
        raise ValueError(f"steps must be <= {MAX_STEPS}, got {steps}")
    if not (isinstance(alpha0, (int, float, np.integer, np.floating)) and alpha0 > 0):
        raise ValueError(f"alpha0 must be > 0 (inf: the large-batch limit), got {alpha0!r}")
    group_checks.instance("quad", quad, Quadrature, "Quadrature(h=0.05)")
    etas = eta_schedule(eta, steps)
    delta = checks.real("delta", delta, 0.0)
    ro = parse_readout(readout)
    s = checks.named("sigma", get_function, sigma)
    if not isinstance(target, str):
        raise TypeError(f"target must be an expression in z1..zk for several steps, got {target!r}")
    g, k, _ = checks.named("target", resolve_target, target)
    per = target_degrees(target) if not isinstance(g, Function) else (None,)
    degree = None if any(dg is None for dg in per) else int(sum(per))
    return MappingInputs(steps, etas, delta, ro, s, g, k, np.asarray(ro.values, dtype=np.float64),
                         np.asarray(ro.weights, dtype=np.float64), degree,
                         step_rules.smooth_variables(g, target, k, per))


def steps_mapping(sigma: str | Function, target: str, *, steps: int, alpha0: float,
                  eta: float | Sequence[float], delta: float = 0.0,
                  readout: object = "constant", quad: Quadrature = Quadrature(),
                  batch: str = "fresh") -> StepsMapping:
    """The groups after ``t = 0..steps`` giant steps (THEORY.md §12); ``eta``: eta_tilde, one
    number or one per step; ``alpha0 = inf`` is the large-batch (population) limit;
    ``batch="reused"``: every step on the same batch (THEORY.md §14)."""
    m = mapping_inputs(sigma, target, steps=steps, alpha0=alpha0, eta=eta, delta=delta,
                       readout=readout, quad=quad)
    steps, etas, delta, ro, s, g, k = m.steps, m.etas, m.delta, m.readout, m.sigma, m.g, m.k
    values, fractions, degree, K = m.values, m.fractions, m.degree, len(m.values)
    if batch != "fresh":  # every step on the same batch: THEORY.md §14 (reused.py)
        reused.check_batch(batch)
        reused.check_reused(steps, delta)
    # a reused batch: the first step as on a fresh batch, the second below (THEORY.md §14)
    reuse = batch == "reused" and steps >= 2 and math.isfinite(alpha0)
    n_fresh = 1 if reuse else steps
    base, done = cached_prefix(_CACHE, (s, target, float(alpha0), delta, ro, quad), etas, n_fresh)
    states = list(_CACHE[(base, etas[:done])]) if done else [
        GroupState(0, np.zeros((K, k)), np.zeros((K, 0)), np.ones(K))]
    st = states[-1]
    for t in range(done, n_fresh):
        with meta.blas_limit(1), group_checks.in_float64(  # one BLAS thread: same numbers
                "the steps' mapping", eta=etas, alpha0=float(alpha0), delta=delta, readout=ro.name):
            st = advance(st, sigma=s, g=g, values=values, fractions=fractions, eta=etas[t],
                         alpha0=float(alpha0), delta=delta, quad=quad, degree=degree,
                         per=m.per, split=polynomial_spikes.split_target(target, k, m.per)
                         or step_kernels.polynomial(target, k, m.per))
        st.a.flags.writeable = st.L.flags.writeable = st.c.flags.writeable = False  # cached
        states.append(st)
        if base is not None:
            _CACHE[(base, etas[:t + 1])] = tuple(states)
            while len(_CACHE) > CACHE_SIZE:
                _CACHE.pop(next(iter(_CACHE)))
    if reuse:
        key = None if base is None else (base, etas[:2], "reused")
        if key is not None and key in _CACHE:
            second = _CACHE[key]
        else:
            second = GroupState(2, *reused.reused_second(
                s, g, values=values, fractions=fractions, k=k, eta=etas, alpha0=float(alpha0)))
            second.a.flags.writeable = second.L.flags.writeable = second.c.flags.writeable = False
            if key is not None:
                _CACHE[key] = second
        states = states[:2] + [second]
    return StepsMapping(sigma=s.name, target=target, readout=ro, alpha0=float(alpha0),
                        eta=etas, delta=delta, k=k, states=tuple(states), batch=batch)
