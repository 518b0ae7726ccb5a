"""Public API: the asymptotic test error of one giant step (the trained network by default, or
its sRF surrogate) and of random features.

``risk(alpha, sigma=..., target=..., alpha0=..., eta=..., lam=..., beta=..., delta=...)`` maps one
giant step to spiked random features (THEORY.md §3, asymptotics.step.srf), computes the cGET
coefficients (§4, asymptotics.coefficients.cget), solves the self-consistent equations (§5,
asymptotics.equations.fixed_point + asymptotics.equations.solver) against the spectral measure (§6,
asymptotics.measures.spectral) and returns a frozen :class:`RiskResult`. ``eta = 0`` is the
random-features baseline. An unconverged point has ``risk = nan`` and ``converged = False``
(``strict=True`` raises :class:`ConvergenceError` instead).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from asymptotics.api.grid import MAX_GRID_POINTS
from asymptotics.api.groups import route, route_fields, solve_k_group
from asymptotics.api.points import (  # noqa: F401  (re-exported: the public names of the theory's API)
    ENGINES,
    ConvergenceError,
    RiskResult,
    check_engine,
    curve_results,
    solve_point,
)
from asymptotics.coefficients.functions import Function
from asymptotics.core import checks
from asymptotics.core.parameters import default
from asymptotics.equations.solver import SolverConfig
from asymptotics.measures.spectral import SpectralMeasure
from asymptotics.models.problem import (  # noqa: F401  (re-exported)
    MODELS,
    Problem,
    build_problem,
    check_alpha,
    check_value,
    check_width,
    warn_small_alpha,
)
from asymptotics.step.srf import SpikeMapping

if TYPE_CHECKING:
    import pandas as pd


def risk(
    alpha: float,
    *,
    sigma: str | Function = default("sigma"),
    target: str | Function = default("target"),
    alpha0: float = default("alpha0"),
    eta: float | str = default("eta"),
    lam: float | str = default("lam"),
    beta: float = default("beta"),
    delta: float = default("delta"),
    spike: SpikeMapping | None = None,
    gamma: float | None = None,
    measure: SpectralMeasure | None = None,
    solver: SolverConfig = SolverConfig(),
    strict: bool = False,
    engine: str = default("engine"),
    model: str = default("model"),
    p: float | None = default("p"),
    common_row: float | str | None = default("common_row"),
    readout: object = default("readout"),
    steps: int = default("steps"),
    loadings: object = default("loadings"),
    bulk: object = default("bulk"),
    fractions: object = default("fractions"),
    overlaps: object = default("overlaps"),
    batch: str = default("batch"),
) -> RiskResult:
    """Asymptotic test error after one giant step (eta = eta_tilde > 0) or of random features
    (eta = 0), at sample ratio alpha = n/d, width ratio beta = p/d, first batch alpha0 = n0/d,
    ridge lam (sum-loss convention of THEORY.md §1) and label noise delta. The defaults are those
    of ``python -m asymptotics curve`` (tanh, tanh, alpha0 = 2, eta = 1, lam = 0.01, beta = 1).
    At lam = 0 the ridgeless limit lam -> 0+ is taken; at the interpolation peak alpha = beta it
    diverges: risk NaN, status ``diverged``.
    ``lam="optimal"`` or ``eta="optimal"``: the point at the minimiser over lam or eta_tilde
    (``asymptotics.api.grid``; the result's ``lam`` / ``eta`` is the minimiser, ``message``
    says if it sits at a bound).

    ``model``: "network" (default) describes the trained network itself, through the
    deterministic network theory (docs/DERIVATIONS.md §7: the population covariance of the
    step's bulk rows, a generalised MP bulk with the F_vv, F_vt, F_tt channels and the
    bulk-variance channel; ``population_measure``) or, with
    ``measure=from_weights(W1, v, theta)``, the semi-empirical theory of a given first layer;
    "srf" the spiked-random-features surrogate of the step, which the equations describe
    exactly (the model of the papers' figures); "rf" is random features (requires eta = 0).
    At eta = 0 the three coincide.

    ``p``: the width of the finite-p theory (docs/DERIVATIONS.md §8: the mean channel's price,
    which matters unless r sqrt(p) >> 1; eta = 0 stays random features at every p); None is the
    p -> infinity limit. ``common_row``: optional finite-d correction of the finite-p theory
    (docs/DERIVATIONS.md §8, "The network's initial output"; ``"network"`` for the trained
    network, see :func:`build_problem`); None (default): "network" for the network theory at
    finite p, omega = 1 (the numbers of §8) otherwise.

    ``readout``: the initial second layer (THEORY.md §11): "constant" (default, §1), "pm1" or a
    mapping value -> weight; other than "constant" it is the K-group route: with
    ``model="srf"`` that of :func:`asymptotics.risk_readout`, with ``model="network"`` the
    network theory of the groups (THEORY.md §15; the one-step network theory itself where it
    applies exactly).

    ``steps``: the number of giant steps, each on a fresh batch of alpha0 d samples (THEORY.md
    §12); 1 (default) is the one step above. ``steps > 1`` accepts a target in z1..zk, ``eta``
    as one eta_tilde or one per step, ``alpha0=inf`` (the large-batch limit) and any
    ``readout``: the network theory of the groups (THEORY.md §15) or, with ``model="srf"``,
    :func:`asymptotics.risk_steps`.
    ``batch="reused"``: every step on the same batch (THEORY.md §14; steps <= 2, ``model="srf"``).

    ``loadings``, ``bulk``, ``fractions``, ``overlaps``: a given K-group model (THEORY.md §10.1,
    with ``model="srf"``), solved as :func:`asymptotics.risk_spiked`. A target in z1..zk
    (k >= 2, or with He_n) is the K-group model of one step. Every K-group route has the one
    compiled engine (``engine="python"`` is refused).

    Every route returns the one :class:`RiskResult` (same fields, same ``to_frame()`` columns;
    ``asymptotics.core.result``): on a K-group route the one-spike order parameters are NaN and
    the groups' are ``order``; ``alpha0``, ``steps``, ``eta_schedule`` (eta_tilde of each
    step), ``readout`` and ``batch`` say what produced it (``eta`` NaN for a schedule of
    different rates; None on a given K-group model, which has no step)."""
    checks.flag("strict", strict)
    _check_solver(solver)
    alpha = check_alpha(alpha)
    eta = one_step_eta(eta, steps)
    given = dict(loadings=loadings, bulk=bulk, fractions=fractions, overlaps=overlaps)
    how = route(steps=steps, readout=readout, given=given, target=target, model=model,
                batch=batch)
    if how != "one-spike":  # the K-group engine (asymptotics.api.groups)
        res, eta = solve_k_group([alpha], curve=False, how=how, steps=steps, readout=readout,
                                 given=given, model=model, engine=engine,
                                 overrides=dict(spike=spike, gamma=gamma, measure=measure,
                                                common_row=common_row),
                                 lam=lam, eta=eta, sigma=sigma, target=target, alpha0=alpha0,
                                 beta=beta, delta=delta, p=p, strict=strict, solver=solver,
                                 batch=batch)
        if res is not None:  # else: the one-step network theory answers exactly, at that eta
            return res.with_fields(**route_fields(how, steps=steps, alpha0=alpha0, eta=eta,
                                                  readout=readout, batch=batch))
    note = None
    if isinstance(lam, str) or isinstance(eta, str):  # the minimiser, then the point there
        alpha = check_alpha(alpha)
        best = _optimal_curve([alpha], sigma=sigma, target=target, alpha0=alpha0, eta=eta,
                              lam=lam, beta=beta, delta=delta, solver=solver,
                              overrides=dict(spike=spike, gamma=gamma, measure=measure,
                                             model=model, p=p, common_row=common_row))
        if not bool(best.converged[0]):
            what = "lam" if isinstance(lam, str) else "eta"
            if strict:
                raise ConvergenceError(f"no converged optimum over {what} at alpha={alpha:g}")
            # a point at some lam would be a number for a question not asked: NaN, with a reason
            lam = 1.0 if isinstance(lam, str) else lam
            eta = 0.0 if isinstance(eta, str) else eta
            problem = build_problem(sigma=sigma, target=target, alpha0=alpha0, eta=eta, lam=lam,
                                    beta=beta, delta=delta, spike=spike, gamma=gamma,
                                    measure=measure, model=model, p=p, common_row=common_row)
            res = solve_point(problem, alpha, solver=solver, engine=engine)
            nan = float("nan")
            return replace(res, risk=nan, converged=False, status="max_iter",
                           lam=nan if what == "lam" else res.lam,
                           eta=nan if what == "eta" else res.eta,
                           eta_schedule=[nan] if what == "eta" else res.eta_schedule,
                           message=f"the search for the optimal {what} did not converge at "
                                   f"alpha={alpha:g}: {best.message[0]}")
        lam, eta = float(best.lam[0]), float(best.eta[0])
        note = str(best.message[0])
    problem = _one_step_problem(how, readout, sigma=sigma, target=target, alpha0=alpha0,
                                eta=eta, lam=lam, beta=beta, delta=delta, spike=spike,
                                gamma=gamma, measure=measure, model=model, p=p,
                                common_row=common_row)
    warn_small_alpha([alpha], problem.p)
    res = solve_point(problem, alpha, solver=solver, strict=strict, engine=engine)
    if note is not None and res.converged:
        res = replace(res, message=note)
    return res


def risk_curve(
    alphas: Iterable[float],
    *,
    sigma: str | Function = default("sigma"),
    target: str | Function = default("target"),
    alpha0: float = default("alpha0"),
    eta: float | str = default("eta"),
    lam: float | str = default("lam"),
    beta: float = default("beta"),
    delta: float = default("delta"),
    spike: SpikeMapping | None = None,
    gamma: float | None = None,
    measure: SpectralMeasure | None = None,
    solver: SolverConfig = SolverConfig(),
    strict: bool = False,
    progress: bool | None = None,
    engine: str = default("engine"),
    model: str = default("model"),
    p: float | None = default("p"),
    common_row: float | str | None = default("common_row"),
    readout: object = default("readout"),
    steps: int = default("steps"),
    loadings: object = default("loadings"),
    bulk: object = default("bulk"),
    fractions: object = default("fractions"),
    overlaps: object = default("overlaps"),
    batch: str = default("batch"),
) -> pd.DataFrame:
    """Risk along alpha (warm starts, continuation on failure) as a tidy DataFrame: one row per
    alpha in the given order, columns ``alpha, risk, converged, iterations`` plus every order
    parameter, conjugate and input parameter. ``lam="optimal"`` or ``eta="optimal"``: the risk
    minimised over lam (log scale) or eta_tilde at each alpha (``asymptotics.api.grid``), with the
    minimiser as the ``lam`` / ``eta`` column and ``interior`` saying whether it lies inside the
    search bounds. ``engine``: "compiled" (default) or "python" (same numbers, for comparison).
    ``readout``, ``steps``, a given K-group model (``loadings``, ``bulk``, ``fractions``,
    ``overlaps``) or a multi-index target: as in :func:`risk`, the curve of the K-group engine
    (:func:`asymptotics.risk_spiked_curve`: one kappa rule for the whole curve, the groups
    computed once; a ``route`` column says which); ``batch``: as in :func:`risk`."""
    import pandas as pd

    checks.flag("strict", strict)
    checks.optional_flag("progress", progress)
    _check_solver(solver)
    alphas = checks.sequence("alphas", alphas)
    if len(alphas) > MAX_GRID_POINTS:  # (a curve of that many rows would take gigabytes)
        raise ValueError(f"alphas has {len(alphas)} values; at most {MAX_GRID_POINTS:.0e} in one "
                         "curve: split it into several calls")
    alphas = [check_alpha(a) for a in alphas]
    eta = one_step_eta(eta, steps)
    given = dict(loadings=loadings, bulk=bulk, fractions=fractions, overlaps=overlaps)
    how = route(steps=steps, readout=readout, given=given, target=target, model=model,
                batch=batch)
    if how != "one-spike":
        df, eta = solve_k_group(alphas, curve=True, how=how, steps=steps, readout=readout,
                                given=given, model=model, engine=engine,
                                overrides=dict(spike=spike, gamma=gamma, measure=measure,
                                               common_row=common_row),
                                lam=lam, eta=eta, sigma=sigma, target=target, alpha0=alpha0,
                                beta=beta, delta=delta, p=p, strict=strict, solver=solver,
                                progress=progress, batch=batch, fields=True)
        if df is not None:  # else: the one-step network theory answers exactly, at that eta
            return df  # (with route_fields' columns: what produced each row beyond its groups)
    check_engine(engine)
    overrides = dict(spike=spike, gamma=gamma, measure=measure, model=model, p=p,
                     common_row=common_row)
    if isinstance(lam, str) or isinstance(eta, str):
        df = _optimal_curve(alphas, sigma=sigma, target=target, alpha0=alpha0, eta=eta, lam=lam,
                            beta=beta, delta=delta, solver=solver, overrides=overrides,
                            progress=progress)
        if strict and not df.converged.all():
            bad = df.alpha[~df.converged].tolist()
            raise ConvergenceError(f"no converged optimum at alpha={bad}")
        return df
    problem = _one_step_problem(how, readout, sigma=sigma, target=target, alpha0=alpha0,
                                eta=eta, lam=lam, beta=beta, delta=delta, **overrides)
    warn_small_alpha(alphas, problem.p)
    first = ["alpha", "risk", "converged", "iterations", "residual"]
    if engine == "compiled" and problem.lam > 0:
        from asymptotics.api.paths import path_frame, solve_path

        a = np.asarray(alphas, dtype=np.float64)
        lams = np.full(a.shape[0], problem.lam)
        df = path_frame(problem, a, lams, solve_path(problem, a, lams, solver))
        if strict and not df.converged.all():
            i = int(np.argmin(df.converged.to_numpy()))
            raise ConvergenceError(f"equations did not converge at alpha={alphas[i]:g}: "
                                   f"{df.message[i]}")
        return df
    rows = [r.as_dict() for r in curve_results(problem, alphas, solver, strict, progress)]
    df = pd.DataFrame(rows)
    return df[first + [c for c in df.columns if c not in first]]


def _one_step_problem(how: str, readout: object, **kw) -> Problem:
    """``build_problem(**kw)``; off the one-spike route (a readout of one value a, answered by
    the one-step network theory at eta a, THEORY.md §11) its errors say the readout scaled eta."""
    try:
        return build_problem(**kw)
    except ValueError as err:
        if how == "one-spike":
            raise
        raise ValueError(f"readout={readout!r} scales the step to eta * a: {err}") from None


def _optimal_curve(alphas, *, eta, lam, overrides, progress=None, **kw) -> pd.DataFrame:
    from asymptotics.api.grid import optimal_eta, optimal_lam

    for name, value in (("lam", lam), ("eta", eta)):
        if isinstance(value, str) and value != "optimal":
            raise ValueError(f"{name} must be a number >= 0 or 'optimal', got {value!r}")
    if isinstance(lam, str) and isinstance(eta, str):
        raise ValueError("lam and eta cannot both be 'optimal' (optimise one at a time)")
    if isinstance(lam, str):
        return optimal_lam(alphas, eta=eta, progress=progress, **kw, **overrides)
    return optimal_eta(alphas, lam=lam, progress=progress, **kw, **overrides)


def one_step_eta(eta: object, steps: object) -> object:
    """``eta`` of one step given as a schedule of one value (``eta=(1.0,)``, ``steps=1``): that
    value, on every route, so that a loop ``risk(..., steps=t, eta=schedule[:t])`` keeps its
    call; a schedule of another length at one step is refused in one line."""
    if isinstance(eta, (str, bytes)) or np.ndim(eta) == 0:
        return eta
    if checks.integer("steps", steps, 1) != 1:
        return eta
    values = list(np.ravel(np.asarray(eta, dtype=object)))
    if len(values) != 1:
        raise ValueError(f"eta needs one value per step (steps=1), got {len(values)} values")
    return values[0]


def _check_solver(solver: object) -> None:
    if not isinstance(solver, SolverConfig):
        raise TypeError(f"solver must be a SolverConfig (e.g. SolverConfig(rtol=1e-10)), got "
                        f"{solver!r}")
