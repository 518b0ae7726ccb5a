"""One theory point (and a curve point by point) through the Python orchestration of the
solver (docs/THEORY.md §5), as the one result record of every route
(:class:`~asymptotics.core.result.RiskResult`, re-exported here).

:func:`solve_point` solves the equations at one alpha for a prepared :class:`Problem`:
``engine="compiled"`` runs the whole solve in one numba kernel (``asymptotics.api.paths``),
``engine="python"`` orchestrates the same algorithm in Python (``asymptotics.equations.solver``:
Anderson
on the closed V-subsystem, exact completion, seven-variable residual; kept for comparison, and
the home of the ridgeless limit lam -> 0+). An unconverged point has ``risk = nan`` and
``converged = False`` (``strict=True`` raises :class:`ConvergenceError`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from asymptotics.core.result import (  # noqa: F401  (RiskResult: re-exported)
    HAT_NAMES,
    STATE_NAMES,
    RiskResult,
    one_step_fields,
)
from asymptotics.equations.fixed_point import (
    complete_state,
    conjugates,
    fixed_point_map,
    v_update,
)
from asymptotics.equations.solver import (  # noqa: F401  (ConvergenceError: re-exported)
    ConvergenceError,
    SolverConfig,
    Status,
    relative_residual,
    solve,
)
from asymptotics.equations.solver_kernels import RISK
from asymptotics.models.problem import Problem, check_value, function_name

NONNEG = (0, 1, 2, 3)  # q1, q2, V1, V2
V_COLD = np.array([0.5, 0.5])


def _solve_state(
    problem: Problem, alpha: float, lam: float, x0: np.ndarray | None, solver: SolverConfig
) -> tuple[np.ndarray, Status, float, int, np.ndarray]:
    """Anderson on the closed V-subsystem, exact completion, 7-variable residual check."""
    args = problem.map_args(alpha, lam)
    v_args = (args.weights, args.mu1, args.mu_star2, args.A, args.lam, *args.measure())

    def vmap(v: np.ndarray) -> np.ndarray:
        return v_update(v, *v_args)

    start = V_COLD if x0 is None else np.asarray(x0, dtype=np.float64)[2:4]
    v_solver = replace(solver, rtol=solver.rtol / 10)  # leaves room for the 7-variable check
    sol = solve(vmap, start, v_solver, (0, 1))
    if not sol.converged and x0 is not None:  # warm start failed: retry cold
        sol2 = solve(vmap, V_COLD, v_solver, (0, 1))
        sol = sol2 if sol2.converged else sol
    if not sol.converged and solver.damping > 0.2:  # last resort: heavier damping
        sol3 = solve(vmap, V_COLD, replace(v_solver, damping=0.2), (0, 1))
        sol = sol3 if sol3.converged else sol
    status, v = sol.status, sol.x
    if status == Status.CONVERGED:
        for _ in range(3):  # polish: a contraction step costs microseconds
            v_next = vmap(v)
            if not np.all(np.isfinite(v_next)):
                break
            v = v_next
    x = complete_state(v, *args)
    residual = math.inf
    if status == Status.CONVERGED:
        if not np.all(np.isfinite(x)) or np.any(x[list(NONNEG)] < 0):
            status = Status.OUT_OF_DOMAIN
        else:
            # the residual reported is that of the equations of THEORY.md §5 applied verbatim,
            # over all seven unknowns
            residual = relative_residual(x, fixed_point_map(x, *args), solver.scale_floor)
            if not residual <= solver.rtol:
                status = Status.MAX_ITER
    hat = conjugates(x, *args[:8], args[8], problem.delta)
    return x, status, residual, sol.n_iter, hat


# lam -> 0+ ladder of the ridgeless limit: one decade per step, warm-started with V scaled by 10
RIDGELESS_LADDER = tuple(10.0**-k for k in range(2, 14))
RIDGELESS_RTOL = 1e-6  # accepted error of the extrapolated lam = 0 risk, relative


def _ridgeless_limit(problem: Problem, alpha: float, solver: SolverConfig) -> tuple:
    """lam = 0 where the equations have no finite solution at lam = 0 itself (interpolating
    regime alpha < beta: V ~ 1/lam). Follow lam = 1e-2, 1e-3, ..., 1e-13 (warm starts with V
    scaled by the step, since V ~ 1/lam) and decide from the risks R(lam):

    * a finite limit: R = R0 + a lam + O(lam^2), the increments shrink tenfold per decade; the
      Richardson estimate R0 ~ R(l) + (R(l) - R(10 l)) / 9 of the last two pairs must agree to
      :data:`RIDGELESS_RTOL` (relative), and is reported;
    * divergence (status ``diverged``): at the smallest lams followed the risk still grows and
      its increments do not shrink (at the interpolation peak alpha = beta, R ~ lam^(-1/2));
    * otherwise (the solver lost the branch): not converged.
    Returns ``(x, status, residual, n_iter, hat, message)``."""
    lams: list[float] = []
    risks: list[float] = []
    out = None
    x_prev = None
    n_total = 0
    for lam in RIDGELESS_LADDER:
        x0 = None
        if x_prev is not None:
            x0 = np.array(x_prev, dtype=np.float64)
            x0[2:4] *= lams[-1] / lam
        x, status, residual, n_iter, hat = _solve_state(problem, alpha, lam, x0, solver)
        n_total += n_iter
        if status != Status.CONVERGED or not math.isfinite(hat[RISK]):
            break
        lams.append(lam)
        risks.append(float(hat[RISK]))
        out, x_prev = (x, status, residual, n_iter, hat), x
        if len(risks) >= 3:
            r1, r2, r3 = risks[-3:]
            d1, d2 = r2 - r1, r3 - r2
            est_now, est_before = r3 + d2 / 9.0, r2 + d1 / 9.0
            if abs(d2) <= 0.2 * abs(d1) + 1e-15 and abs(est_now - est_before) <= \
                    RIDGELESS_RTOL * max(1.0, abs(est_now)):
                x, status, residual, _, hat = out
                hat = hat.copy()
                hat[RISK] = est_now
                return x, status, residual, n_total, hat, (
                    f"converged: ridgeless limit lam -> 0+ (Richardson over lam = "
                    f"{lams[-2]:g}, {lams[-1]:g}; order parameters at lam = {lams[-1]:g})")
    if out is None:
        x, status, residual, n_iter, hat = x, status, residual, n_iter, hat
        return x, Status.NON_FINITE, math.inf, n_total, hat, (
            "lam = 0: no finite solution, and the lam -> 0+ limit could not be followed from "
            f"lam = {RIDGELESS_LADDER[0]:g}")
    x, _, residual, _, hat = out
    if len(risks) >= 3:
        r1, r2, r3 = risks[-3:]
        d1, d2 = r2 - r1, r3 - r2
        if d1 > 0 and d2 > 0 and d2 >= 0.5 * d1:
            return x, Status.DIVERGED, residual, n_total, hat, (
                f"lam = 0: the risk diverges as lam -> 0+ (R = {r3:.3g} at lam = {lams[-1]:g}, "
                f"x{d2 / d1 * 1.0:.2g} per decade): the interpolation peak of ridgeless "
                f"regression (alpha = beta = {problem.beta:g})")
    return x, Status.MAX_ITER, residual, n_total, hat, (
        f"lam = 0: the lam -> 0+ limit could not be followed below lam = {lams[-1]:g} "
        f"(R = {risks[-1]:.6g} there)")


PEAK_RTOL = 1e-12  # |alpha - alpha_peak| <= PEAK_RTOL alpha_peak is the peak itself


def interpolation_threshold(problem: Problem) -> float:
    """The alpha at which ridgeless regression on the features interpolates exactly (n equals
    the rank of the feature covariance; docs/THEORY.md §7): alpha = beta when sigma has a
    nonlinear part (mu_*^2 = E_k mu_*(k)^2 > 0 makes the features' covariance full rank p),
    alpha = min(beta, 1) for an affine sigma (features of rank min(p, d))."""
    k = problem.coefficients
    second = float(np.dot(k.weights, k.mu0**2 + k.mu1**2 * problem.spike.c + k.mu_star2))
    nonlinear = float(np.dot(k.weights, k.mu_star2)) > 1e-12 * max(second, 1e-300)
    return problem.beta if nonlinear else min(problem.beta, 1.0)


def ridgeless_verdict(problem: Problem, alpha: float) -> tuple[Status, str] | None:
    """At lam = 0, the analytic answer where one exists, else None (solve).

    At the interpolation threshold (:func:`interpolation_threshold`) the minimum-norm
    interpolant's norm, and with it the risk, diverges as lam -> 0+ (R ~ lam^(-1/2)) whenever
    the labels are not identically zero: the square feature matrix has singular values down to
    0 and any label component along them is amplified without bound. With labels identically
    zero (E g^2 = 0, delta = 0) the interpolant is a = 0 and the risk is 0."""
    peak = interpolation_threshold(problem)
    if abs(alpha - peak) > PEAK_RTOL * peak:
        return None
    k = problem.coefficients
    if float(np.dot(k.weights, k.h2)) + problem.delta <= 0.0:
        return Status.CONVERGED, ("converged: lam = 0 with labels identically zero: the "
                                  "minimum-norm interpolant is 0, risk 0")
    return Status.DIVERGED, (
        f"lam = 0 at the interpolation threshold alpha = {peak:g} (n equals the rank of the "
        "features): the ridgeless risk diverges (R ~ lam^(-1/2) as lam -> 0+), the "
        "interpolation peak of ridgeless regression; use lam > 0 or another alpha")


def solve_point(
    problem: Problem,
    alpha: float,
    *,
    x0: np.ndarray | None = None,
    solver: SolverConfig = SolverConfig(),
    strict: bool = False,
    engine: str = "compiled",
) -> RiskResult:
    """Solve the equations of THEORY.md §5 at one alpha for a prepared :class:`Problem`.
    ``engine``: "compiled" (the whole solve in one numba kernel, ``solver_kernels``) or
    "python" (the same algorithm orchestrated in Python; kept for comparison)."""
    if not isinstance(problem, Problem):
        raise TypeError(f"problem must be a Problem (e.g. build_problem(sigma='tanh')), got "
                        f"{problem!r}")
    alpha = check_value("alpha", alpha, positive=True)
    check_engine(engine)
    verdict = ridgeless_verdict(problem, alpha) if problem.lam == 0.0 else None
    if verdict is not None:  # decided from the equations, not from the iterates
        status, message = verdict
        x = np.zeros(len(STATE_NAMES))
        hat = np.zeros(len(HAT_NAMES) + 1)  # the risk is 0 where the verdict is "converged"
        n_iter, residual = 0, (0.0 if status == Status.CONVERGED else math.inf)
    elif engine == "compiled" and problem.lam > 0:
        from asymptotics.api.paths import solve_path

        a = np.array([alpha])
        states, hats, st, its, res = solve_path(problem, a, None, solver) if x0 is None else \
            _solve_one_warm(problem, alpha, x0, solver)
        x, hat, status, n_iter, residual = states[0], hats[0], Status(int(st[0])), int(its[0]), \
            float(res[0])
        message = status.message
    else:
        x, status, residual, n_iter, hat = _solve_state(problem, alpha, problem.lam, x0, solver)
        message = status.message
        if status != Status.CONVERGED and problem.lam == 0.0:
            x, status, residual, n_iter, hat, message = _ridgeless_limit(problem, alpha, solver)
    converged = status == Status.CONVERGED
    risk_value = float(hat[RISK]) if converged else math.nan
    if strict and not converged:
        raise ConvergenceError(
            f"equations did not converge at alpha={alpha:g}: {message} "
            f"(status {status.name.lower()}, iterations={n_iter}, residual={residual:.3g})"
        )
    nan = math.nan
    known = converged and verdict is None  # a verdict gives the risk, not the order parameters
    vals = dict(zip(STATE_NAMES, (float(v) if known else nan for v in x), strict=True))
    hats = dict(zip(HAT_NAMES, (float(v) if known else nan for v in hat[:6]), strict=True))
    sp = problem.spike
    return RiskResult(
        alpha=alpha, sigma=function_name(problem.sigma), target=function_name(problem.target),
        alpha0=problem.alpha0, eta=problem.eta, **one_step_fields(problem.eta),
        lam=problem.lam, beta=problem.beta, delta=problem.delta, model=problem.model,
        measure=problem.measure.kind,
        r=sp.r, c=sp.c, gamma=sp.gamma,
        risk=risk_value, converged=converged, status=status.name.lower(),
        message=message, iterations=n_iter, residual=residual,
        **vals, **hats, state=tuple(float(v) for v in x),
        p=math.inf if problem.p is None else problem.p,
        common_row=problem.common_row,
    )


ENGINES = ("compiled", "python")


def check_engine(engine: str) -> None:
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")


def _solve_one_warm(problem: Problem, alpha: float, x0: np.ndarray, solver: SolverConfig):
    from asymptotics.api.paths import solver_args
    from asymptotics.equations.solver_kernels import solve_point_kernel

    x, hat, st, it, rs = solve_point_kernel(np.asarray(x0, dtype=np.float64), True,
                                            *problem.map_args(alpha), *solver_args(solver))
    return x[None, :], hat[None, :], np.array([st]), np.array([it]), np.array([rs])


def curve_results(
    problem: Problem,
    alphas: Sequence[float],
    solver: SolverConfig,
    strict: bool,
    progress: bool | None,
) -> list[RiskResult]:
    from asymptotics.core.progress import progress_iter

    out: list[RiskResult] = []
    x_prev: np.ndarray | None = None
    a_prev: float | None = None
    for a in progress_iter(alphas, len(alphas), "risk curve", unit="pt", enabled=progress):
        res = solve_point(problem, a, x0=x_prev, solver=solver, engine="python")
        if not res.converged and x_prev is not None and a_prev is not None:
            # continuation: walk from the last good alpha in halving steps
            x_walk = x_prev
            for frac in (0.5, 0.75, 0.875, 1.0):
                mid = solve_point(problem, a_prev + frac * (a - a_prev), x0=x_walk, solver=solver,
                                  engine="python")
                if not mid.converged:
                    break
                x_walk = np.array(mid.state)
            res = mid if mid.converged and frac == 1.0 else res
        if strict and not res.converged:
            raise ConvergenceError(f"equations did not converge at alpha={a:g}: {res.message}")
        if res.converged:
            x_prev, a_prev = np.array(res.state), a
        out.append(res)
    return out


