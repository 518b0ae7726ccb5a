"""The ridgeless limit lam -> 0+ of the K-group theory (docs/THEORY.md §10.5), as the one-spike
solver takes it (``asymptotics.api.points``): where the equations have no finite solution at lam =
0
(the interpolating regime, V ~ 1/lam), follow lam = 1e-2, 1e-3, ... with warm starts (V scaled by
the step) and extrapolate the risk (Richardson), or report the divergence of the interpolation
peak. Never a number from an unconverged ladder."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from asymptotics.equations.solver import SolverConfig, Status
from asymptotics.spiked.kernels import sizes

LADDER = tuple(10.0**-k for k in range(2, 14))
RTOL = 1e-6  # accepted error of the extrapolated lam = 0 risk, relative (as the one-spike solver)


def ridgeless_limit(prob, alpha: float, solver: SolverConfig, solve_at):
    """The result at lam = 0 from the ladder; ``solve_at(problem, alpha, solver, x0)`` solves one
    point at lam > 0 (``solve.solve_spiked``)."""
    K = prob.fractions.shape[0]
    o = sizes(K, prob.loadings.shape[1], prob.k)
    lams: list[float] = []
    risks: list[float] = []
    last = None
    x_prev = None
    for lam in LADDER:
        x0 = None if x_prev is None else x_prev * (lams[-1] / lam)
        res = solve_at(replace(prob, lam=lam), alpha, solver, x0)
        if not res.converged:
            break
        lams.append(lam)
        risks.append(res.risk)
        last = res
        x_prev = np.array(res.state[o[2]:o[4]])
        if len(risks) >= 3:
            r1, r2, r3 = risks[-3:]
            d1, d2 = r2 - r1, r3 - r2
            now, before = r3 + d2 / 9.0, r2 + d1 / 9.0
            if abs(d2) <= 0.2 * abs(d1) + 1e-15 and abs(now - before) <= RTOL * max(1.0, abs(now)):
                return replace(res, lam=0.0, risk=float(now), message=(
                    f"converged: ridgeless limit lam -> 0+ (Richardson over lam = {lams[-2]:g}, "
                    f"{lams[-1]:g}; order parameters at lam = {lams[-1]:g})"))
    if last is None:
        return None
    nan = math.nan
    if len(risks) >= 3:
        r1, r2, r3 = risks[-3:]
        d1, d2 = r2 - r1, r3 - r2
        if d1 > 0 and d2 > 0 and d2 >= 0.5 * d1:
            return replace(last, lam=0.0, risk=nan, converged=False,
                           status=Status.DIVERGED.name.lower(), message=Status.DIVERGED.message)
    return replace(last, lam=0.0, risk=nan, converged=False, status=Status.MAX_ITER.name.lower(),
                   message=f"lam = 0: the lam -> 0+ limit could not be followed below "
                           f"lam = {lams[-1]:g}")
