"""Batches of theory points through the compiled solver: curves, grids, optimal lam and eta_tilde.

Built on the compiled paths of ``asymptotics.api.paths``. ``risk_grid`` takes any parameter as a
scalar or a sequence and solves the Cartesian product, alpha the fastest-varying axis (one
warm-started path per combination of the others; combinations in parallel threads, each
independent, so the result does not depend on the number of threads). ``optimal_lam`` and
``optimal_eta`` minimise the risk over lam (log scale) or eta_tilde at each alpha: a coarse grid,
then bounded Brent around its best point; the minimiser is a column, and ``interior`` says
whether the minimum lies strictly inside the bounds (at a bound the search cannot tell a
minimum from a monotone risk, and says so in ``message``).
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np

from asymptotics.api.groups import route, route_fields
from asymptotics.api.paths import FIRST, path_frame, solve_path, solver_args
from asymptotics.api.points import ConvergenceError, curve_results
from asymptotics.core import checks
from asymptotics.core.parameters import check, default
from asymptotics.core.progress import Progress
from asymptotics.equations.solver import SolverConfig
from asymptotics.equations.solver_kernels import CONVERGED, RISK, solve_point_kernel
from asymptotics.models.problem import build_problem, check_alpha

if TYPE_CHECKING:
    import pandas as pd

    from asymptotics.models.problem import Problem

GRID_PARAMETERS = ("alpha", "sigma", "target", "alpha0", "eta", "lam", "beta", "delta")


#: at most this many points (rows) in one grid: a million rows of the result's columns take
#: ~1 GB while the frames are joined; beyond, the call is refused before any work
MAX_GRID_POINTS = 1_000_000


def _grid_size(alphas: list, values: dict) -> None:
    """Refuse a grid of more than :data:`MAX_GRID_POINTS` points, naming its axes."""
    n = len(alphas) * math.prod(len(v) for v in values.values())
    if n > MAX_GRID_POINTS:
        axes = " x ".join(f"{len(v)} {k}" for k, v in [("alpha", alphas), *values.items()]
                          if len(v) > 1)
        raise ValueError(f"the grid has {n:.3g} points ({axes}); at most {MAX_GRID_POINTS:.0e} "
                         "in one call: split it into several calls")


def _as_values(name: str, value: Any) -> list:
    if value is None or isinstance(value, str) or callable(value) or np.ndim(value) == 0:
        return [value]
    values = list(value)
    if not values:
        raise ValueError(f"{name} must contain at least one value")
    return values


def risk_grid(
    *,
    alpha: float | Iterable[float],
    sigma: Any = default("sigma"),
    target: Any = default("target"),
    alpha0: float | Iterable[float] = default("alpha0"),
    eta: float | Iterable[float] = default("eta"),
    lam: float | Iterable[float] = default("lam"),
    beta: float | Iterable[float] = default("beta"),
    delta: float | Iterable[float] = default("delta"),
    solver: SolverConfig = SolverConfig(),
    n_jobs: int | None = 1,
    model: str = default("model"),
    p: float | Iterable[float] | None = default("p"),
    common_row: float | str | None = default("common_row"),
    strict: bool = False,
    engine: str = default("engine"),
    progress: bool | None = None,
    readout: object = default("readout"),
    steps: int = default("steps"),
    loadings: object = default("loadings"),
    bulk: object = default("bulk"),
    fractions: object = default("fractions"),
    overlaps: object = default("overlaps"),
    batch: str = default("batch"),
) -> pd.DataFrame:
    """The theory on the Cartesian product of the given values (each parameter a scalar or a
    sequence; the width ``p`` too), one row per point: alpha varies fastest (a warm-started
    path), the other parameters in the order of the signature. ``n_jobs`` threads solve the
    paths in parallel (None: all cores); the numbers do not depend on it. ``model``, ``p``,
    ``common_row``, ``strict`` and ``engine`` as in :func:`risk` (defaults: the parameter table,
    :mod:`asymptotics.core.parameters`). ``progress``: a report per path solved on stderr
    (:class:`asymptotics.core.progress.Progress`; False: none). ``readout``, ``steps`` or a
    given K-group model (``loadings``, ``bulk``, ``fractions``, ``overlaps``): the K-group
    engine's curve for each combination (:func:`asymptotics.risk_curve`; the groups computed
    once per combination of their own parameters and shared); after several steps ``eta`` is
    one schedule (a number, or one per step, as in :func:`risk`) or a list of them to grid
    (``eta=[(2, 8), (4, 16)]``); ``batch``: as in :func:`risk`."""
    import pandas as pd

    given = dict(loadings=loadings, bulk=bulk, fractions=fractions, overlaps=overlaps)
    how = route(steps=steps, readout=readout, given=given, target=None, model=model,
                batch=batch)
    if how == "one-spike" and any(_needs_groups(t) for t in _as_values("target", target)):
        how = "multi-index"
    if how != "one-spike":
        return _k_group_grid(alpha, how=how, given=given, steps=steps, readout=readout,
                             model=model, engine=engine, common_row=common_row, strict=strict,
                             solver=solver, progress=progress, batch=batch,
                             others=dict(sigma=sigma, target=target, alpha0=alpha0, eta=eta,
                                         lam=lam, beta=beta, delta=delta, p=p))

    alphas = [check_alpha(a) for a in _as_values("alpha", alpha)]
    checks.flag("strict", strict)
    checks.optional_flag("progress", progress)
    engine = check("engine", engine)
    others = {k: _as_values(k, v) for k, v in dict(sigma=sigma, target=target, alpha0=alpha0,
                                                   eta=eta, lam=lam, beta=beta,
                                                   delta=delta, p=p).items()}
    _grid_size(alphas, others)
    combos = [dict(zip(others, vals, strict=True))
              for vals in itertools.product(*others.values())]
    # validates every value
    problems = [build_problem(model=model, common_row=common_row, **kw) for kw in combos]
    a = np.asarray(alphas, dtype=np.float64)

    def run(i: int) -> pd.DataFrame:
        prob = problems[i]
        if prob.lam == 0.0 or engine == "python":  # the ridgeless limit lives in the Python path
            rows = [r.as_dict() for r in curve_results(prob, list(a), solver, False, False)]
            return pd.DataFrame(rows)
        lams = np.full(a.shape[0], prob.lam)
        return path_frame(prob, a, lams, solve_path(prob, a, lams, solver))

    workers = (os.cpu_count() or 1) if n_jobs is None else checks.integer("n_jobs", n_jobs, 1)
    frames = []
    with Progress(len(problems), "risk grid", unit="paths", enabled=progress) as bar:
        if workers == 1 or len(problems) == 1:
            for i in range(len(problems)):
                frames.append(run(i))
                bar.update()
        else:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                for frame in pool.map(run, range(len(problems))):
                    frames.append(frame)
                    bar.update()
    df = pd.concat(frames, ignore_index=True)
    if strict and not df.converged.all():
        bad = df.loc[~df.converged.astype(bool)].iloc[0]
        raise ConvergenceError(f"{int((~df.converged.astype(bool)).sum())} of {len(df)} grid "
                               f"points did not converge (first: alpha = {bad.alpha:g}, "
                               f"status {bad.status}: {bad.message})")
    return df[FIRST + [c for c in df.columns if c not in FIRST]]


def _needs_groups(target: object) -> bool:
    from asymptotics.api.groups import needs_groups

    return needs_groups(target)


def _k_group_grid(alpha, *, how, given, others, steps, readout, model, engine, common_row,
                  strict, solver, progress, batch="fresh") -> pd.DataFrame:
    """:func:`risk_grid` on a K-group route: one K-group curve along alpha per combination."""
    import pandas as pd

    from asymptotics.api.groups import solve_k_group

    alphas = [check_alpha(a) for a in _as_values("alpha", alpha)]
    values = {k: _schedules(v, steps) if k == "eta" else _as_values(k, v)
              for k, v in others.items()}
    _grid_size(alphas, values)
    combos = [dict(zip(values, vals, strict=True)) for vals in itertools.product(*values.values())]
    frames = []
    with Progress(len(combos), "risk grid", unit="curves", enabled=progress) as bar:
        for kw in bar.iter(combos):
            df, eta = solve_k_group(alphas, curve=True, how=how, steps=steps,
                                    readout=readout, given=given, model=model,
                                    engine=engine, overrides=dict(common_row=common_row),
                                    strict=strict, solver=solver, progress=False, batch=batch,
                                    **kw)
            if df is None:  # exactly the one-step network theory at eta (THEORY.md §15)
                df = risk_grid(alpha=alphas, **{**kw, "eta": eta}, model=model,
                               common_row=common_row, strict=strict, solver=solver,
                               engine=engine, progress=False)
            else:  # (risk_curve's columns: what produced each row beyond its groups)
                fields = route_fields(how, steps=steps, alpha0=kw["alpha0"], eta=kw["eta"],
                                      readout=readout, batch=batch, json_text=True)
                for name, value in fields.items():
                    df[name] = [value] * len(df) if value is None else value
            frames.append(df)
    return pd.concat(frames, ignore_index=True)


def _schedules(eta: Any, steps: Any) -> list:
    """The grid's values of ``eta`` on a K-group route: after several steps a sequence of
    numbers is one schedule (eta_tilde per step, as in :func:`asymptotics.risk`) and a sequence
    of schedules (or of numbers and schedules) is a grid of them; at one step a sequence is a
    grid of eta_tilde values."""
    def is_seq(v: Any) -> bool:
        return isinstance(v, Sequence | np.ndarray) and not isinstance(v, str | bytes)

    if checks.integer("steps", steps, 1) == 1 or not is_seq(eta):
        return _as_values("eta", eta)
    items = list(eta)
    if not items:
        raise ValueError("eta must contain at least one value")
    if not any(is_seq(v) for v in items):
        return [tuple(items)]  # one schedule
    return [tuple(v) if is_seq(v) else v for v in items]


def _bounded_min(f, lo: float, hi: float, xatol: float) -> tuple[float, float]:
    from scipy.optimize import minimize_scalar

    res = minimize_scalar(f, bounds=(lo, hi), method="bounded", options={"xatol": xatol})
    return float(res.x), float(res.fun)


def _point_risk(problem: Problem, alpha: float, lam: float, x0: np.ndarray | None,
                solver: SolverConfig) -> tuple[float, np.ndarray]:
    x0v = np.zeros(7) if x0 is None else x0
    x, hat, status, _, _ = solve_point_kernel(x0v, x0 is not None, *problem.map_args(alpha, lam),
                                              *solver_args(solver))
    return (float(hat[RISK]) if status == CONVERGED else math.nan), x


def _check_bounds(name: str, lo: float, hi: float, positive: bool) -> tuple[float, float]:
    lo, hi = float(lo), float(hi)
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"{name} bounds must be finite with lower < upper, got ({lo}, {hi})")
    if positive and lo <= 0:
        raise ValueError(f"{name} bounds must be > 0 (log scale), got lower = {lo}")
    if not positive and lo < 0:
        raise ValueError(f"{name} bounds must be >= 0, got lower = {lo}")
    return lo, hi


def _finish(df: pd.DataFrame, name: str, best: list[dict]) -> pd.DataFrame:
    extra = pd_frame(best)
    df = df.copy()
    for col in extra.columns:
        df[col] = extra[col].to_numpy()
    first = ["alpha", "risk", name, "interior", "converged", "iterations", "residual"]
    return df[first + [c for c in df.columns if c not in first]]


def pd_frame(rows: list[dict]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(rows)


def optimal_lam(
    alphas: Sequence[float],
    *,
    sigma: Any = "tanh",
    target: Any = "tanh",
    alpha0: float = 2.0,
    eta: float = 1.0,
    beta: float = 1.0,
    delta: float = 0.0,
    lam_bounds: tuple[float, float] = (1e-6, 1e3),
    n_grid: int = 28,
    solver: SolverConfig = SolverConfig(),
    model: str = "network",
    progress: bool | None = None,
    **overrides: Any,
) -> pd.DataFrame:
    """min over lam in ``lam_bounds`` (log scale) of the risk at each alpha: a ``n_grid``-point
    log grid solved as one snake-ordered warm-started path, then bounded Brent on log10(lam)
    between the neighbours of the best grid point (xatol 1e-4 in log10 lam). Columns: those of
    ``risk_curve`` at the minimiser, plus ``lam`` (the minimiser) and ``interior``; a minimum on
    a bound keeps its risk, ``interior = False`` and says so in ``message``; an alpha with no
    converged grid point is NaN. ``progress``: a report per alpha on stderr (False: none)."""

    lo, hi = _check_bounds("lam", *lam_bounds, positive=True)
    if n_grid < 3:
        raise ValueError(f"n_grid must be >= 3, got {n_grid}")
    a = np.asarray([check_alpha(x)
                    for x in checks.sequence("alphas", alphas)], dtype=np.float64)
    if a.size == 0:
        raise ValueError("alphas must contain at least one value")
    prob = build_problem(sigma=sigma, target=target, alpha0=alpha0, eta=eta, lam=lo, beta=beta,
                         delta=delta, model=model, **overrides)
    u = np.linspace(math.log10(lo), math.log10(hi), n_grid)
    order = np.concatenate([u if i % 2 == 0 else u[::-1] for i in range(a.size)])
    A_path = np.repeat(a, n_grid)
    states, hats, status, _, _ = solve_path(prob, A_path, 10.0**order, solver)
    risks = np.where(status == CONVERGED, hats[:, RISK], np.nan).reshape(a.size, n_grid)
    states = states.reshape(a.size, n_grid, 7)
    best_rows, lam_best = [], np.empty(a.size)
    with Progress(a.size, "optimal lam", unit="alphas", enabled=progress) as bar:
        for i in bar.iter(range(a.size)):
            row = risks[i] if i % 2 == 0 else risks[i][::-1]
            st = states[i] if i % 2 == 0 else states[i][::-1]
            if not np.any(np.isfinite(row)):
                lam_best[i] = math.nan
                best_rows.append({"interior": False})
                continue
            j = int(np.nanargmin(row))
            interior = 0 < j < n_grid - 1
            if interior:
                x0 = st[j]

                def f(ul: float, i: int = i, x0: np.ndarray = x0) -> float:
                    r, _ = _point_risk(prob, a[i], 10.0**ul, x0, solver)
                    return r if math.isfinite(r) else math.inf

                ub, rb = _bounded_min(f, u[j - 1], u[j + 1], 1e-4)
                lam_best[i] = 10.0**ub if rb <= row[j] else 10.0 ** u[j]
            else:
                lam_best[i] = 10.0 ** u[j]
            best_rows.append({"interior": interior})
    df = _solve_at(prob, a, lam_best, solver)
    for i, b in enumerate(best_rows):
        if not b["interior"] and math.isfinite(lam_best[i]):
            df.loc[i, "message"] = (f"the minimum over lam sits at the bound lam = "
                                    f"{lam_best[i]:.3g} of [{lo:g}, {hi:g}]: widen lam_bounds")
    return _finish(df, "lam", best_rows)


def _solve_at(prob: Problem, a: np.ndarray, lams: np.ndarray, solver: SolverConfig):
    ok = np.isfinite(lams)
    lam_fill = np.where(ok, lams, 1.0)
    out = solve_path(prob, a, lam_fill, solver)
    df = path_frame(prob, a, lams, out)
    bad = ~ok
    if np.any(bad):
        df.loc[bad, "risk"] = np.nan
        df.loc[bad, "converged"] = False
        df.loc[bad, "status"] = "max_iter"
        df.loc[bad, "message"] = "no converged point on the search grid"
    return df


def optimal_eta(
    alphas: Sequence[float],
    *,
    sigma: Any = "tanh",
    target: Any = "tanh",
    alpha0: float = 2.0,
    lam: float = 0.01,
    beta: float = 1.0,
    delta: float = 0.0,
    eta_bounds: tuple[float, float] = (0.0, 5.0),
    n_grid: int = 26,
    solver: SolverConfig = SolverConfig(),
    model: str = "network",
    progress: bool | None = None,
    **overrides: Any,
) -> pd.DataFrame:
    """min over eta_tilde in ``eta_bounds`` of the risk at each alpha: a linear grid of
    ``n_grid`` values (one problem and one alpha path each), then bounded Brent on eta between
    the neighbours of the best grid point (xatol 1e-5). Columns as ``optimal_lam`` with ``eta``
    the minimiser. (In the p -> infinity theory the risk jumps at eta_tilde = 0, the free mean
    channel of docs/DERIVATIONS.md: eta = 0 is a grid point of its own.) ``progress``: a report
    per grid value and per alpha on stderr (False: none)."""
    import pandas as pd


    lo, hi = _check_bounds("eta", *eta_bounds, positive=False)
    if n_grid < 3:
        raise ValueError(f"n_grid must be >= 3, got {n_grid}")
    if lam == 0:
        raise ValueError("eta='optimal' needs lam > 0 (the ridgeless limit is not searched)")
    a = np.asarray([check_alpha(x)
                    for x in checks.sequence("alphas", alphas)], dtype=np.float64)
    if a.size == 0:
        raise ValueError("alphas must contain at least one value")
    kw = dict(sigma=sigma, target=target, alpha0=alpha0, lam=lam, beta=beta, delta=delta,
              model=model, **overrides)
    etas = np.linspace(lo, hi, n_grid)
    risks = np.empty((n_grid, a.size))
    states = np.empty((n_grid, a.size, 7))
    with Progress(n_grid + a.size, "optimal eta", unit="steps", enabled=progress) as bar:
        for k, e in enumerate(bar.iter(etas)):
            prob = build_problem(eta=float(e), **kw)
            st, hats, status, _, _ = solve_path(prob, a, None, solver)
            risks[k] = np.where(status == CONVERGED, hats[:, RISK], np.nan)
            states[k] = st
        frames, best_rows = [], []
        for i in bar.iter(range(a.size)):
            col = risks[:, i]
            if not np.any(np.isfinite(col)):
                prob = build_problem(eta=lo, **kw)
                df = _solve_at(prob, a[i:i + 1], np.array([math.nan]), solver)
                df["eta"] = math.nan
                frames.append(df)
                best_rows.append({"interior": False})
                continue
            j = int(np.nanargmin(col))
            interior = 0 < j < n_grid - 1
            e_best = float(etas[j])
            if interior:
                x0 = states[j, i]

                def f(e: float, i: int = i, x0: np.ndarray = x0) -> float:
                    p = build_problem(eta=e, **kw)
                    r, _ = _point_risk(p, a[i], p.lam, x0, solver)
                    return r if math.isfinite(r) else math.inf

                eb, rb = _bounded_min(f, float(etas[j - 1]), float(etas[j + 1]), 1e-5)
                if rb <= col[j]:
                    e_best = eb
            prob = build_problem(eta=e_best, **kw)
            df = path_frame(prob, a[i:i + 1], np.array([lam]),
                            solve_path(prob, a[i:i + 1], None, solver))
            if not interior:
                df.loc[0, "message"] = (f"the minimum over eta sits at the bound eta = "
                                        f"{e_best:.3g} of [{lo:g}, {hi:g}]: widen eta_bounds")
            frames.append(df)
            best_rows.append({"interior": interior})
    out = pd.concat(frames, ignore_index=True)
    return _finish(out, "eta", best_rows)
