"""The K-group equations with the network's channels (THEORY.md §15): the solver of
:mod:`asymptotics.spiked.solve` (the closed (V1, V2) subsystem does not see the channels) with
the completion and the literal map of :mod:`asymptotics.spiked.kernels` carrying the fields of
:class:`asymptotics.network.channels.Channels` instead of the isotropic ones."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from asymptotics.core import checks
from asymptotics.equations.solver import ConvergenceError, SolverConfig, Status, relative_residual
from asymptotics.network.channels import Channels
from asymptotics.spiked.anderson import anderson
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
from asymptotics.spiked.problem import SpikedProblem, build_spiked_problem
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


def _mean_eps(p_inv: float, A: float, V2: np.ndarray) -> np.ndarray:
    return p_inv / (A * V2) if p_inv > 0.0 else np.zeros(V2.shape[0])


def full_map_net(state, ch: Channels, w, kap, mu0, mb1, ms2, h, h1, h2, A, lam, delta, beta,
                 pi, p_inv):
    """The literal map of all unknowns with the network's channels."""
    n, K = mb1.shape
    r, k = kap.shape[1], h1.shape[1]
    o = sizes(K, r, k)
    M, v2, Q1h, Q2h, zh, ph, E, V = hats_of(state, w, kap, mu0, mb1, ms2, h, h1, h2, A, delta)
    tau, V1, V2 = resolvent(M, lam + v2, beta, pi)
    zeta, psi = ch.fields(M, beta * pi * tau, zh, ph)
    Phi, Psi, ht = mean_design(1.0 / (1.0 + V), w, kap, mu0, mb1, h, _mean_eps(p_inv, A, V2))
    m = mean_lstsq(Phi, ht - Psi @ zeta.ravel())
    X2 = Q2h + m * m * p_inv / (V2 * V2)
    dV1, dV2 = dresolvent(M, tau, beta, pi, Q1h, X2)
    f1, f2 = ch.field_q(M, tau, beta, pi, zh, ph)
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
                 p_inv):
    """Given (V1, V2), the rest of the state solved exactly (as
    :func:`asymptotics.spiked.kernels.complete`, with the network's channels)."""
    n, K = mb1.shape
    r, k = kap.shape[1], h1.shape[1]
    o = sizes(K, r, k)
    V1in, V2in = v[:K * K].reshape((K, K)), v[K * K:]
    iv = 1.0 / (1.0 + channel_v(V1in, V2in, mb1, ms2))
    M, v2 = vhats(iv, w, mb1, ms2, A)
    tau, V1, V2 = resolvent(M, lam + v2, beta, pi)
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
    dV1, dV2 = dresolvent(M, tau, beta, pi, R1, R2 + m * m * p_inv / (V2 * V2))
    f1, f2 = ch.field_q(M, tau, beta, pi, zh.reshape(K, r), ph)
    nq = K * K + K
    c0 = np.concatenate([(f1 - dV1).ravel(), f2 - dV2])
    Mq = np.eye(nq)
    for col in range(nq):
        qi = mb1[:, col // K] * mb1[:, col % K] if col < K * K else ms2[:, col - K * K]
        K1, K2 = vhats(iv2 * qi, w, mb1, ms2, A)
        e1, e2 = dresolvent(M, tau, beta, pi, K1, K2)
        Mq[:K * K, col] += e1.ravel()
        Mq[K * K:, col] += e2
    ok = bool(np.linalg.det(Mq) > DET_MIN and np.all(np.diag(Mq) > 0.0))
    qv = np.linalg.solve(Mq, c0)
    state[o[0]:o[1]] = qv[:K * K]
    state[o[1]:o[2]] = qv[K * K:]
    return state, ok


def solve_network(prob: SpikedProblem, ch: Channels, alpha: float,
                  solver: SolverConfig = SolverConfig(), x0: np.ndarray | None = None
                  ) -> SpikedResult:
    """Solve at one alpha (THEORY.md §15; the algorithm of §10.5)."""
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
    if status == Status.CONVERGED:
        for _ in range(3):
            x = v_map(x, *vargs)
        state, ok = complete_net(x, ch, *a)
        resid = relative_residual(state, full_map_net(state, ch, *a), solver.scale_floor)
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
                        n_omega: int | None = None, **params) -> SpikedResult:
    """The K-group risk (parameters of :func:`asymptotics.spiked.risk_spiked`) with each
    group's normalised bulk covariance ``channels`` on ``[V, T]`` (THEORY.md §15); the kappa
    rule is refined as there. ``lam = 0`` is not supported here (NaN with the reason)."""
    alpha = checks.positive("alpha", alpha)
    sig = np.asarray(channels, dtype=np.float64)

    def solve_at(nk: int | None, no: int | None) -> list[SpikedResult]:
        prob = build_spiked_problem(**params, n_kappa=nk, n_omega=no)
        ch = Channels(sig, prob.loadings.shape[1], prob.k)
        res = solve_network(prob, ch, alpha, solver)
        if not res.converged and prob.lam == 0.0:
            res = replace(res, message="lam = 0 is not covered by the network route of "
                                       "several groups; pass lam > 0")
        return [res]

    r = np.shape(np.asarray(params["loadings"], dtype=np.float64))[1]
    res = replace(_refined(solve_at, int(r), n_kappa, n_omega)[0], model="network")
    if strict and not res.converged:
        raise ConvergenceError(f"network K-group equations did not converge at "
                               f"alpha={alpha:g}: {res.message}")
    return res
