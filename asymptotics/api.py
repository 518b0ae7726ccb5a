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
from .finite_width import complete_state_p, fixed_point_map_p
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


def check_width(p: float | None) -> float | None:
    """Validate the width p of the finite-p theory: None or +inf (the limit), else a real p >= 1
    (p = beta d; the equations are continuous in p, so p need not be an integer)."""
    if p is None:
        return None
    if isinstance(p, bool) or not isinstance(p, (int, float, np.integer, np.floating)):
        raise TypeError(f"p must be a real number >= 1 or None (the limit), got {p!r}")
    v = float(p)
    if v == math.inf:
        return None
    if not math.isfinite(v) or v < 1:
        raise ValueError(f"p must be >= 1 (the width, p = beta d) or None for p -> infinity, "
                         f"got {v:g}")
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
    p: float = math.inf  # width of the finite-p theory (DERIVATIONS.md §5); inf: the limit

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
    p: float | None = None  # finite width (DERIVATIONS.md §5); None is the p -> infinity limit

    @property
    def p_inv(self) -> float:
        return 0.0 if self.p is None else 1.0 / self.p

    def map_args(self, alpha: float, lam: float | None = None) -> tuple:
        k, ms = self.coefficients, self.measure
        return (k.weights, k.kappa, k.mu0, k.mu1, k.mu_star2, k.h, k.h1, k.h2,
                alpha / self.beta, self.lam if lam is None else lam, self.delta, ms.code,
                ms.beta, ms.c, ms.rho, ms.F, ms.H)


def build_problem(
    *,
    sigma: str | Function,
    target: str | Function,
    alpha0: float,
    eta: float,
    lam: float,
    beta: float = 1.0,
    delta: float = 0.0,
    spike: SpikeMapping | None = None,
    gamma: float | None = None,
    measure: SpectralMeasure | None = None,
    n_kappa: int = 120,
    p: float | None = None,
) -> Problem:
    """Validate parameters and precompute what does not depend on alpha.

    ``spike`` overrides the one-step mapping (e.g. r = 0.9, c = gamma = 1 of seed 003);
    ``gamma`` overrides only the split of theta* between v and t (at eta = 0 the risk must not
    depend on it: a test of the equations). ``p``: the width for the finite-p mean channel
    (DERIVATIONS.md §5, :func:`check_width`); None is the p -> infinity limit."""
    p = check_width(p)
    alpha0 = _check("alpha0", alpha0, positive=True)
    eta = _check("eta", eta)
    lam = _check("lam", lam)
    beta = _check("beta", beta, positive=True)
    delta = _check("delta", delta)
    s, g = get_function(sigma), get_function(target)
    if spike is None:
        spike = srf_mapping(s, g, alpha0=alpha0, eta=eta, delta=delta, ge=ge_coefficients(s, g))
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
    return Problem(s, g, alpha0, eta, lam, beta, delta, spike, coeffs, measure, p)


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
    p_inv = problem.p_inv
    x = complete_state(v, *args) if p_inv == 0.0 else complete_state_p(v, *args, p_inv)
    residual = math.inf
    if status == Status.CONVERGED:
        if not np.all(np.isfinite(x)) or np.any(x[list(NONNEG)] < 0):
            status = Status.OUT_OF_DOMAIN
        else:
            # the residual reported is that of the equations of THEORY.md §5 applied verbatim,
            # over all seven unknowns
            fx = fixed_point_map(x, *args) if p_inv == 0.0 else fixed_point_map_p(x, *args, p_inv)
            residual = relative_residual(x, fx, solver.scale_floor)
            if not residual <= solver.rtol:
                status = Status.MAX_ITER
    hat = conjugates(x, *args[:8], args[8], problem.delta)
    return x, status, residual, sol.n_iter, hat


RIDGELESS_LAMS = (1e-8, 1e-9, 1e-10)


def _ridgeless_limit(problem: Problem, alpha: float, solver: SolverConfig) -> tuple:
    """lam = 0 in the interpolating regime: V ~ 1/lam diverges, so solve at lam = 1e-8, 1e-9,
    1e-10 and accept the lam -> 0+ limit only if the risks converge geometrically (R is linear in
    lam near 0; the reported risk is the Richardson extrapolation). Otherwise not converged."""
    risks, out, x_prev = [], None, None
    for lam in RIDGELESS_LAMS:
        x, status, residual, n_iter, hat = _solve_state(problem, alpha, lam, x_prev, solver)
        if status != Status.CONVERGED or not math.isfinite(hat[6]):
            return x, Status.NON_FINITE, math.inf, n_iter, hat, (
                "lam = 0: no finite solution, and the lam -> 0+ limit could not be followed "
                "(e.g. the interpolation peak alpha = beta)")
        risks.append(float(hat[6]))
        out, x_prev = (x, status, residual, n_iter, hat), x
    d1, d2 = abs(risks[0] - risks[1]), abs(risks[1] - risks[2])
    x, status, residual, n_iter, hat = out
    # linear convergence in lam gives d2/d1 = 0.1; at the interpolation peak R ~ 1/lam, d2/d1 = 10
    if not (d2 <= 0.2 * d1 + 1e-13 and d2 <= 1e-5 * max(1.0, abs(risks[2]))):
        return x, Status.MAX_ITER, residual, n_iter, hat, (
            "lam = 0: the risk does not settle as lam -> 0+ (diverging at the interpolation peak?)")
    hat = hat.copy()
    hat[6] = risks[2] - (risks[1] - risks[2]) / 9.0
    return x, status, residual, n_iter, hat, (
        "converged: ridgeless limit lam -> 0+ (order parameters at lam = 1e-10, where V ~ 1/lam)")


def solve_point(
    problem: Problem,
    alpha: float,
    *,
    x0: np.ndarray | None = None,
    solver: SolverConfig = SolverConfig(),
    strict: bool = False,
) -> RiskResult:
    """Solve the equations of THEORY.md §5 at one alpha for a prepared :class:`Problem`."""
    alpha = _check("alpha", alpha, positive=True)
    x, status, residual, n_iter, hat = _solve_state(problem, alpha, problem.lam, x0, solver)
    message = status.message
    if status != Status.CONVERGED and problem.lam == 0.0:
        x, status, residual, n_iter, hat, message = _ridgeless_limit(problem, alpha, solver)
    converged = status == Status.CONVERGED
    risk_value = float(hat[6]) if converged else math.nan
    if strict and not converged:
        raise ConvergenceError(
            f"equations did not converge at alpha={alpha:g}: {status.message} "
            f"(iterations={n_iter}, residual={residual:.3g})"
        )
    nan = math.nan
    vals = dict(zip(STATE_NAMES, (float(v) if converged else nan for v in x), strict=True))
    hats = dict(zip(HAT_NAMES, (float(v) if converged else nan for v in hat[:6]), strict=True))
    sp = problem.spike
    return RiskResult(
        alpha=alpha, sigma=_name(problem.sigma), target=_name(problem.target),
        alpha0=problem.alpha0, eta=problem.eta, lam=problem.lam, beta=problem.beta,
        delta=problem.delta, measure=problem.measure.kind, r=sp.r, c=sp.c, gamma=sp.gamma,
        risk=risk_value, converged=converged, status=status.name.lower(),
        message=message, iterations=n_iter, residual=residual,
        **vals, **hats, state=tuple(float(v) for v in x),
        p=math.inf if problem.p is None else problem.p,
    )


def risk(
    alpha: float,
    *,
    sigma: str | Function,
    target: str | Function,
    alpha0: float,
    eta: float,
    lam: float,
    beta: float = 1.0,
    delta: float = 0.0,
    spike: SpikeMapping | None = None,
    gamma: float | None = None,
    measure: SpectralMeasure | None = None,
    solver: SolverConfig = SolverConfig(),
    strict: bool = False,
    p: float | None = None,
) -> RiskResult:
    """Asymptotic test error after one giant step (eta = eta_tilde > 0) or of random features
    (eta = 0), at sample ratio alpha = n/d, width ratio beta = p/d, first batch alpha0 = n0/d,
    ridge lam (sum-loss convention of THEORY.md §1) and label noise delta. ``p``: the width of
    the finite-p theory (DERIVATIONS.md §5; keeps the mean channel's price, which matters when
    r sqrt(p) is not large); None is the p -> infinity limit."""
    problem = build_problem(sigma=sigma, target=target, alpha0=alpha0, eta=eta, lam=lam,
                            beta=beta, delta=delta, spike=spike, gamma=gamma, measure=measure,
                            p=p)
    return solve_point(problem, alpha, solver=solver, strict=strict)


def _curve_results(
    problem: Problem,
    alphas: Sequence[float],
    solver: SolverConfig,
    strict: bool,
    progress: bool | None,
) -> list[RiskResult]:
    from tqdm.auto import tqdm

    out: list[RiskResult] = []
    x_prev: np.ndarray | None = None
    a_prev: float | None = None
    disable = None if progress is None else not progress
    for a in tqdm(alphas, desc="risk curve", unit="pt", disable=disable, leave=False):
        res = solve_point(problem, a, x0=x_prev, solver=solver)
        if not res.converged and x_prev is not None and a_prev is not None:
            # continuation: walk from the last good alpha in halving steps
            x_walk = x_prev
            for frac in (0.5, 0.75, 0.875, 1.0):
                mid = solve_point(problem, a_prev + frac * (a - a_prev), x0=x_walk, solver=solver)
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
    sigma: str | Function,
    target: str | Function,
    alpha0: float,
    eta: float,
    lam: float,
    beta: float = 1.0,
    delta: float = 0.0,
    spike: SpikeMapping | None = None,
    gamma: float | None = None,
    measure: SpectralMeasure | None = None,
    solver: SolverConfig = SolverConfig(),
    strict: bool = False,
    progress: bool | None = None,
    p: float | None = None,
) -> pd.DataFrame:
    """Risk along alpha (warm starts, continuation on failure) as a tidy DataFrame: one row per
    alpha in the given order, columns ``alpha, risk, converged, iterations`` plus every order
    parameter, conjugate and input parameter (``p``: the finite-p theory, see :func:`risk`)."""
    import pandas as pd

    alphas = [_check("alpha", a, positive=True) for a in alphas]
    if not alphas:
        raise ValueError("alphas must contain at least one value")
    problem = build_problem(sigma=sigma, target=target, alpha0=alpha0, eta=eta, lam=lam,
                            beta=beta, delta=delta, spike=spike, gamma=gamma, measure=measure,
                            p=p)
    rows = [r.as_dict() for r in _curve_results(problem, alphas, solver, strict, progress)]
    df = pd.DataFrame(rows)
    first = ["alpha", "risk", "converged", "iterations", "residual"]
    return df[first + [c for c in df.columns if c not in first]]
