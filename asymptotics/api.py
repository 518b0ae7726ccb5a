"""Public API: the asymptotic test error of one giant step (sRF) and of random features.

``risk(alpha, sigma=..., target=..., alpha0=..., eta=..., lam=..., beta=..., delta=...)`` maps one
giant step to spiked random features (THEORY.md §3, asymptotics.srf), computes the cGET
coefficients (§4, asymptotics.cget), solves the self-consistent equations (§5,
asymptotics.fixed_point + asymptotics.solver) against the spectral measure (§6,
asymptotics.marchenko_pastur) and returns a frozen :class:`RiskResult`. ``eta = 0`` is the
random-features baseline. An unconverged point has ``risk = nan`` and ``converged = False``
(``strict=True`` raises :class:`ConvergenceError` instead).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from .cget import ConditionalCoefficients, conditional_coefficients, ge_coefficients
from .fixed_point import (
    HAT_NAMES,
    STATE_NAMES,
    complete_state,
    conjugates,
    fixed_point_map,
    v_update,
)
from .functions import Function, get_function
from .marchenko_pastur import SpectralMeasure, marchenko_pastur
from .solver import SolverConfig, Status, relative_residual, solve
from .srf import SpikeMapping, srf_mapping

if TYPE_CHECKING:
    import pandas as pd

NONNEG = (0, 1, 2, 3)  # q1, q2, V1, V2
#: which trained model a result describes: the sRF surrogate, the network itself (deterministic
#: network theory, or the semi-empirical one with ``measure=from_weights(W1, v, theta)``), or
#: random features (eta = 0).
MODELS = ("srf", "network", "rf")
V_COLD = np.array([0.5, 0.5])


class ConvergenceError(RuntimeError):
    """Raised in strict mode when the self-consistent equations do not converge."""


def _check(name: str, value: float, *, positive: bool = False, allow_zero: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}")
    if positive and not v > 0:
        raise ValueError(f"{name} must be > 0, got {v:g}")
    if not positive and not (v > 0 or (allow_zero and v == 0)):
        raise ValueError(f"{name} must be >= 0, got {v:g}")
    return v


def _name(fn: Function) -> str:
    return fn.name


@dataclass(frozen=True)
class RiskResult:
    """One point of the theory, with every parameter that produced it (THEORY.md §1 conventions).

    ``risk`` is the test error E_x (g - f)^2 on noiseless inputs; NaN unless ``converged``.
    """

    alpha: float
    sigma: str
    target: str
    alpha0: float
    eta: float
    lam: float
    beta: float
    delta: float
    model: str
    measure: str
    r: float
    c: float
    gamma: float
    risk: float
    converged: bool
    status: str
    message: str
    iterations: int
    residual: float
    q1: float
    q2: float
    V1: float
    V2: float
    zeta: float
    psi: float
    m: float
    Vhat1: float
    Vhat2: float
    qhat1: float
    qhat2: float
    zetahat: float
    psihat: float
    state: tuple[float, ...] = field(repr=False, compare=False)

    def as_dict(self) -> dict:
        out = asdict(self)
        out.pop("state")
        return out


@dataclass(frozen=True)
class Problem:
    """Everything but alpha: functions, the sRF mapping, cGET tables and the spectral measure."""

    sigma: Function
    target: Function
    alpha0: float
    eta: float
    lam: float
    beta: float
    delta: float
    spike: SpikeMapping
    coefficients: ConditionalCoefficients
    measure: SpectralMeasure
    model: str = "srf"

    def map_args(self, alpha: float, lam: float | None = None) -> tuple:
        k, ms = self.coefficients, self.measure
        return (k.weights, k.kappa, k.mu0, k.mu1, k.mu_star2, k.h, k.h1, k.h2,
                alpha / self.beta, self.lam if lam is None else lam, self.delta, ms.code,
                ms.beta, ms.c, ms.rho, ms.F, ms.H, ms.G)


def build_problem(
    *,
    sigma: str | Function = "tanh",
    target: str | Function = "tanh",
    alpha0: float = 2.0,
    eta: float = 1.0,
    lam: float = 0.01,
    beta: float = 1.0,
    delta: float = 0.0,
    spike: SpikeMapping | None = None,
    gamma: float | None = None,
    measure: SpectralMeasure | None = None,
    n_kappa: int = 120,
    model: str = "srf",
) -> Problem:
    """Validate parameters and precompute what does not depend on alpha.

    ``spike`` overrides the one-step mapping (e.g. r = 0.9, c = gamma = 1 of the bounds,
    THEORY.md §7);
    ``gamma`` overrides only the split of theta* between v and t (at eta = 0 the risk must not
    depend on it: a test of the equations)."""
    alpha0 = _check("alpha0", alpha0, positive=True)
    eta = _check("eta", eta)
    lam = _check("lam", lam)
    beta = _check("beta", beta, positive=True)
    delta = _check("delta", delta)
    s, g = get_function(sigma), get_function(target)
    if model not in MODELS:
        raise ValueError(f"model must be one of {', '.join(MODELS)}, got {model!r}")
    if model == "rf" and eta != 0:
        raise ValueError(f"model 'rf' is random features (eta = 0), got eta={eta:g}")
    if model == "network" and measure is None and spike is None and eta > 0:
        # deterministic network theory: MP bulk with the step's channels (DERIVATIONS.md §7)
        from .network import network_measure

        measure = network_measure(s, g, alpha0=alpha0, eta=eta, beta=beta, delta=delta)
    if spike is None and measure is not None and math.isfinite(measure.r):
        # a measure built from a first layer fixes the spike it implies (docs/DERIVATIONS.md §6)
        gm = measure.gamma
        nan = math.nan
        spike = SpikeMapping(measure.r, measure.c, gm, math.sqrt(max(1 - gm * gm, 0.0)),
                             nan, nan, nan, nan)
    if spike is None:
        try:
            spike = srf_mapping(s, g, alpha0=alpha0, eta=eta, delta=delta,
                                ge=ge_coefficients(s, g))
        except (OverflowError, FloatingPointError, ZeroDivisionError):
            raise ValueError(
                f"the one-step mapping overflows float64 at eta={eta:g}, alpha0={alpha0:g}, "
                f"delta={delta:g} (sigma={s.name}, target={g.name}); use smaller values"
            ) from None
    if gamma is not None:
        gamma = float(gamma)
        if not -1.0 <= gamma <= 1.0:
            raise ValueError(f"gamma must be in [-1, 1], got {gamma}")
        spike = SpikeMapping(spike.r, spike.c, gamma, math.sqrt(1 - gamma * gamma),
                             spike.scale, spike.residual_mean, spike.residual_second_moment,
                             spike.u_norm)
    coeffs = conditional_coefficients(s, g, r=spike.r, c=spike.c, gamma=spike.gamma,
                                      n_kappa=n_kappa)
    if measure is None:
        measure = marchenko_pastur(beta, spike.c)
    return Problem(s, g, alpha0, eta, lam, beta, delta, spike, coeffs, measure, model)


def _solve_state(
    problem: Problem, alpha: float, lam: float, x0: np.ndarray | None, solver: SolverConfig
) -> tuple[np.ndarray, Status, float, int, np.ndarray]:
    """Anderson on the closed V-subsystem, exact completion, 7-variable residual check."""
    args = problem.map_args(alpha, lam)
    v_args = (args[0], args[3], args[4], args[8], args[9]) + args[11:]

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
        if status != Status.CONVERGED or not math.isfinite(hat[6]):
            break
        lams.append(lam)
        risks.append(float(hat[6]))
        out, x_prev = (x, status, residual, n_iter, hat), x
        if len(risks) >= 3:
            r1, r2, r3 = risks[-3:]
            d1, d2 = r2 - r1, r3 - r2
            est_now, est_before = r3 + d2 / 9.0, r2 + d1 / 9.0
            if abs(d2) <= 0.2 * abs(d1) + 1e-15 and abs(est_now - est_before) <= \
                    RIDGELESS_RTOL * max(1.0, abs(est_now)):
                x, status, residual, _, hat = out
                hat = hat.copy()
                hat[6] = est_now
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
    alpha = _check("alpha", alpha, positive=True)
    _check_engine(engine)
    if engine == "compiled" and problem.lam > 0:
        from .grid import solve_path

        a = np.array([alpha])
        states, hats, st, its, res = solve_path(problem, a, None, solver) if x0 is None else \
            _solve_one_warm(problem, alpha, x0, solver)
        x, hat, status, n_iter, residual = states[0], hats[0], Status(int(st[0])), int(its[0]), \
            float(res[0])
    else:
        x, status, residual, n_iter, hat = _solve_state(problem, alpha, problem.lam, x0, solver)
    message = status.message
    if status != Status.CONVERGED and problem.lam == 0.0:
        x, status, residual, n_iter, hat, message = _ridgeless_limit(problem, alpha, solver)
    converged = status == Status.CONVERGED
    risk_value = float(hat[6]) if converged else math.nan
    if strict and not converged:
        raise ConvergenceError(
            f"equations did not converge at alpha={alpha:g}: {message} "
            f"(status {status.name.lower()}, iterations={n_iter}, residual={residual:.3g})"
        )
    nan = math.nan
    vals = dict(zip(STATE_NAMES, (float(v) if converged else nan for v in x), strict=True))
    hats = dict(zip(HAT_NAMES, (float(v) if converged else nan for v in hat[:6]), strict=True))
    sp = problem.spike
    return RiskResult(
        alpha=alpha, sigma=_name(problem.sigma), target=_name(problem.target),
        alpha0=problem.alpha0, eta=problem.eta, lam=problem.lam, beta=problem.beta,
        delta=problem.delta, model=problem.model, measure=problem.measure.kind,
        r=sp.r, c=sp.c, gamma=sp.gamma,
        risk=risk_value, converged=converged, status=status.name.lower(),
        message=message, iterations=n_iter, residual=residual,
        **vals, **hats, state=tuple(float(v) for v in x),
    )


ENGINES = ("compiled", "python")


def _check_engine(engine: str) -> None:
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")


def _solve_one_warm(problem: Problem, alpha: float, x0: np.ndarray, solver: SolverConfig):
    from .grid import _solver_args
    from .solver_kernels import solve_point_kernel

    x, hat, st, it, rs = solve_point_kernel(np.asarray(x0, dtype=np.float64), True,
                                            *problem.map_args(alpha), *_solver_args(solver))
    return x[None, :], hat[None, :], np.array([st]), np.array([it]), np.array([rs])


def risk(
    alpha: float,
    *,
    sigma: str | Function = "tanh",
    target: str | Function = "tanh",
    alpha0: float = 2.0,
    eta: float | str = 1.0,
    lam: float | str = 0.01,
    beta: float = 1.0,
    delta: float = 0.0,
    spike: SpikeMapping | None = None,
    gamma: float | None = None,
    measure: SpectralMeasure | None = None,
    solver: SolverConfig = SolverConfig(),
    strict: bool = False,
    engine: str = "compiled",
    model: str = "srf",
) -> RiskResult:
    """Asymptotic test error after one giant step (eta = eta_tilde > 0) or of random features
    (eta = 0), at sample ratio alpha = n/d, width ratio beta = p/d, first batch alpha0 = n0/d,
    ridge lam (sum-loss convention of THEORY.md §1) and label noise delta. The defaults are those
    of ``python -m asymptotics curve`` (tanh, tanh, alpha0 = 2, eta = 1, lam = 0.01, beta = 1).
    At lam = 0 the ridgeless limit lam -> 0+ is taken; at the interpolation peak alpha = beta it
    diverges: risk NaN, status ``diverged``.
    ``lam="optimal"`` or ``eta="optimal"``: the point at the minimiser over lam or eta_tilde
    (``asymptotics.grid``; the result's ``lam`` / ``eta`` is the minimiser, ``message`` says if
    it sits at a bound).

    ``model``: "srf" (default) describes the spiked-random-features surrogate of the step;
    "network" the trained network itself, through the deterministic network theory
    (docs/DERIVATIONS.md §7: MP bulk with the step's F_vv, F_vt, F_tt channels) or, with
    ``measure=from_weights(W1, v, theta)``, the semi-empirical theory of a given first layer;
    "rf" is random features (requires eta = 0)."""
    note = None
    if isinstance(lam, str) or isinstance(eta, str):  # the minimiser, then the point there
        alpha = _check("alpha", alpha, positive=True)
        best = _optimal_curve([alpha], sigma=sigma, target=target, alpha0=alpha0, eta=eta,
                              lam=lam, beta=beta, delta=delta, solver=solver,
                              overrides=dict(spike=spike, gamma=gamma, measure=measure,
                                             model=model))
        if not bool(best.converged[0]):
            if strict:
                raise ConvergenceError(f"no converged optimum at alpha={alpha:g}")
            lam = 1.0 if isinstance(lam, str) else lam
            eta = 0.0 if isinstance(eta, str) else eta
        else:
            lam, eta = float(best.lam[0]), float(best.eta[0])
        note = str(best.message[0]) if bool(best.converged[0]) else None
    problem = build_problem(sigma=sigma, target=target, alpha0=alpha0, eta=eta, lam=lam,
                            beta=beta, delta=delta, spike=spike, gamma=gamma, measure=measure,
                            model=model)
    res = solve_point(problem, alpha, solver=solver, strict=strict, engine=engine)
    if note is not None and res.converged:
        res = replace(res, message=note)
    return res


def _curve_results(
    problem: Problem,
    alphas: Sequence[float],
    solver: SolverConfig,
    strict: bool,
    progress: bool | None,
) -> list[RiskResult]:
    from ._cli import progress_iter

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


def risk_curve(
    alphas: Iterable[float],
    *,
    sigma: str | Function = "tanh",
    target: str | Function = "tanh",
    alpha0: float = 2.0,
    eta: float | str = 1.0,
    lam: float | str = 0.01,
    beta: float = 1.0,
    delta: float = 0.0,
    spike: SpikeMapping | None = None,
    gamma: float | None = None,
    measure: SpectralMeasure | None = None,
    solver: SolverConfig = SolverConfig(),
    strict: bool = False,
    progress: bool | None = None,
    engine: str = "compiled",
    model: str = "srf",
) -> pd.DataFrame:
    """Risk along alpha (warm starts, continuation on failure) as a tidy DataFrame: one row per
    alpha in the given order, columns ``alpha, risk, converged, iterations`` plus every order
    parameter, conjugate and input parameter. ``lam="optimal"`` or ``eta="optimal"``: the risk
    minimised over lam (log scale) or eta_tilde at each alpha (``asymptotics.grid``), with the
    minimiser as the ``lam`` / ``eta`` column and ``interior`` saying whether it lies inside the
    search bounds. ``engine``: "compiled" (default) or "python" (same numbers, for comparison)."""
    import pandas as pd

    _check_engine(engine)
    alphas = [_check("alpha", a, positive=True) for a in alphas]
    if not alphas:
        raise ValueError("alphas must contain at least one value")
    overrides = dict(spike=spike, gamma=gamma, measure=measure, model=model)
    if isinstance(lam, str) or isinstance(eta, str):
        df = _optimal_curve(alphas, sigma=sigma, target=target, alpha0=alpha0, eta=eta, lam=lam,
                            beta=beta, delta=delta, solver=solver, overrides=overrides)
        if strict and not df.converged.all():
            bad = df.alpha[~df.converged].tolist()
            raise ConvergenceError(f"no converged optimum at alpha={bad}")
        return df
    problem = build_problem(sigma=sigma, target=target, alpha0=alpha0, eta=eta, lam=lam,
                            beta=beta, delta=delta, **overrides)
    first = ["alpha", "risk", "converged", "iterations", "residual"]
    if engine == "compiled" and problem.lam > 0:
        from .grid import path_frame, solve_path

        a = np.asarray(alphas, dtype=np.float64)
        lams = np.full(a.shape[0], problem.lam)
        df = path_frame(problem, a, lams, solve_path(problem, a, lams, solver))
        if strict and not df.converged.all():
            i = int(np.argmin(df.converged.to_numpy()))
            raise ConvergenceError(f"equations did not converge at alpha={alphas[i]:g}: "
                                   f"{df.message[i]}")
        return df
    rows = [r.as_dict() for r in _curve_results(problem, alphas, solver, strict, progress)]
    df = pd.DataFrame(rows)
    return df[first + [c for c in df.columns if c not in first]]


def _optimal_curve(alphas, *, eta, lam, overrides, **kw) -> pd.DataFrame:
    from .grid import optimal_eta, optimal_lam

    for name, value in (("lam", lam), ("eta", eta)):
        if isinstance(value, str) and value != "optimal":
            raise ValueError(f"{name} must be a number >= 0 or 'optimal', got {value!r}")
    if isinstance(lam, str) and isinstance(eta, str):
        raise ValueError("lam and eta cannot both be 'optimal' (optimise one at a time)")
    if isinstance(lam, str):
        return optimal_lam(alphas, eta=eta, **kw, **overrides)
    return optimal_eta(alphas, lam=lam, **kw, **overrides)
