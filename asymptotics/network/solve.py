"""The K-group equations with the network's channels (THEORY.md §15): the solver of
:mod:`asymptotics.spiked.solve` (the closed (V1, V2) subsystem does not see the channels) with
the completion and the literal map of :mod:`asymptotics.spiked.kernels` carrying the fields of
:class:`asymptotics.network.channels.Channels` instead of the isotropic ones."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from asymptotics.coefficients.functions import Function
from asymptotics.core import checks
from asymptotics.equations.solver import ConvergenceError, SolverConfig, Status, relative_residual
from asymptotics.multiindex.steps import trapezoid
from asymptotics.network.bulk import fixed_point as solve_fp
from asymptotics.network.channels import Channels, spiked_problem
from asymptotics.spiked.anderson import anderson
from asymptotics.spiked.coefficients import Tables, feature_tables, target_tables, tensor_rule
from asymptotics.spiked.kernels import (
    DET_MIN,
    channel_v,
    dresolvent,
    error_parts,
    hats_of,
    mean_design,
    mean_lstsq,
    resolvent,
    risk_of,
    sizes,
    v_map,
    vhats,
)
from asymptotics.spiked.problem import SpikedProblem, build_spiked_problem, target_degrees
from asymptotics.spiked.solve import (
    KAPPA_LADDER,
    QUADRATURE_RTOL,
    SpikedResult,
    cold_start,
    unpack_state,
)


def _args(prob: SpikedProblem, alpha: float) -> tuple:
    t = prob.tables
    return (t.weights, t.kappa, t.mu0, t.mub1, t.mus2, t.h, t.h1, t.h2, alpha / prob.beta,
            prob.lam, prob.delta, prob.beta, prob.fractions, prob.p_inv)


def _ladder(r: int) -> tuple[int, ...]:
    return KAPPA_LADDER.get(r, KAPPA_LADDER[4]) if r >= 2 else ()


def _refined(solve_at: Callable[[int | None, int | None], list[SpikedResult]], r: int,
             n_kappa: int | None, n_omega: int | None) -> list[SpikedResult]:
    """(As in :mod:`asymptotics.spiked.solve`.) Solve on the ladder of kappa rules until every
    risk agrees with the previous rule's to
    :data:`QUADRATURE_RTOL` (relative); a point that never does is NaN with the reason. A rule
    given by the caller (``n_kappa``), or r = 1 (the one-spike rule), is used as given."""
    if n_kappa is not None or r == 1:
        return solve_at(n_kappa, n_omega)
    prev: list[SpikedResult] | None = None
    ladder = _ladder(r)
    for n in ladder:
        cur = solve_at(n, n_omega)  # (the rule of the unlearned target directions is kept)
        if prev is not None:
            changes = [abs(c.risk - q.risk) / max(abs(c.risk), 1e-300)
                       if c.converged and q.converged else math.nan
                       for c, q in zip(cur, prev, strict=True)]
            out = [replace(c, n_kappa=n, quadrature_change=ch)
                   for c, ch in zip(cur, changes, strict=True)]
            if all(not (ch > QUADRATURE_RTOL) for ch in changes):  # NaN: not converged
                return out
        prev = cur
    return [r_ if not (r_.quadrature_change > QUADRATURE_RTOL) else replace(
        r_, risk=math.nan, converged=False, status="max_iter",
        message=f"quadrature not resolved: the risk still moves by {r_.quadrature_change:.2g} "
                f"(relative) from {ladder[-2]} to {ladder[-1]} kappa nodes per dimension; "
                "pass a larger n_kappa") for r_ in out]


#: the aligned rules tried where the Gauss-Hermite ladder does not settle (THEORY.md §15): the
#: trapezoid step on the sharpest group's spike axis and the Gauss-Hermite nodes on each other
#: axis of kappa (rotated so that the first axis is that group's loading)
ALIGNED_LADDER = ((0.1, 36), (0.05, 54))


def aligned_rotation(loadings: np.ndarray, bulk: np.ndarray) -> np.ndarray:
    """An orthogonal r x r rotation of kappa whose first axis is the loading of the group with the
    sharpest feature along kappa (the smallest ``sqrt(c_g)/|u_g|``), the next axes the principal
    directions of the other loadings orthogonal to it."""
    U = np.asarray(loadings, dtype=np.float64)
    norms = np.linalg.norm(U, axis=1)
    width = np.where(norms > 0, np.sqrt(np.asarray(bulk, dtype=np.float64)) /
                     np.maximum(norms, 1e-300), np.inf)
    r = U.shape[1]
    if not np.any(np.isfinite(width)):
        return np.eye(r)
    e1 = U[int(np.argmin(width))] / norms[int(np.argmin(width))]
    _, _, vt = np.linalg.svd(np.vstack([U - np.outer(U @ e1, e1), np.eye(r)]))
    R, _ = np.linalg.qr(np.column_stack([e1, vt[:r - 1].T]))
    return R * np.sign(R[:, 0] @ e1)  # (a QR sign of the first column only: any sign is exact)


def aligned_problem(params: dict, sig: np.ndarray, h: float, n: int,
                    n_omega: int | None) -> tuple[SpikedProblem, Channels]:
    """The K-group problem with kappa rotated by :func:`aligned_rotation` (loadings ``U R``,
    overlaps ``R^T Gamma``, the channels' V block ``R^T Sig R``: an exact change of the basis of
    V) on the product of a trapezoid rule of step ``h`` on the first axis and ``n``
    Gauss-Hermite nodes on each other axis."""
    U = np.asarray(params["loadings"], dtype=np.float64)
    r = U.shape[1]
    R = aligned_rotation(U, params["bulk"])
    G = np.asarray(params["overlaps"], dtype=np.float64)
    k = G.shape[1]
    Rb = np.eye(r + k)
    Rb[:r, :r] = R
    rot = dict(params, loadings=(U @ R).tolist(), overlaps=(R.T @ G).tolist())
    base = build_spiked_problem(**rot, n_kappa=2, n_omega=n_omega)
    u1, w1 = trapezoid(1, h)
    rest, wr = tensor_rule(r - 1, n) if r > 1 else (np.zeros((1, 0)), np.ones(1))
    kap = np.hstack([np.repeat(u1, len(wr), axis=0), np.tile(rest, (len(w1), 1))])
    w = np.repeat(w1, len(wr)) * np.tile(wr, len(w1))
    w = w / w.sum()
    target = params["target"]
    degrees = target_degrees(base.target_name) if isinstance(target, str) and not isinstance(
        base.target, Function) else getattr(target, "degrees", None)
    mu0, mb1, ms2 = feature_tables(base.sigma, kap, base.loadings, base.bulk)
    hh, h1, h2 = target_tables(base.target, base.k, kap, base.overlaps, n_omega, degrees)
    c = np.ascontiguousarray
    prob = replace(base, tables=Tables(c(kap), c(w), c(mu0), c(mb1), c(ms2), c(hh), c(h1),
                                       c(h2)))
    return prob, Channels(np.einsum("ai,gab,bj->gij", Rb, sig, Rb), r, k)


_ALIGNED: dict = {}


def clear_aligned() -> None:
    """Forget the kept aligned rules (:func:`_aligned_cached`)."""
    _ALIGNED.clear()


def _aligned_cached(params: dict, sig: np.ndarray, h: float, n: int, n_omega: int | None):
    """:func:`aligned_problem`, kept for the next alpha of the same groups (it does not depend on
    alpha; the parameters compared by value, objects such as the target by identity)."""
    objs = tuple(v for v in params.values() if not isinstance(v, (list, tuple, float, int, str)))
    key = (tuple((k, repr(v) if isinstance(v, (list, tuple, float, int, str)) else id(v))
                 for k, v in sorted(params.items())), sig.tobytes(), h, n, n_omega)
    hit = _ALIGNED.get(key)
    if hit is None or any(a is not b for a, b in zip(hit[0], objs, strict=True)):
        hit = (objs, aligned_problem(params, sig, h, n, n_omega))
        if len(_ALIGNED) >= 8:
            _ALIGNED.pop(next(iter(_ALIGNED)))
        _ALIGNED[key] = hit
    return hit[1]


def _aligned(params: dict, sig: np.ndarray, alpha: float, solver: SolverConfig,
             n_omega: int | None, res: SpikedResult, outside=None, coupled=None
             ) -> SpikedResult:
    """The point on :data:`ALIGNED_LADDER` where the Gauss-Hermite ladder left it unsettled
    (``res``): the first two rules that agree to :data:`QUADRATURE_RTOL`, else ``res``."""
    prev = None
    for h, n in ALIGNED_LADDER:
        prob, ch = _aligned_cached(params, sig, h, n, n_omega)
        if coupled is not None:
            ch = coupled.rotated(aligned_rotation(np.asarray(params["loadings"]),
                                                  params["bulk"]))
        cur = solve_network(prob, ch, alpha, solver,
                            bulk=outside if coupled is None else coupled.bulk)
        if prev is not None and cur.converged and prev.converged:
            change = abs(cur.risk - prev.risk) / max(abs(cur.risk), 1e-300)
            if change <= QUADRATURE_RTOL:
                return replace(cur, n_kappa=n,
                               quadrature_change=change,
                               message=f"converged (aligned rule: trapezoid step {h:g} on the "
                                       f"sharpest spike axis, {n} Gauss-Hermite nodes on the "
                                       "others; the tensor Gauss-Hermite ladder did not settle)")
        prev = cur
    return res


def _mean_eps(p_inv: float, A: float, V2: np.ndarray) -> np.ndarray:
    return p_inv / (A * V2) if p_inv > 0.0 else np.zeros(V2.shape[0])


def _bulk_fns(bulk):
    """(resolvent, dresolvent) of the bulk: the isotropic kernels of §10.4, or a
    :class:`asymptotics.network.bulk.GroupBulk` (DERIVATIONS.md §9.7)."""
    if bulk is None:
        return resolvent, dresolvent
    return bulk.resolvent, bulk.dresolvent


def full_map_net(state, ch: Channels, w, kap, mu0, mb1, ms2, h, h1, h2, A, lam, delta, beta,
                 pi, p_inv, bulk=None):
    """The literal map of all unknowns with the network's channels (and bulk)."""
    res_f, dres_f = _bulk_fns(bulk)
    n, K = mb1.shape
    r, k = kap.shape[1], h1.shape[1]
    o = sizes(K, r, k)
    M, v2, Q1h, Q2h, zh, ph, E, V = hats_of(state, w, kap, mu0, mb1, ms2, h, h1, h2, A, delta)
    tau, V1, V2 = res_f(M, lam + v2, beta, pi)
    zeta, psi = ch.fields(M, beta * pi * tau, zh, ph)
    Phi, Psi, ht = mean_design(1.0 / (1.0 + V), w, kap, mu0, mb1, h, _mean_eps(p_inv, A, V2))
    m = mean_lstsq(Phi, ht - Psi @ zeta.ravel())
    X2 = Q2h + m * m * p_inv / (V2 * V2)
    dV1, dV2 = dres_f(M, tau, beta, pi, Q1h, X2)
    f1, f2 = ch.field_q(M, tau, beta, pi, zh, ph, dres_f)
    out = np.empty(o[-1])
    out[o[0]:o[1]] = (f1 - dV1).ravel()
    out[o[1]:o[2]] = f2 - dV2
    out[o[2]:o[3]] = V1.ravel()
    out[o[3]:o[4]] = V2
    out[o[4]:o[5]] = zeta.ravel()
    out[o[5]:o[6]] = psi.ravel()
    out[o[6]:] = m
    return out


def complete_net(v, ch: Channels, w, kap, mu0, mb1, ms2, h, h1, h2, A, lam, delta, beta, pi,
                 p_inv, bulk=None):
    """Given (V1, V2), the rest of the state solved exactly (as
    :func:`asymptotics.spiked.kernels.complete`, with the network's channels and bulk)."""
    res_f, dres_f = _bulk_fns(bulk)
    n, K = mb1.shape
    r, k = kap.shape[1], h1.shape[1]
    o = sizes(K, r, k)
    V1in, V2in = v[:K * K].reshape((K, K)), v[K * K:]
    iv = 1.0 / (1.0 + channel_v(V1in, V2in, mb1, ms2))
    M, v2 = vhats(iv, w, mb1, ms2, A)
    tau, V1, V2 = res_f(M, lam + v2, beta, pi)
    dl = beta * pi * tau
    Phi, Psi, ht = mean_design(iv, w, kap, mu0, mb1, h, _mean_eps(p_inv, A, V2))
    ph = A * np.einsum("j,jg,ji->gi", w * iv, mb1, h1)
    U, sv, _ = np.linalg.svd(Phi, full_matrices=False)
    Qb = U[:, :int(np.sum(sv > 1e-12 * sv[0]))] if sv.size and sv[0] > 0 else U[:, :0]
    Psr = Psi - Qb @ (Qb.T @ Psi)
    htr = ht - Qb @ (Qb.T @ ht)
    pzz, c = ch.zeta_system(M, dl, ph)
    Sys = np.eye(K * r) + A * pzz @ (Psr.T @ Psr)
    zeta = np.linalg.solve(Sys, A * pzz @ (Psr.T @ htr) + c)
    m = mean_lstsq(Phi, ht - Psi @ zeta)
    zh = A * (Psi.T @ (ht - Psi @ zeta - Phi @ m))
    _, psi = ch.fields(M, dl, zh.reshape(K, r), ph)
    state = np.zeros(o[-1])
    state[o[2]:o[3]] = V1in.ravel()
    state[o[3]:o[4]] = V2in
    state[o[4]:o[5]] = zeta
    state[o[5]:o[6]] = psi.ravel()
    state[o[6]:] = m
    b, E0, q, V = error_parts(state, kap, mu0, mb1, ms2, h, h1, h2)
    iv2 = iv * iv
    R1, R2 = vhats(iv2 * (E0 + delta), w, mb1, ms2, A)
    dV1, dV2 = dres_f(M, tau, beta, pi, R1, R2 + m * m * p_inv / (V2 * V2))
    f1, f2 = ch.field_q(M, tau, beta, pi, zh.reshape(K, r), ph, dres_f)
    nq = K * K + K
    c0 = np.concatenate([(f1 - dV1).ravel(), f2 - dV2])
    Mq = np.eye(nq)
    for col in range(nq):
        qi = mb1[:, col // K] * mb1[:, col % K] if col < K * K else ms2[:, col - K * K]
        K1, K2 = vhats(iv2 * qi, w, mb1, ms2, A)
        e1, e2 = dres_f(M, tau, beta, pi, K1, K2)
        Mq[:K * K, col] += e1.ravel()
        Mq[K * K:, col] += e2
    ok = bool(np.linalg.det(Mq) > DET_MIN and np.all(np.diag(Mq) > 0.0))
    qv = np.linalg.solve(Mq, c0)
    state[o[0]:o[1]] = qv[:K * K]
    state[o[1]:o[2]] = qv[K * K:]
    return state, ok


def _bulk_v(x: np.ndarray, bulk, vargs: tuple, solver: SolverConfig) -> tuple:
    """The closed (V1, V2) subsystem on the anisotropic bulk (DERIVATIONS.md §9.7), from the
    isotropic solution ``x``: the joint iteration of ``(V1, tau)`` (one evaluation of the bulk
    per step, tau's equation solved along with V1), then two exact steps (tau by Newton)."""
    w, mb1, ms2, A, lam, beta, pi = vargs
    K = pi.shape[0]

    def fmap(y: np.ndarray) -> np.ndarray:
        V1, tau = y[:K * K].reshape(K, K), y[K * K:]
        iv = 1.0 / (1.0 + channel_v(V1, pi * tau, mb1, ms2))
        M, v2 = vhats(iv, w, mb1, ms2, A)
        e, nV1 = bulk.evaluate(M, beta * pi * tau, beta)
        return np.concatenate([nV1.ravel(), 1.0 / (lam + v2 + e)])

    y0 = np.concatenate([x[:K * K], x[K * K:] / pi])
    nn = tuple(i * (K + 1) for i in range(K)) + tuple(K * K + g for g in range(K))
    cfg = SolverConfig(solver.rtol / 10, solver.scale_floor, solver.max_iter, solver.damping,
                       solver.anderson)
    last = getattr(bulk, "y_last", None)
    out = None
    if last is not None and last.shape == y0.shape and np.all(np.isfinite(last)):
        out = solve_fp(fmap, last, cfg, nn)  # the last point's solution (the ladder's rungs)
    if out is None or not out.converged:
        out = solve_fp(fmap, y0, cfg, nn)
    if not out.converged:
        return x, out.status, out.n_iter, out.residual
    y = out.x
    bulk.y_last = y.copy()
    bulk.tau_last = y[K * K:]
    v = np.concatenate([y[:K * K], pi * y[K * K:]])
    for _ in range(2):
        V1 = v[:K * K].reshape(K, K)
        iv = 1.0 / (1.0 + channel_v(V1, v[K * K:], mb1, ms2))
        M, v2 = vhats(iv, w, mb1, ms2, A)
        _, nV1, nV2 = bulk.resolvent(M, lam + v2, beta, pi)
        v = np.concatenate([nV1.ravel(), nV2])
    return v, Status.CONVERGED, out.n_iter, out.residual


def solve_network(prob: SpikedProblem, ch: Channels, alpha: float,
                  solver: SolverConfig = SolverConfig(), x0: np.ndarray | None = None,
                  bulk=None) -> SpikedResult:
    """Solve at one alpha (THEORY.md §15; the algorithm of §10.5). ``bulk``: the groups'
    anisotropic bulk outside E (a :class:`asymptotics.network.bulk.GroupBulk`, DERIVATIONS.md
    §9.7); None: isotropic (§10.4)."""
    alpha = checks.positive("alpha", alpha)
    a = _args(prob, alpha)
    t = prob.tables
    K = prob.fractions.shape[0]
    vargs = (t.weights, t.mub1, t.mus2, alpha / prob.beta, prob.lam, prob.beta, prob.fractions)
    nn = np.array(tuple(i * (K + 1) for i in range(K)) + tuple(K * K + g for g in range(K)),
                  dtype=np.int64)
    attempts = ([x0] if x0 is not None else []) + [cold_start(prob), cold_start(prob)]
    for i, start in enumerate(attempts):
        cfg = solver if i < len(attempts) - 1 else SolverConfig(
            solver.rtol, solver.scale_floor, 4 * solver.max_iter, 0.2, solver.anderson)
        x, code, n_it, rr = anderson(np.asarray(start, dtype=np.float64), nn, *vargs,
                                     cfg.rtol / 10, cfg.scale_floor, cfg.max_iter, cfg.damping,
                                     cfg.anderson)
        if Status(int(code)) == Status.CONVERGED:
            break
    status, n_iter, resid = Status(int(code)), int(n_it), float(rr)
    o = sizes(K, *prob.loadings.shape[1:], prob.k)
    state = np.full(o[-1], np.nan)
    if status == Status.CONVERGED and bulk is not None:
        x, status, n_it2, rr = _bulk_v(x, bulk, vargs, solver)
        n_iter, resid = n_iter + int(n_it2), float(rr)
    if status == Status.CONVERGED:
        if bulk is None:
            for _ in range(3):
                x = v_map(x, *vargs)
        state, ok = complete_net(x, ch, *a, bulk=bulk)
        resid = relative_residual(state, full_map_net(state, ch, *a, bulk=bulk),
                                  solver.scale_floor)
        fin = np.all(np.isfinite(state))
        tiny = 1e-12 * max(1.0, float(np.max(np.abs(state[:o[2]])))) if fin else 0.0
        q_ok = ok and fin and np.all(state[o[1]:o[2]] >= -tiny)
        q_ok = q_ok and np.all(np.diag(state[:o[1]].reshape(K, K)) >= -tiny)
        if q_ok:
            state[o[1]:o[2]] = np.maximum(state[o[1]:o[2]], 0.0)
            if not resid <= solver.rtol:
                status = Status.MAX_ITER
        else:
            status = Status.OUT_OF_DOMAIN
    conv = status == Status.CONVERGED
    risk = risk_of(state, *a[:8]) if conv else math.nan
    return SpikedResult(alpha=alpha, risk=float(risk), converged=bool(conv),
                        status=status.name.lower(), message=status.message, iterations=n_iter,
                        residual=float(resid), order=unpack_state(prob, state),
                        state=tuple(state.tolist()), **prob.params())


def risk_network_groups(alpha: float, *, channels: object, strict: bool = False,
                        solver: SolverConfig = SolverConfig(), n_kappa: int | None = None,
                        n_omega: int | None = None, outside=None, coupled=None,
                        **params) -> SpikedResult:
    """The K-group risk (parameters of :func:`asymptotics.spiked.risk_spiked`) with each
    group's normalised bulk covariance ``channels`` on ``[V, T]`` and, outside E, the
    population covariances ``outside`` (a :class:`asymptotics.network.bulk.GroupBulk`; None:
    isotropic) (THEORY.md §15); the kappa rule is refined as there. ``lam = 0`` is not
    supported here (NaN with the reason)."""
    alpha = checks.positive("alpha", alpha)
    sig = np.asarray(channels, dtype=np.float64)
    if (bulk := outside if coupled is None else coupled.bulk) is not None:
        bulk.forget()  # a pure point: warm starts only between this point's own rules

    def solve_at(nk: int | None, no: int | None) -> list[SpikedResult]:
        prob = spiked_problem(params, nk, no)
        ch = Channels(sig, prob.loadings.shape[1], prob.k) if coupled is None else coupled
        res = solve_network(prob, ch, alpha, solver, bulk=bulk)
        if not res.converged and prob.lam == 0.0:
            res = replace(res, message="lam = 0 is outside the groups' network route: lam > 0")
        return [res]

    r = np.shape(np.asarray(params["loadings"], dtype=np.float64))[1]
    res = _refined(solve_at, int(r), n_kappa, n_omega)[0]
    if n_kappa is None and r >= 2 and not res.converged and res.quadrature_change > \
            QUADRATURE_RTOL:
        res = _aligned(params, sig, alpha, solver, n_omega, res, outside, coupled)
    res = replace(res, model="network")
    if strict and not res.converged:
        raise ConvergenceError(f"network K-group equations did not converge at "
                               f"alpha={alpha:g}: {res.message}")
    return res
