"""Solving the K-group, r-spike equations at one alpha, along alpha, and the per-direction
contributions (docs/THEORY.md §10.5): Anderson-accelerated damped Picard on the closed
(V1, V2) subsystem (``asymptotics.equations.solver``), exact completion of (zeta, m, psi, Q) and the
relative residual of the literal map over all unknowns at ``rtol``. Unconverged: risk NaN."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from functools import lru_cache
from operator import itemgetter

import numpy as np

from asymptotics.coefficients.functions import Function
from asymptotics.core import checks, group_checks, meta
from asymptotics.core.parameters import default
from asymptotics.core.result import (  # noqa: F401  (SpikedResult: the former name, same class)
    RESULT_COLUMNS,
    RiskResult,
    SpikedResult,
)
from asymptotics.core.result import results_frame as _frame
from asymptotics.equations.ladder import (  # noqa: F401  (the policy's names, kept here too)
    LADDER,
    PAIR_FACTOR,
    PROBES,
    QUADRATURE_RTOL,
    SETTLE_CHANGES,
    SETTLE_FACTOR,
    aligned_ladder,
    climb_ladders,
    quadrature_error,
    relabel,
    rule_nodes,
)
from asymptotics.equations.ladder import climb as _climb  # noqa: F401  (one ladder's climb)
from asymptotics.equations.ladder import curve_on_ladder as _curve_on_ladder
from asymptotics.equations.ladder import ladder as _ladder
from asymptotics.equations.solver import ConvergenceError, SolverConfig, Status
from asymptotics.models.problem import check_alpha
from asymptotics.spiked import contrast
from asymptotics.spiked.anderson import node_args, solve_point
from asymptotics.spiked.kernels import sizes
from asymptotics.spiked.problem import PROBES_CACHE, SpikedProblem, probes_key, spiked_builder

STATE_NAMES = ("Q1", "Q2", "V1", "V2", "zeta", "psi", "m")


def unpack_state(prob: SpikedProblem, x: np.ndarray | list) -> dict:
    """The state vector ``x`` (an array, or its ``tolist()``) as {name: list (a vector) or list
    of rows (a matrix)}: the slices of :func:`_layout` taken by one ``itemgetter``."""
    flat = x if type(x) is list else x.tolist()
    spec, get = _pieces(*prob.loadings.shape, prob.k)
    parts, out, i = get(flat), {}, 0
    for n, rows in spec:  # (rows 0: a vector, one slice)
        out[n] = list(parts[i:i + rows]) if rows else parts[i]
        i += rows or 1
    return out


@lru_cache(maxsize=64)
def _pieces(K: int, r: int, k: int) -> tuple:
    """(per order parameter its name and its rows, 0 for a vector; the ``itemgetter`` of the
    state's slices in that order: a vector's, or a matrix's rows)."""
    spec, cuts = [], []
    for n, a, b, c in _layout(K, r, k):
        rows = [slice(j, j + c) for j in range(a, b, c)] if c else [slice(a, b)]
        spec.append((n, len(rows) if c else 0))
        cuts += rows
    return tuple(spec), itemgetter(*cuts)


@lru_cache(maxsize=64)
def _layout(K: int, r: int, k: int) -> tuple:
    """Per order parameter of :data:`STATE_NAMES`: (name, its first and end offset in the state,
    its row length; 0: a vector)."""
    o = sizes(K, r, k)
    cols = (K, 0, K, 0, r, k, 0)
    return tuple((n, o[i], o[i + 1], c) for i, (n, c) in enumerate(zip(STATE_NAMES, cols,
                                                                        strict=True)))


def cold_start(prob: SpikedProblem) -> np.ndarray:
    """(V1, V2) to start from: 0.5 diag(pi), 0.5 pi."""
    pi = prob.fractions
    return np.concatenate([0.5 * np.diag(pi).ravel(), 0.5 * pi])


def solve_spiked(prob: SpikedProblem, alpha: float, solver: SolverConfig = SolverConfig(),
                 x0: np.ndarray | None = None, strict: bool = False,
                 rule: tuple[int, float] = (0, math.nan), base: dict | None = None
                 ) -> SpikedResult:
    """Solve at one alpha (docs/THEORY.md §10.5); ``x0``: a warm start of (V1, V2); ``rule``:
    the (``n_kappa``, ``quadrature_change``) the result carries; ``base``: as :func:`_result`'s
    (the fields of an earlier record of the same model: the same record)."""
    alpha = check_alpha(alpha)
    K = prob.fractions.shape[0]
    nn, has_x0 = _nonneg(K), x0 is not None
    start = (np.ascontiguousarray(x0, dtype=np.float64) if has_x0
             else np.zeros(K * K + K))
    out = solve_point(
        start, has_x0, nn, *node_args(prob), alpha / prob.beta, prob.lam, prob.delta, prob.beta,
        prob.fractions, prob.p_inv, solver.rtol, solver.scale_floor, solver.max_iter,
        solver.damping, solver.anderson)
    return _result(prob, alpha, solver, out, strict, rule, base)


def _result(prob: SpikedProblem, alpha: float, solver: SolverConfig, out: tuple, strict: bool,
            rule: tuple, base: dict | None = None) -> SpikedResult:
    """The record of :func:`solve_spiked` from ``solve_point``'s outputs ``out``; ``base``: the
    fields of an earlier record of the same problem (the model and the defaults), copied as
    :meth:`RiskResult.with_fields` does instead of running the dataclass' ``__init__`` (the
    same record, field for field)."""
    state, code, n_iter, resid, v, solved, risk, sv, power, total = out
    K = prob.fractions.shape[0]
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
    flat = state.tolist()
    fields = dict(alpha=alpha, risk=float(risk), converged=bool(conv),
                  status=status.name.lower() if isinstance(status, Status) else status,
                  message=message, iterations=int(n_iter), residual=float(resid),
                  order=unpack_state(prob, flat), state=tuple(flat),
                  n_kappa=rule[0], quadrature_change=rule[1])
    if base is None:
        return SpikedResult(**fields, **prob.params())
    res = object.__new__(SpikedResult)
    res.__dict__.update(base)
    res.__dict__.update(fields)
    return res


class _Rows:
    """:func:`solve_spiked` along a curve on one problem with the per-point work done once (the
    kernel's arguments; the model's fields and the defaults, taken from the first record): a
    row is the record ``solve_spiked(prob, alpha, solver, x0=x0, rule=rule)`` returns."""

    def __init__(self, prob: SpikedProblem, solver: SolverConfig) -> None:
        K = prob.fractions.shape[0]
        self.prob, self.solver, self.nn = prob, solver, _nonneg(K)
        self.head = (self.nn, *node_args(prob))
        self.tail = (prob.lam, prob.delta, prob.beta, prob.fractions, prob.p_inv, solver.rtol,
                     solver.scale_floor, solver.max_iter, solver.damping, solver.anderson)
        self.cold = np.zeros(K * K + K)
        self.base: dict | None = None

    def solve(self, alpha: float, x0: np.ndarray | None, rule: tuple) -> SpikedResult:
        """``solve_spiked(prob, alpha, solver, x0=x0, rule=rule)``, ``alpha`` a checked float."""
        has_x0 = x0 is not None
        start = np.ascontiguousarray(x0, dtype=np.float64) if has_x0 else self.cold
        out = solve_point(start, has_x0, *self.head, alpha / self.prob.beta, *self.tail)
        res = _result(self.prob, alpha, self.solver, out, False, rule, self.base)
        if self.base is None and self.prob.lam != 0.0:  # (lam = 0: the limit's own record)
            self.base = dict(res.__dict__)
        return res


def _v(prob: SpikedProblem, res: SpikedResult) -> np.ndarray:
    """The (V1, V2) of a solution (a warm start)."""
    lay = _layout(*prob.loadings.shape, prob.k)  # (V1's first offset to V2's end)
    return np.array(res.state[lay[2][1]:lay[3][2]])


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
    default (r >= 2) the kappa rule is refined along :data:`LADDER` (then, at r = 2, the aligned
    rules of :func:`aligned_ladder`) until the point is settled
    (:func:`_climb_point`: the error estimate :func:`quadrature_error` within
    :data:`QUADRATURE_RTOL`; ``n_kappa``, ``quadrature_change`` of the result)."""
    alpha = check_alpha(alpha)
    checks.flag("strict", strict)
    group_checks.spiked_inputs(loadings, bulk, fractions, overlaps, p, n_kappa, n_omega)
    group_checks.instance("solver", solver, SolverConfig, "SolverConfig(rtol=1e-10)")
    params = dict(sigma=sigma, target=target, loadings=loadings, bulk=bulk,
                  fractions=fractions, overlaps=overlaps, lam=lam, beta=beta, delta=delta, p=p)
    build = spiked_builder(**params)
    r = np.shape(np.asarray(loadings, dtype=object))[1] if np.ndim(loadings) == 2 else 1
    with meta.blas_limit(1):  # the kernels' LAPACK calls are small: one BLAS thread
        res = (solve_spiked(build(n_kappa, n_omega), alpha, solver) if n_kappa is not None
               or r == 1 else _climb_point(lambda nk, rc=None: build(nk, n_omega, rc), alpha,
                                           solver, int(r))[0])  # (a given or one-spike rule)
    if strict and not res.converged:
        raise ConvergenceError(f"K-group equations did not converge at alpha={alpha:g}: "
                               f"{res.message}")
    return res


def _aligned_message(res: SpikedResult, rule: tuple, where: str = "") -> SpikedResult:
    h, n = rule
    return relabel(res, message=f"converged (aligned rule: trapezoid step {h:g} on the "
                                f"sharpest spike axis, {n} Gauss-Hermite nodes on the other; "
                                f"the tensor Gauss-Hermite ladder did not settle{where})")


def _climb_point(problem: Callable, alpha: float, solver: SolverConfig, r: int,
                 start: int = 0) -> tuple[SpikedResult, int | None]:
    """One point up the kappa ladders of ``r`` spikes (docs/THEORY.md §10.8): the tensor ladder,
    then, where it does not settle, the aligned one (:func:`aligned_ladder`,
    DERIVATIONS.md §9.6), each rule warm-started from the one before; ``problem(rule, reach)``:
    the problem on a rule (``reach``: at the tensor ladder's first, its second, always solved
    next); ``start``: the first rule over both ladders (as the index returned: climb_ladders)."""
    x0: list = [None]  # the (V1, V2) of the previous rule: the next rule starts there
    base: list = [None]  # the first record's fields (the model's: every rule's record has them)
    lad = _ladder(r)  # (its first rule builds its second's line pieces too)

    def solve_rule(rule, first: bool) -> SpikedResult:
        reach = lad[1] if first and len(lad) > 1 and rule == lad[0] else None
        prob = problem(rule, reach)  # (the rule of the unlearned directions is kept)
        res = solve_spiked(prob, alpha, solver, x0=x0[0], base=base[0])
        if base[0] is None and prob.lam != 0.0:  # (lam = 0: the limit's own record, as _Rows)
            base[0] = dict(res.__dict__)
        if res.converged:
            x0[0] = _v(prob, res)
            if isinstance(rule, tuple):  # (start > 0: a curve's later probe)
                res = _aligned_message(res, rule, " at a probe of the curve" if start else "")
        return res

    return climb_ladders(solve_rule, (_ladder(r), aligned_ladder(r)), start)


#: a curve starts each alpha from the polynomial through the solutions at the last
#: PREDICTOR_POINTS converged alphas (cubic: 20-33% fewer Anderson iterations than a line)
PREDICTOR_POINTS = 4


def _predict(seen: list[tuple[float, np.ndarray]], a: float, nn: np.ndarray
             ) -> np.ndarray | None:
    """The start at ``a`` from the (alpha, (V1, V2)) of the previous converged points: the
    Lagrange polynomial through them where they and ``a`` run one way in steps that grow at
    most twofold (a sweep), else the line through the last two (the former predictor); the
    entries of ``nn`` clipped at 0; the last solution if the alphas repeat; None without any."""
    if not seen:
        return None
    xs = [al for al, _ in seen]
    if len(set(xs)) < len(xs):
        return seen[-1][1]
    steps = [b - c for b, c in zip(xs[1:], xs, strict=False)]
    steps.append(a - xs[-1])
    last = steps[-1]
    sweep = True
    for i, d in enumerate(steps):
        if not d * last > 0 or (i and not abs(d) <= 2.0 * abs(steps[i - 1])):
            sweep = False
            break
    if not sweep:
        seen, xs = seen[-2:], xs[-2:]
    cs = []
    for i, ai in enumerate(xs):
        c = 1.0  # (math.prod's product, factor by factor)
        for j, aj in enumerate(xs):
            if j != i:
                c *= (a - aj) / (ai - aj)
        cs.append(c)
    x0 = np.array(cs) @ np.array([v for _, v in seen])
    np.maximum(x0, 0.0, out=x0, where=_mask(x0.shape[0], nn.tobytes()))
    return x0


@lru_cache(maxsize=16)
def _mask(n: int, index: bytes) -> np.ndarray:
    """The entries ``index`` (int64 bytes) of n as a mask (cached: do not modify)."""
    out = np.zeros(n, dtype=bool)
    out[np.frombuffer(index, dtype=np.int64)] = True
    return out


@lru_cache(maxsize=16)
def _nonneg(K: int) -> np.ndarray:
    """The entries of (V1, V2) that are >= 0: diag V1 and V2 (cached: do not modify)."""
    return np.array([g * (K + 1) for g in range(K)] + [K * K + g for g in range(K)],
                    dtype=np.int64)


def risk_spiked_curve(alphas: Iterable[float], *, strict: bool = False,
                      solver: SolverConfig = SolverConfig(), progress: bool | None = None,
                      **params):
    """Risk along alpha (warm starts) as a pandas DataFrame: one row per alpha, the columns of
    every result (``RESULT_COLUMNS``; lists and the ``order`` mapping as JSON). ``progress``: a
    report per point solved on stderr (:class:`asymptotics.core.progress.Progress`; False: none).
    With r >= 2 spikes the kappa rule is decided once for the curve by probe points
    (:func:`_curve_on_ladder`), then every alpha is solved once on it."""
    return curve_frame(alphas, None, None, strict=strict, solver=solver, progress=progress,
                       **params)


def curve_frame(alphas: Iterable[float], route: str | None, fields: dict | None, *,
                strict: bool = False, solver: SolverConfig = SolverConfig(),
                progress: bool | None = None, **params):
    """:func:`risk_spiked_curve`'s frame with a column ``route`` (that text in every row) after
    ``alpha`` and the columns ``fields`` (name: one value for every row) set, built at once
    (``core.result.results_frame``; the curve entry's step fields, THEORY.md §12)."""
    from asymptotics.core.progress import Progress

    checks.flag("strict", strict)
    checks.optional_flag("progress", progress)
    alphas = [check_alpha(a) for a in checks.sequence("alphas", alphas)]
    n_kappa, n_omega = params.pop("n_kappa", None), params.pop("n_omega", None)
    group_checks.spiked_inputs(*(params.get(n) for n in ("loadings", "bulk", "fractions",
                                                        "overlaps", "p")), n_kappa, n_omega)
    group_checks.instance("solver", solver, SolverConfig, "SolverConfig(rtol=1e-10)")

    built: dict = {}  # the problem of each rule (the probes and the curve share it)
    build = spiked_builder(**params)

    def problem(nk: int | None, reach: int | None = None) -> SpikedProblem:
        if nk not in built:  # (the rule of the unlearned directions is kept)
            built[nk] = build(nk, n_omega, reach)
        return built[nk]

    def sweep(nk: int | None, bar_on: bool | None, rule: tuple[int, float] = (0, math.nan),
              first: SpikedResult | None = None, known: dict | None = None
              ) -> list[SpikedResult]:
        """Every alpha once on rule ``nk``, started from :func:`_predict` (the first from
        ``first``, a solution at alphas[0], if given); ``known``: {index: a converged result at
        that alpha on rule ``nk``}, taken as the point; ``rule``: what each result carries."""
        prob, out, seen = problem(nk), [], []
        known = known or {}
        rows = _Rows(prob, solver)
        nn = rows.nn
        start = None if first is None else _v(prob, first)
        desc = "spiked curve" + ("" if nk is None else f" ({nk} kappa nodes)")
        rule = (rule_nodes(rule[0]), rule[1])
        with Progress(len(alphas), desc, unit="pt", enabled=bar_on) as bar:
            for j, a in enumerate(bar.iter(alphas)):
                if j in known:
                    res = relabel(known[j], n_kappa=rule[0], quadrature_change=rule[1])
                else:
                    x0 = _predict(seen, a, nn) if seen else start
                    res = rows.solve(a, x0, rule)
                    if res.converged and isinstance(nk, tuple):
                        res = _aligned_message(res, nk, " at a probe of the curve")
                if res.converged:
                    seen = [*seen, (a, _v(prob, res))][-PREDICTOR_POINTS:]
                out.append(res)
        return out

    loadings = params.get("loadings")
    r = int(np.shape(np.asarray(loadings, dtype=object))[1] if np.ndim(loadings) == 2 else 1)

    def climb(a: float, start: int = 0) -> tuple[SpikedResult, int | None]:
        return _climb_point(problem, a, solver, r, start)

    with meta.blas_limit(1):  # the kernels' LAPACK calls are small: one BLAS thread
        if n_kappa is not None or r == 1:  # a rule given by the caller, or the one-spike rule
            results = sweep(n_kappa, progress)
        else:  # the tensor ladder, then the aligned one (a second ladder, §10.8)
            rules = (*_ladder(r), *aligned_ladder(r))
            results = _curve_on_ladder(alphas, rules, sweep, climb, progress, fail_fast=True,
                                       second=len(_ladder(r)) if aligned_ladder(r) else None,
                                       cache=(PROBES_CACHE, probes_key(build, n_omega, solver)))
    if strict and not all(res.converged for res in results):
        bad = next(res for res in results if not res.converged)
        raise ConvergenceError(f"K-group equations did not converge at alpha={bad.alpha:g}: "
                               f"{bad.message}")
    return _frame(results, route, fields)


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
