"""Compiled paths of theory points: ``solve_path`` runs a sequence of (alpha, lam) points of one
:class:`~asymptotics.models.problem.Problem` in one call of ``solver_kernels.solve_path_kernel``
(warm starts, halving continuation; docs/THEORY.md §5) and ``path_frame`` turns its arrays into
the tidy DataFrame of ``risk_curve`` (same columns, NaN risk unless converged).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from asymptotics.core.result import (
    GROUP_FIELDS,
    HAT_NAMES,
    RESULT_COLUMNS,
    STATE_NAMES,
    one_step_fields,
)
from asymptotics.equations.solver import SolverConfig, Status
from asymptotics.equations.solver_kernels import RISK, solve_path_kernel

if TYPE_CHECKING:
    import pandas as pd

    from asymptotics.models.problem import Problem

FIRST = ["alpha", "risk", "converged", "iterations", "residual"]
#: the one-spike route's value of the K-group fields (``asymptotics.core.result``)
_NO_GROUPS = dict(loadings=None, bulk=None, fractions=None, overlaps=None, order=None,
                  n_kappa=0, quadrature_change=np.nan)
_MESSAGES = {int(s): s.message for s in Status}
_NAMES = {int(s): s.name.lower() for s in Status}


def solver_args(solver: SolverConfig) -> tuple:
    return (solver.rtol, solver.scale_floor, solver.max_iter, solver.damping, solver.anderson)


def _path_args(problem: Problem) -> tuple:
    """The kernel arguments of ``problem.map_args`` without (A, lam): the kappa tables, then
    delta and the measure."""
    return problem.map_args(1.0).without_point()


class PathSolution(NamedTuple):
    """What the compiled path solver returns, by name: per point the state (``STATE_NAMES``),
    the conjugates with the risk last (``HAT_NAMES`` + risk, column ``RISK``), the status code
    (``Status``), the iterations and the relative residual of the literal map."""

    states: np.ndarray
    hats: np.ndarray
    status: np.ndarray
    iterations: np.ndarray
    residual: np.ndarray


def solve_path(
    problem: Problem,
    alphas: np.ndarray,
    lams: np.ndarray | None = None,
    solver: SolverConfig = SolverConfig(),
) -> PathSolution:
    """The points (alphas[i], lams[i]) solved in order with warm starts (lams default: the
    problem's lam). lam = 0 is not handled here (the ridgeless limit is the Python path's)."""
    alphas = np.ascontiguousarray(alphas, dtype=np.float64)
    if lams is None:
        lams = np.full(alphas.shape[0], problem.lam)
    lams = np.ascontiguousarray(lams, dtype=np.float64)
    return PathSolution(*solve_path_kernel(alphas / problem.beta, lams, *_path_args(problem),
                                           *solver_args(solver)))


def path_frame(problem: Problem, alphas: np.ndarray, lams: np.ndarray,
               out: PathSolution) -> pd.DataFrame:
    """The DataFrame of ``risk_curve`` (columns and order) from ``solve_path`` arrays."""
    import pandas as pd

    states, hats, status, iters, resid = out
    n = len(alphas)
    conv = status == int(Status.CONVERGED)
    sp = problem.spike
    cols: dict[str, Any] = {
        "alpha": np.asarray(alphas, dtype=np.float64),
        "risk": np.where(conv, hats[:, RISK], np.nan),
        "converged": conv,
        "iterations": iters.astype(np.int64),
        "residual": resid,
        "sigma": [problem.sigma.name] * n,
        "target": [problem.target.name] * n,
        "alpha0": np.full(n, problem.alpha0),
        "eta": np.full(n, problem.eta),
        **{k: [v] * n for k, v in one_step_fields(problem.eta, json_text=True).items()},
        "lam": np.asarray(lams, dtype=np.float64),
        "beta": np.full(n, problem.beta),
        "delta": np.full(n, problem.delta),
        "model": [problem.model] * n,
        "measure": [problem.measure.kind] * n,
        "r": np.full(n, sp.r),
        "c": np.full(n, sp.c),
        "gamma": np.full(n, sp.gamma),
        "status": [_NAMES[int(s)] for s in status],
        "message": [_MESSAGES[int(s)] for s in status],
    }
    for j, name in enumerate(STATE_NAMES):
        cols[name] = np.where(conv, states[:, j], np.nan)
    for j, name in enumerate(HAT_NAMES):
        cols[name] = np.where(conv, hats[:, j], np.nan)
    cols["p"] = np.full(n, math.inf if problem.p is None else problem.p)
    cols["common_row"] = np.full(n, problem.common_row)
    for name in GROUP_FIELDS:
        value = _NO_GROUPS[name]
        cols[name] = [value] * n if value is None else np.full(n, value)
    # in the schema's order (a dict in that order: no reindexing copy of the frame)
    return pd.DataFrame({name: cols[name] for name in RESULT_COLUMNS})


