"""The K-group equations with the network's channels (THEORY.md §15): the solver of
:mod:`asymptotics.spiked.solve` (the closed (V1, V2) subsystem does not see the channels) with
the completion and the literal map of :mod:`asymptotics.spiked.kernels` carrying the fields of
:class:`asymptotics.network.channels.Channels` instead of the isotropic ones; points and curves
under the quadrature policy of the sRF groups (:mod:`asymptotics.equations.ladder`, THEORY.md
§10.8), the aligned rules of :mod:`asymptotics.network.aligned` as a second ladder."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import replace

import numpy as np

from asymptotics.core import checks
from asymptotics.core.progress import Progress
from asymptotics.equations.ladder import climb, climb_borrowed, curve_on_ladder, ladder
from asymptotics.equations.solver import ConvergenceError, SolverConfig, Status, chord, newton
from asymptotics.equations.solver import relative_residual as rel_res
from asymptotics.network import coupling
from asymptotics.network.aligned import aligned_cached, aligned_ladder, aligned_rotation, rules
from asymptotics.network.aligned import aligned_message as _aligned_message
from asymptotics.network.bulk import fixed_point as solve_fp
from asymptotics.network.channels import (
    Channels,
    error_parts,
    hats_of,
    mean_design,
    mean_table,
    node_jacobian,
    risk_of,
    spiked_problem,
)
from asymptotics.network.compiled.complete import complete_fast
from asymptotics.network.compiled.diagonal import solve_diagonal
from asymptotics.network.compiled.isotropic import complete_iso
from asymptotics.network.coupling import chord_start, fp_jacobian, fp_map
from asymptotics.network.schur import blas_threads
from asymptotics.spiked.anderson import anderson
from asymptotics.spiked.kernels import (
    DET_MIN,
    channel_v,
    dresolvent,
    mean_lstsq,
    resolvent,
    sizes,
    v_map,
    vhats,
)
from asymptotics.spiked.problem import SpikedProblem
from asymptotics.spiked.solve import SpikedResult, cold_start, unpack_state

#: a point on the coupled bulk climbs the kappa ladder with the isotropic bulk outside E and
#: solves the coupled bulk on the rule where that climb settles (:func:`asymptotics.equations.
#: ladder.climb_borrowed`, THEORY.md §15); "pair": also on the rule below; False: every rule
BORROW: bool | str = True
#: Newton's converged iterate is the point's, its W (that evaluation's) the completion's, tau
#: accepted within rtol (False: the evaluation after it, one or two Schur evaluations more)
LAST_W = True


def _args(prob: SpikedProblem, alpha: float, mean: np.ndarray | None = None) -> tuple:
    t = prob.tables
    kap = t.kappa if mean is None else mean
    return (t.weights, kap, t.mu0, t.mub1, t.mus2, t.h, t.h1, t.h2, alpha / prob.beta,
            prob.lam, prob.delta, prob.beta, prob.fractions, prob.p_inv)


def _mean_eps(p_inv: float, A: float, V2: np.ndarray) -> np.ndarray:
    return p_inv / (A * V2) if p_inv > 0.0 else np.zeros(V2.shape[0])


def _bulk_fns(bulk):
    """(resolvent, dresolvent): the isotropic kernels (§10.4) or a GroupBulk's (DERIVATIONS §9.7)"""
    return (resolvent, dresolvent) if bulk is None else (bulk.resolvent, bulk.dresolvent)


def full_map_net(state, ch: Channels, w, kap, mu0, mb1, ms2, h, h1, h2, A, lam, delta, beta,
                 pi, p_inv, bulk=None):
    """The literal map of all unknowns with the network's channels (and bulk)."""
    res_f, dres_f = _bulk_fns(bulk)
    n, K = mb1.shape
    r, k = kap.shape[-1], h1.shape[1]
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
    """Given (V1, V2), the rest of the state solved exactly (as :func:`spiked.kernels.complete`,
    with the network's channels and bulk); NaN where the bulk's resolvent fails."""
    (res_f, dres_f), K, r, k = _bulk_fns(bulk), mb1.shape[1], kap.shape[-1], h1.shape[1]
    o = sizes(K, r, k)
    V1in, V2in = v[:K * K].reshape((K, K)), v[K * K:]
    iv = 1.0 / (1.0 + channel_v(V1in, V2in, mb1, ms2))
    M, v2 = vhats(iv, w, mb1, ms2, A)
    tau, V1, V2 = res_f(M, lam + v2, beta, pi)
    if not np.all(np.isfinite(tau)):
        return np.full(o[-1], np.nan), False
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
    dMv, dv2v = node_jacobian(iv2, w, mb1, ms2, A)  # -d(Vhat1, Vhat2)/d(V1, V2)
    for col in range(nq if bulk is None else 0):
        e1, e2 = dres_f(M, tau, beta, pi, dMv[col], dv2v[col])
        Mq[:, col] += np.concatenate([e1.ravel(), e2])
    if bulk is not None:  # (the derivative's matrix once; the next rule's chord Jacobian)
        Y = bulk.dlin(M, tau, beta, pi) @ np.hstack([dMv.reshape(nq, K * K), dv2v]).T
        Y1 = Y[:K * K].reshape(K, K, nq)
        Mq += np.vstack([(0.5 * (Y1 + Y1.transpose(1, 0, 2))).reshape(K * K, nq), Y[K * K:]])
        bulk.jac_last = (M, tau, beta, pi, dMv, dv2v)  # (formed where _bulk_v asks)
        bulk.lin_last = (M, tau, V1, 1.0 / tau - (lam + v2))
    ok = bool(np.linalg.det(Mq) > DET_MIN and np.all(np.diag(Mq) > 0.0))
    qv = np.linalg.solve(Mq, c0)
    state[o[0]:o[1]] = qv[:K * K]
    state[o[1]:o[2]] = qv[K * K:]
    return state, ok


def _bulk_v(x: np.ndarray, bulk, vargs: tuple, solver: SolverConfig) -> tuple:
    """The closed (V1, V2) subsystem on the anisotropic bulk (DERIVATIONS.md §9.7), from the
    isotropic solution ``x``: the joint iteration of ``(V1, tau)`` (one evaluation of the bulk
    per step, tau's equation solved along with V1; on a point's first rule Newton with the exact
    Jacobian, Anderson where it fails, THEORY.md §15; chord steps with the last rule's Jacobian
    on its later rules from :func:`~asymptotics.network.coupling.chord_start`); the completion
    solves tau exactly (from Newton's converged iterate: :data:`LAST_W`)."""
    pi = vargs[6]
    K = pi.shape[0]
    fmap, jac_at = fp_map(bulk, vargs)
    y0 = np.concatenate([x[:K * K], x[K * K:] / pi])
    nn = tuple(i * (K + 1) for i in range(K)) + tuple(K * K + g for g in range(K))
    cfg = SolverConfig(solver.rtol / 10, solver.scale_floor, solver.max_iter, solver.damping,
                       solver.anderson)
    last = getattr(bulk, "y_last", None)
    jac = getattr(bulk, "jac_last", None)  # (the arguments of fp_jacobian)
    out = None
    if last is not None and last.shape == y0.shape and np.all(np.isfinite(last)):
        pred = chord_start(bulk, last, vargs) if jac is not None else None
        if pred is not None:
            out = chord(fmap, pred[0], pred[1], cfg, nn)
        elif jac is not None and (J := fp_jacobian(bulk, *jac)).shape == (y0.size, y0.size):
            out = chord(fmap, last, J, cfg, nn)  # the last rule's Jacobian
        if out is None:  # the last point's solution (the ladder's rungs)
            out = solve_diagonal(bulk, vargs, last, cfg, nn) or solve_fp(fmap, last, cfg, nn)
    seen: dict = {"last": (None, None)}  # (Newton's last evaluation: its W formed, kept)
    if (out is None or not out.converged) and coupling.NEWTON and coupling.newton_pays(bulk):
        out = newton(*fp_map(bulk, vargs, seen if LAST_W else None), y0, cfg, nn, predict=seen)
    if out is None or not out.converged:
        out = solve_diagonal(bulk, vargs, y0, cfg, nn) or solve_fp(fmap, y0, cfg, nn)
    if not out.converged:
        return x, out.status, out.n_iter, out.residual
    y, bulk.tau_accept = (seen["last"][0], cfg.rtol) if seen["last"][1] is out.x else (out.x, 0.0)
    bulk.y_last = y.copy()
    bulk.tau_last = y[K * K:]
    v = np.concatenate([y[:K * K], pi * y[K * K:]])  # (the completion solves tau exactly)
    return v, Status.CONVERGED, out.n_iter, out.residual


def solve_network(prob: SpikedProblem, ch: Channels, alpha: float,
                  solver: SolverConfig = SolverConfig(), x0: np.ndarray | None = None,
                  bulk=None, mean: np.ndarray | None = None) -> SpikedResult:
    """Solve at one alpha (THEORY.md §15; the algorithm of §10.5). ``bulk``: the groups'
    anisotropic bulk outside E (a :class:`asymptotics.network.bulk.GroupBulk`, DERIVATIONS.md
    §9.7); None: isotropic (§10.4). ``mean``: the v channels' mean functions with the rows'
    outside scale (:func:`asymptotics.network.channels.mean_table`); None: ``kappa``."""
    alpha = checks.positive("alpha", alpha)
    a = _args(prob, alpha, mean)
    t = prob.tables
    K = prob.fractions.shape[0]
    vargs = (t.weights, t.mub1, t.mus2, alpha / prob.beta, prob.lam, prob.beta, prob.fractions)
    nn = np.array(tuple(i * (K + 1) for i in range(K)) + tuple(K * K + g for g in range(K)),
                  dtype=np.int64)
    attempts = ([x0] if x0 is not None else []) + [None, None]  # (None: a cold start)
    for i, start in enumerate(attempts):
        start = cold_start(prob) if start is None else start
        cfg = solver if i < len(attempts) - 1 else SolverConfig(
            solver.rtol, solver.scale_floor, 4 * solver.max_iter, 0.2, solver.anderson)
        # blowup, half given (the defaults): solve_point's signature, one compile of anderson
        x, code, n_it, rr = anderson(np.asarray(start, dtype=np.float64), nn, *vargs,
                                     cfg.rtol / 10, cfg.scale_floor, cfg.max_iter, cfg.damping,
                                     cfg.anderson, 1e12, False)
        if Status(int(code)) == Status.CONVERGED:
            break
    status, n_iter, resid = Status(int(code)), int(n_it), float(rr)
    o = sizes(K, a[1].shape[-1], prob.k)  # (the scale coordinate, if any, among the V's)
    state, fast_risk = np.full(o[-1], np.nan), None
    if status == Status.CONVERGED and bulk is not None:
        x, status, n_it2, rr = _bulk_v(x, bulk, vargs, solver)
        n_iter, resid = n_iter + int(n_it2), float(rr)
    if status == Status.CONVERGED:
        if bulk is None:
            for _ in range(3):
                x = v_map(x, *vargs)
        fl = solver.scale_floor  # (compiled: W diagonal, or the isotropic bulk)
        fast = complete_fast(x, ch, a, bulk, fl) if bulk is not None else complete_iso(x, ch, a, fl)
        state, ok, resid, fast_risk = fast or (*complete_net(x, ch, *a, bulk=bulk), None, None)
        fin = np.all(np.isfinite(state))
        if resid is None:
            resid = rel_res(state, full_map_net(state, ch, *a, bulk=bulk),
                            solver.scale_floor) if fin else math.nan
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
    risk = (risk_of(state, *a[:8]) if fast_risk is None else fast_risk) if conv else math.nan
    if a[1].shape[-1] > (r := prob.loadings.shape[1]):  # the scale coordinate's fields dropped
        state = np.delete(state, np.arange(o[4], o[5]).reshape(K, -1)[:, r:].ravel())
    return SpikedResult(alpha=alpha, risk=float(risk), converged=bool(conv),
                        status=status.name.lower(), message=status.message, iterations=n_iter,
                        residual=float(resid), order=unpack_state(prob, state),
                        state=tuple(state.tolist()), **prob.params())


def _v(res: SpikedResult) -> np.ndarray:
    """The (V1, V2) of a solution (a warm start)."""
    K = len(res.order["V2"])
    return np.asarray(res.state[K * K + K:2 * (K * K + K)])


def _rules_of(params: dict, sig: np.ndarray, solver: SolverConfig, n_omega: int | None,
              outside, coupled) -> tuple[Callable, Callable]:
    """``(solve, climb_at)`` of the groups: ``solve(rule, alpha, x0, fresh)`` solves on one
    kappa rule (an int: tensor Gauss-Hermite nodes per dimension, None: the one-spike rule; an
    ``(h, n)`` of :func:`aligned_ladder`: the aligned rule), each rule's problem built once;
    ``climb_at(alpha)`` climbs the route's ladders (:func:`rules`) under the policy of
    :func:`asymptotics.equations.ladder.climb` and returns (result, index in :func:`rules`); with
    a bulk first by :data:`BORROW` (the rule of the isotropic bulk's climb)."""
    bulk = outside if coupled is None else coupled.bulk
    built: dict = {}
    flat: list = [None]  # (the isotropic bulk's channels)
    U = np.asarray(params["loadings"], dtype=np.float64)

    def problem(rule):
        if rule not in built:
            r = U.shape[1]
            extra = sig.shape[1] - r - int(np.asarray(params["overlaps"]).shape[1])
            if isinstance(rule, tuple):
                base = np.delete(np.delete(sig, np.s_[r:r + extra], 1), np.s_[r:r + extra], 2)
                prob, ch = aligned_cached(params, base, rule[0], rule[1], n_omega)
                R = np.eye(r + extra)
                R[:r, :r] = aligned_rotation(U, params["bulk"])
                if extra:  # the channels with the scale coordinate, on the rotated V
                    Rb = np.eye(sig.shape[1])
                    Rb[:r + extra, :r + extra] = R
                    ch = Channels(np.einsum("ai,gab,bj->gij", Rb, sig, Rb), r + extra, prob.k)
                if coupled is not None:
                    ch = coupled.rotated(R)
            else:
                prob = spiked_problem(params, rule, n_omega)
                ch = Channels(sig, r + extra, prob.k) if coupled is None else coupled
            built[rule] = (prob, ch, mean_table(prob, extra > 0))
        return built[rule]

    def solve(rule, alpha: float, x0: np.ndarray | None = None, fresh: bool = True,
              iso: bool = False) -> SpikedResult:
        prob, ch, mean = problem(rule)  # iso: the isotropic bulk outside E (BORROW)
        if iso:
            ch = flat[0] = flat[0] or Channels(sig, sig.shape[1] - prob.k, prob.k)
        elif fresh and bulk is not None:
            bulk.forget()  # a pure point: warm starts only between this point's own rules
        with blas_threads():  # (schur.BLAS_THREADS)
            res = solve_network(prob, ch, alpha, solver, x0, None if iso else bulk, mean)
        if not res.converged and prob.lam == 0.0:
            res = replace(res, message="lam = 0 is outside the groups' network route: lam > 0")
        return res

    gh = ladder(U.shape[1])

    def climb_at(alpha: float) -> tuple[SpikedResult, int | None]:
        start: list = [None]

        def on(family: tuple) -> Callable[[int], SpikedResult]:
            def rung(i: int) -> SpikedResult:
                res = solve(family[i], alpha, x0=start[0], fresh=i == 0 and family is gh)
                if res.converged:
                    start[0] = _v(res)
                return res
            return rung

        def by(iso: bool) -> Callable:
            def rung(i: int, st: SpikedResult | None = None, first: bool = False):
                res = solve(gh[i], alpha, _v(st) if first else start[0], first, iso)
                start[0] = _v(res) if res.converged else start[0]
                return res
            return rung

        if bulk is not None and BORROW:  # the rule by the isotropic bulk's climb (THEORY §15)
            got = climb_borrowed(by(True), by(False), gh, BORROW == "pair")
            if got is not None:
                return got
            start[0] = None
        res, i = climb(on(gh), gh)
        if i is not None or not (al := aligned_ladder(U.shape[1])):
            return res, i
        res2, j = climb(on(al), [n for _, n in al])
        if j is None or j < 0:
            return res, None  # (the tensor ladder's reason)
        return _aligned_message(res2, al[j]), len(gh) + j

    return solve, climb_at


def risk_network_groups(alpha: float, *, channels: object, strict: bool = False,
                        solver: SolverConfig = SolverConfig(), n_kappa: int | None = None,
                        n_omega: int | None = None, outside=None, coupled=None,
                        **params) -> SpikedResult:
    """The K-group risk (parameters of :func:`asymptotics.spiked.risk_spiked`) with each
    group's normalised bulk covariance ``channels`` on ``[V, T]`` and, outside E, the
    population covariances ``outside`` (a :class:`asymptotics.network.bulk.GroupBulk`; None:
    isotropic) (THEORY.md §15). ``channels`` on ``[V, S, T]`` (K x (r+1+k) x (r+1+k)) carry
    the rows' outside scale ``S`` as one more V-type coordinate (DERIVATIONS.md §12). The kappa
    rule: ``n_kappa`` if given (r = 1: the one-spike
    rule), else the quadrature policy of the sRF groups (``asymptotics.equations.ladder``,
    §10.8) on :func:`rules`. ``lam = 0`` is not supported here (NaN with the reason)."""
    alpha = checks.positive("alpha", alpha)
    return risk_network_groups_curve([alpha], channels=channels, strict=strict, solver=solver,
                                     n_kappa=n_kappa, n_omega=n_omega, outside=outside,
                                     coupled=coupled, progress=False, **params)[0]


def risk_network_groups_curve(alphas: Iterable[float], *, channels: object,
                              strict: bool = False, solver: SolverConfig = SolverConfig(),
                              n_kappa: int | None = None, n_omega: int | None = None,
                              outside=None, coupled=None, progress: bool | None = None,
                              **params) -> list[SpikedResult]:
    """:func:`risk_network_groups` along alpha, one result per alpha. With r >= 2 spikes (and no
    ``n_kappa``) the kappa rule is decided once for the curve by probe points
    (:func:`asymptotics.equations.ladder.curve_on_ladder`, docs/THEORY.md §10.8), then every
    alpha is solved once on it (started from the line through the two previous solutions); a
    curve of at most ten points climbs point by point (its rows are then the single points')."""
    alphas = [checks.positive("alpha", a) for a in checks.sequence("alphas", alphas)]
    sig = np.asarray(channels, dtype=np.float64)
    solve, climb_at = _rules_of(params, sig, solver, n_omega, outside, coupled)
    r = int(np.shape(np.asarray(params["loadings"], dtype=np.float64))[1])

    def sweep(rule, bar_on: bool | None, carried: tuple) -> list[SpikedResult]:
        out, seen = [], []
        K = len(params["fractions"])
        nn = np.array([g * (K + 1) for g in range(K)] + [K * K + g for g in range(K)])
        with Progress(len(alphas), "network curve", unit="pt", enabled=bar_on) as bar:
            for a in bar.iter(alphas):
                x0 = seen[-1][1] if seen else None
                if len(seen) == 2 and seen[1][0] != seen[0][0]:
                    (a0, v0), (a1, v1) = seen
                    x0 = v1 + (v1 - v0) * ((a - a1) / (a1 - a0))
                    x0[nn] = np.maximum(x0[nn], 0.0)
                res = solve(rule, a, x0=x0)
                if res.converged:
                    seen = [*seen[-1:], (a, _v(res))]
                    if isinstance(rule, tuple):
                        res = _aligned_message(res, rule)
                out.append(replace(res, n_kappa=carried[0], quadrature_change=carried[1]))
        return out

    if n_kappa is not None or r == 1:  # a rule given by the caller, or the one-spike rule
        with Progress(len(alphas), "network curve", unit="pt", enabled=progress) as bar:
            results = [solve(n_kappa, a) for a in bar.iter(alphas)]
    else:
        all_rules = rules(r)
        carried = [n if isinstance(n, int) else n[1] for n in all_rules]

        def sweep_rule(rule, bar_on, rc, first=None, known=None):
            # (the probes' solutions are not reused: every alpha is solved on the rule)
            return sweep(rule, bar_on, (carried[all_rules.index(rule)], rc[1]))

        results = curve_on_ladder(alphas, all_rules, sweep_rule, climb_at, progress,
                                  what="network curve")
    results = [replace(res, model="network") for res in results]
    if strict and not all(res.converged for res in results):
        bad = next(res for res in results if not res.converged)
        raise ConvergenceError(f"network K-group equations did not converge at "
                               f"alpha={bad.alpha:g}: {bad.message}")
    return results
