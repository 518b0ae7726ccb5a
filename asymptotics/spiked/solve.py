"""Solving the K-group, r-spike equations at one alpha, along alpha, and the per-direction
contributions (docs/THEORY.md §10.5): Anderson-accelerated damped Picard on the closed
(V1, V2) subsystem (``asymptotics.equations.solver``), exact completion of (zeta, m, psi, Q) and the
relative residual of the literal map over all unknowns at ``rtol``. Unconverged: risk NaN."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import replace

import numpy as np

from asymptotics.coefficients.functions import Function
from asymptotics.core import checks, group_checks
from asymptotics.core.parameters import default
from asymptotics.core.result import (  # noqa: F401  (SpikedResult: the former name, same class)
    RESULT_COLUMNS,
    RiskResult,
    SpikedResult,
)
from asymptotics.equations.solver import ConvergenceError, SolverConfig, Status
from asymptotics.spiked import contrast
from asymptotics.spiked.anderson import solve_point
from asymptotics.spiked.kernels import sizes
from asymptotics.spiked.problem import SpikedProblem, spiked_builder

STATE_NAMES = ("Q1", "Q2", "V1", "V2", "zeta", "psi", "m")


def _args(prob: SpikedProblem, alpha: float) -> tuple:
    t = prob.tables
    return (t.weights, t.kappa, t.mu0, t.mub1, t.mus2, t.h, t.h1, t.h2, alpha / prob.beta,
            prob.lam, prob.delta, prob.beta, prob.fractions, prob.p_inv)


def unpack_state(prob: SpikedProblem, x: np.ndarray) -> dict:
    K, r = prob.loadings.shape
    o = sizes(K, r, prob.k)
    shapes = ((K, K), (K,), (K, K), (K,), (K, r), (K, prob.k), (K,))
    return {n: x[o[i]:o[i + 1]].reshape(s).tolist()
            for i, (n, s) in enumerate(zip(STATE_NAMES, shapes, strict=True))}


def cold_start(prob: SpikedProblem) -> np.ndarray:
    """(V1, V2) to start from: 0.5 diag(pi), 0.5 pi."""
    pi = prob.fractions
    return np.concatenate([0.5 * np.diag(pi).ravel(), 0.5 * pi])


def solve_spiked(prob: SpikedProblem, alpha: float, solver: SolverConfig = SolverConfig(),
                 x0: np.ndarray | None = None, strict: bool = False) -> SpikedResult:
    """Solve at one alpha (docs/THEORY.md §10.5); ``x0``: a warm start of (V1, V2)."""
    alpha = checks.positive("alpha", alpha)
    t = prob.tables
    K = prob.fractions.shape[0]
    nn = np.array(tuple(i * (K + 1) for i in range(K)) + tuple(K * K + g for g in range(K)),
                  dtype=np.int64)
    has_x0 = x0 is not None
    start = (np.ascontiguousarray(x0, dtype=np.float64) if has_x0
             else np.zeros(K * K + K))
    state, code, n_iter, resid, v, solved, risk, sv, power, total = solve_point(
        start, has_x0, nn, t.weights, t.kappa, t.mu0, t.mub1, t.mus2, t.h, t.h1, t.h2,
        alpha / prob.beta, prob.lam, prob.delta, prob.beta, prob.fractions, prob.p_inv,
        solver.rtol, solver.scale_floor, solver.max_iter, solver.damping, solver.anderson)
    status = Status(int(code))
    conv = status == Status.CONVERGED
    if not conv and prob.lam == 0.0:  # the ridgeless limit lam -> 0+ (docs/THEORY.md §10.5)
        from asymptotics.spiked.ridgeless import ridgeless_limit

        lim = ridgeless_limit(prob, alpha, solver,
                              lambda pr, al, sv, x: solve_spiked(pr, al, sv, x0=x))
        if lim is not None:
            if strict and not lim.converged:
                raise ConvergenceError(f"K-group equations at lam = 0, alpha={alpha:g}: "
                                       f"{lim.message}")
            return lim
    if solved and prob.p is None and K >= 2:  # the contrast channel at p = inf (§10.6)
        status, message = contrast.contrast_status(prob, alpha, v, status,
                                                   (sv, power, total))
        conv = status == Status.CONVERGED
    else:
        message = status.message
    risk = risk if conv else math.nan
    if strict and not conv:
        raise ConvergenceError(f"K-group equations did not converge at alpha={alpha:g}: "
                               f"{message}")
    pr = prob.params()
    return SpikedResult(alpha=alpha, risk=float(risk), converged=bool(conv),
                        status=status.name.lower() if isinstance(status, Status) else status,
                        message=message,
                        iterations=int(n_iter), residual=float(resid),
                        order=unpack_state(prob, state), state=tuple(state.tolist()), **pr)


#: the kappa rules tried for r >= 2 until two successive risks agree to QUADRATURE_RTOL
#: (tensor Gauss-Hermite converges slowly where the target is learned almost exactly: at a
#: risk of 1e-3, 24 nodes per dimension at r = 2 were 3% off, 12 at r = 3 20% off)
KAPPA_LADDER = {2: (24, 36, 54, 81, 122), 3: (16, 24, 36, 54), 4: (10, 15, 22, 33)}
QUADRATURE_RTOL = 1e-3
#: the probe points of a curve (fractions of its length) that choose its kappa rule
PROBES = (0.0, 0.25, 0.5, 0.75, 1.0)


def _ladder(r: int) -> tuple[int, ...]:
    return KAPPA_LADDER.get(r, KAPPA_LADDER[4]) if r >= 2 else ()


def _settled(cur: SpikedResult, prev: SpikedResult) -> bool | None:
    """True: two converged rungs agree to QUADRATURE_RTOL; None: the point fails on both rungs
    (a failure of the equations, reported as such); False: not settled (a NaN change, a point
    converged on one rung only, or a change above the tolerance)."""
    if not cur.converged and not prev.converged:
        return None
    return bool(cur.converged and prev.converged and _change(cur, prev) <= QUADRATURE_RTOL)


def _change(cur: SpikedResult, prev: SpikedResult) -> float:
    if not (cur.converged and prev.converged):
        return math.nan
    return abs(cur.risk - prev.risk) / max(abs(cur.risk), 1e-300)


def _refined(solve_at: Callable[..., list[SpikedResult]], r: int, n_kappa: int | None,
             n_omega: int | None, n_points: int = 1) -> list[SpikedResult]:
    """Solve on the ladder of kappa rules until every point is settled (:func:`_settled`: two
    successive converged rules agree to :data:`QUADRATURE_RTOL`); a point converged on the
    last rule but never settled is NaN with the reason. The rule is decided once for the whole
    curve: a few probe points (``solve_at(n, no, probes)``) climb first, then the whole curve
    is solved from the rule where they settle (the same rule as climbing with every point,
    except where a probe's change is within solver noise of the tolerance). A rule given by
    the caller (``n_kappa``), or r = 1 (the one-spike rule), is used as given."""
    if n_kappa is not None or r == 1:
        return solve_at(n_kappa, n_omega)
    ladder = _ladder(r)
    start = 0
    if n_points > 2 * len(PROBES):
        probes = sorted({round(f * (n_points - 1)) for f in PROBES})
        prev_p = solve_at(ladder[0], n_omega, probes)
        for i in range(1, len(ladder)):
            cur_p = solve_at(ladder[i], n_omega, probes)
            if all(_settled(c, q) is not False for c, q in zip(cur_p, prev_p, strict=True)):
                start = i - 1
                break
            prev_p = cur_p
        else:
            start = len(ladder) - 2
    prev: list[SpikedResult] = solve_at(ladder[start], n_omega)
    for n in ladder[start + 1:]:
        cur = solve_at(n, n_omega)  # (the rule of the unlearned target directions is kept)
        out = [replace(c, n_kappa=n, quadrature_change=_change(c, q))
               for c, q in zip(cur, prev, strict=True)]
        settled = [_settled(c, q) for c, q in zip(cur, prev, strict=True)]
        if all(ok is not False for ok in settled):
            return out
        prev = cur
    return [r_ if ok is not False or not r_.converged else replace(
        r_, risk=math.nan, converged=False, status="max_iter",
        message=f"quadrature not resolved: the risk moves by {r_.quadrature_change:.2g} "
                f"(relative; nan: it converged on one rule only) from {ladder[-2]} to "
                f"{ladder[-1]} kappa nodes per dimension; pass a larger n_kappa")
        for r_, ok in zip(out, settled, strict=True)]


def risk_spiked(alpha: float, *, sigma: str | Function | Callable = default("sigma"),
                target: str | Function | Callable, loadings: object, bulk: object,
                fractions: object, overlaps: object, lam: float = default("lam"),
                beta: float = default("beta"), delta: float = default("delta"),
                p: float | None = default("p"), strict: bool = False,
                solver: SolverConfig = SolverConfig(), n_kappa: int | None = None,
                n_omega: int | None = None) -> SpikedResult:
    """Asymptotic test error of ridge on the features of K neuron groups with r learned
    directions (docs/THEORY.md §10): rows of group g (fraction ``fractions[g]`` of the p neurons)
    are ``sqrt(bulk[g]) G_i + V loadings[g]``; the target ``g(z1..zk)`` reads
    ``theta_j = V overlaps[:, j] + rho_j t_j``. ``p``: finite width (§10.6), None the limit.
    ``n_kappa`` / ``n_omega``: Gauss-Hermite nodes per kappa / unlearned target dimension; by
    default (r >= 2) the kappa rule is refined along :data:`KAPPA_LADDER` until the risk moves
    by less than :data:`QUADRATURE_RTOL` (``n_kappa``, ``quadrature_change`` of the result)."""
    alpha = checks.positive("alpha", alpha)
    checks.flag("strict", strict)
    group_checks.spiked_inputs(loadings, bulk, fractions, overlaps, p, n_kappa, n_omega)
    group_checks.instance("solver", solver, SolverConfig, "SolverConfig(rtol=1e-10)")
    params = dict(sigma=sigma, target=target, loadings=loadings, bulk=bulk,
                  fractions=fractions, overlaps=overlaps, lam=lam, beta=beta, delta=delta, p=p)

    build = spiked_builder(**params)
    start: list = [None]  # the (V1, V2) of the previous rule: the next rule starts there

    def solve_at(nk: int | None, no: int | None) -> list[SpikedResult]:
        prob = build(nk, no)
        res = solve_spiked(prob, alpha, solver, x0=start[0])
        if res.converged:
            o = sizes(*prob.loadings.shape, prob.k)
            start[0] = np.array(res.state[o[2]:o[4]])
        return [res]

    r = np.shape(np.asarray(loadings, dtype=object))[1] if np.ndim(loadings) == 2 else 1
    res = _refined(solve_at, int(r), n_kappa, n_omega)[0]
    if strict and not res.converged:
        raise ConvergenceError(f"K-group equations did not converge at alpha={alpha:g}: "
                               f"{res.message}")
    return res


def risk_spiked_curve(alphas: Iterable[float], *, strict: bool = False,
                      solver: SolverConfig = SolverConfig(), progress: bool | None = None,
                      **params):
    """Risk along alpha (warm starts) as a pandas DataFrame: one row per alpha, the columns of
    every result (``RESULT_COLUMNS``; lists and the ``order`` mapping as JSON). ``progress``: a
    report per point solved on stderr (:class:`asymptotics.core.progress.Progress`; False: none;
    with r >= 2 spikes each quadrature rule of the refinement ladder solves the curve again)."""
    import pandas as pd

    from asymptotics.core.progress import Progress

    checks.flag("strict", strict)
    checks.optional_flag("progress", progress)
    alphas = [checks.positive("alpha", a) for a in checks.sequence("alphas", alphas)]
    n_kappa, n_omega = params.pop("n_kappa", None), params.pop("n_omega", None)
    group_checks.spiked_inputs(*(params.get(n) for n in ("loadings", "bulk", "fractions",
                                                        "overlaps", "p")), n_kappa, n_omega)
    group_checks.instance("solver", solver, SolverConfig, "SolverConfig(rtol=1e-10)")

    built: dict = {}  # the problem of each rule (the probes and the curve share it)
    build = spiked_builder(**params)

    def solve_at(nk: int | None, no: int | None, idx: list[int] | None = None
                 ) -> list[SpikedResult]:
        if (nk, no) not in built:
            built[(nk, no)] = build(nk, no)
        prob = built[(nk, no)]
        out, x0 = [], None
        K = prob.fractions.shape[0]
        pts = alphas if idx is None else [alphas[i] for i in idx]
        desc = "spiked curve" + ("" if nk is None else f" ({nk} kappa nodes)")
        with Progress(len(pts), desc, unit="pt", enabled=progress if idx is None else False) as bar:
            for a in bar.iter(pts):
                res = solve_spiked(prob, a, solver, x0=x0)
                if res.converged:
                    o = sizes(K, *prob.loadings.shape[1:], prob.k)
                    x0 = np.array(res.state[o[2]:o[4]])
                out.append(res)
        return out

    loadings = params.get("loadings")
    r = np.shape(np.asarray(loadings, dtype=object))[1] if np.ndim(loadings) == 2 else 1
    results = _refined(solve_at, int(r), n_kappa, n_omega, len(alphas))
    if strict and not all(res.converged for res in results):
        bad = next(res for res in results if not res.converged)
        raise ConvergenceError(f"K-group equations did not converge at alpha={bad.alpha:g}: "
                               f"{bad.message}")
    return pd.DataFrame([res.to_dict() for res in results], columns=RESULT_COLUMNS)


def risk_spiked_grid(alphas: Iterable[float], lams: Iterable[float], *,
                     progress: bool | None = None, **params):
    """Risk on an (alpha, lam) grid: the curves along alpha for each lam, concatenated.
    ``progress``: a report per curve on stderr (False: none)."""
    import pandas as pd

    from asymptotics.core.progress import Progress

    checks.optional_flag("progress", progress)
    lams = checks.sequence("lams", lams)
    alphas = checks.sequence("alphas", alphas)
    params.pop("lam", None)
    bar = Progress(len(lams), "spiked grid", unit="curves", enabled=progress)
    with bar:
        frames = [risk_spiked_curve(alphas, lam=lam, progress=False, **params)
                  for lam in bar.iter(lams)]
    return pd.concat(frames, ignore_index=True)


def spike_contributions(alpha: float, **params) -> dict:
    """What each learned direction buys: the risk with all loadings (``"all"``) and with the
    loadings along direction a zeroed in every group (``"without_<a+1>"``), plus the random-features
    risk with every loading zeroed (``"none"``). Same parameters as :func:`risk_spiked`."""
    group_checks.spiked_inputs(*(params.get(n) for n in ("loadings", "bulk", "fractions",
                                                        "overlaps", "p")))
    U = np.array(params["loadings"], dtype=np.float64)
    out = {"all": risk_spiked(alpha, **params).risk}
    for a in range(U.shape[1]):
        V = U.copy()
        V[:, a] = 0.0
        out[f"without_{a + 1}"] = risk_spiked(alpha, **{**params, "loadings": V}).risk
    out["none"] = risk_spiked(alpha, **{**params, "loadings": np.zeros_like(U)}).risk
    return out
