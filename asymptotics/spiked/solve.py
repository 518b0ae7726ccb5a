"""Solving the K-group, r-spike equations at one alpha, along alpha, and the per-direction
contributions (docs/THEORY.md §10.5): Anderson-accelerated damped Picard on the closed
(V1, V2) subsystem (``asymptotics.equations.solver``), exact completion of (zeta, m, psi, Q) and the
relative residual of the literal map over all unknowns at ``rtol``. Unconverged: risk NaN."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from asymptotics.coefficients.functions import Function
from asymptotics.core import checks, group_checks
from asymptotics.core.parameters import default
from asymptotics.equations.solver import ConvergenceError, SolverConfig, Status, relative_residual
from asymptotics.spiked.anderson import anderson
from asymptotics.spiked.kernels import channel_v, complete, full_map, risk_of, sizes, v_map
from asymptotics.spiked.problem import SpikedProblem, build_spiked_problem

STATE_NAMES = ("Q1", "Q2", "V1", "V2", "zeta", "psi", "m")


@dataclass(frozen=True)
class SpikedResult:
    """One point of the K-group, r-spike theory with every parameter (docs/THEORY.md §10).
    ``risk`` is E_x (g - f)^2 on noiseless inputs; NaN unless ``converged``."""

    alpha: float
    risk: float
    converged: bool
    status: str
    message: str
    iterations: int
    residual: float
    sigma: str
    target: str
    loadings: list
    bulk: list
    fractions: list
    overlaps: list
    lam: float
    beta: float
    delta: float
    p: float
    order: dict = field(repr=False, compare=False)  # the order parameters (lists)
    state: tuple = field(repr=False, compare=False)
    # the kappa rule the risk was computed on (nodes per dimension; 0: the problem's own rule)
    # and the relative change of the risk from the next coarser rule of the ladder (NaN: not
    # checked, e.g. r = 1 or a rule given by the caller)
    n_kappa: int = 0
    quadrature_change: float = math.nan

    def as_dict(self) -> dict:
        """Flat record; lists, matrices and the order parameters as JSON strings."""
        out = {}
        for k, v in asdict(self).items():
            if k == "state":
                continue
            if k == "order":
                for name, val in v.items():
                    out[name] = json.dumps(val)
            else:
                out[k] = json.dumps(v) if isinstance(v, list) else v
        return out


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


class _Solved:
    """The outcome of the V-subsystem solve (the fields of ``solver.SolverResult`` used here)."""

    def __init__(self, x: np.ndarray, status: Status, n_iter: int, residual: float) -> None:
        self.x, self.status, self.n_iter, self.residual = x, status, n_iter, residual
        self.converged = status == Status.CONVERGED


def contrast_status(prob: SpikedProblem, alpha: float, v: np.ndarray,
                    status: Status) -> tuple[Status | str, str]:
    """K >= 2 groups at p = infinity: ``("needs_width", reason)`` where the mean channel uses a
    direction of the groups' mean features so weak that only networks wider than
    :data:`~asymptotics.core.group_checks.MAX_LIMIT_WIDTH` reach the limit (the groups'
    contrast channel opened by a tiny loading difference, THEORY.md §10.6); else unchanged."""
    t = prob.tables
    K = prob.fractions.shape[0]
    iv = 1.0 / (1.0 + channel_v(v[:K * K].reshape(K, K), v[K * K:], t.mub1, t.mus2))
    sq = np.sqrt(t.weights * iv)
    need, rel = group_checks.contrast_width(sq[:, None] * t.mu0, sq * t.h, alpha / prob.beta,
                                            v[K * K:])
    if need <= group_checks.WARN_LIMIT_WIDTH:
        return status, status.message
    if need <= group_checks.MAX_LIMIT_WIDTH:
        import warnings

        from asymptotics.models.problem import LimitWarning

        warnings.warn("K groups at p = infinity: the groups' contrast channel makes this limit "
                      "the answer only for networks much wider than the width in the result's "
                      "message; pass the width, p=... (the finite-width theory, THEORY.md "
                      "§10.6)", LimitWarning, stacklevel=3)
        return status, (f"{status.message}; the groups' contrast channel: the limit holds for "
                        f"networks much wider than ~{need:.2g} neurons (pass p=...)")
    return "needs_width", (
        f"at p = infinity the groups' contrast channel (a direction of their mean features whose "
        f"eigenvalue is {rel:.2g} of the largest) is unpenalised, and the limit holds only for "
        f"networks wider than ~{need:.2g} neurons: pass the width, p=... (the finite-width "
        "theory, THEORY.md §10.6)")


def cold_start(prob: SpikedProblem) -> np.ndarray:
    """(V1, V2) to start from: 0.5 diag(pi), 0.5 pi."""
    pi = prob.fractions
    return np.concatenate([0.5 * np.diag(pi).ravel(), 0.5 * pi])


def solve_spiked(prob: SpikedProblem, alpha: float, solver: SolverConfig = SolverConfig(),
                 x0: np.ndarray | None = None, strict: bool = False) -> SpikedResult:
    """Solve at one alpha (docs/THEORY.md §10.5); ``x0``: a warm start of (V1, V2)."""
    alpha = checks.positive("alpha", alpha)
    a = _args(prob, alpha)
    t = prob.tables
    K = prob.fractions.shape[0]
    vargs = (t.weights, t.mub1, t.mus2, alpha / prob.beta, prob.lam, prob.beta, prob.fractions)
    nonneg = tuple(i * (K + 1) for i in range(K)) + tuple(K * K + g for g in range(K))
    attempts = [x0] if x0 is not None else []
    attempts += [cold_start(prob), cold_start(prob)]
    res = None
    nn = np.array(nonneg, dtype=np.int64)
    for i, start in enumerate(attempts):
        cfg = solver if i < len(attempts) - 1 else SolverConfig(
            solver.rtol, solver.scale_floor, 4 * solver.max_iter, 0.2, solver.anderson)
        x, code, n_it, rr = anderson(np.asarray(start, dtype=np.float64), nn, *vargs,
                                     cfg.rtol / 10, cfg.scale_floor, cfg.max_iter, cfg.damping,
                                     cfg.anderson)
        res = (x, Status(int(code)), int(n_it), float(rr))
        if res[1] == Status.CONVERGED:
            break
    assert res is not None
    res = _Solved(*res)
    status, n_iter = res.status, res.n_iter
    state = np.full(sizes(K, *prob.loadings.shape[1:], prob.k)[-1], np.nan)
    resid = res.residual
    if res.converged:
        v = res.x
        for _ in range(3):  # polish: contraction steps
            v = v_map(v, *vargs)
        state, ok = complete(v, *a)
        fx = full_map(state, *a)
        o = sizes(K, *prob.loadings.shape[1:], prob.k)
        resid = relative_residual(state, fx, solver.scale_floor)
        # the physical domain Q2 >= 0, diag Q1 >= 0, up to round-off (a perfect fit has Q = 0)
        tiny = 1e-12 * max(1.0, float(np.max(np.abs(state[:o[2]])))) if np.all(
            np.isfinite(state)) else 0.0
        q1d = np.diag(state[:o[1]].reshape(K, K))
        q_ok = ok and np.all(np.isfinite(state)) and np.all(state[o[1]:o[2]] >= -tiny)
        q_ok = q_ok and np.all(q1d >= -tiny)
        if q_ok:
            state[o[1]:o[2]] = np.maximum(state[o[1]:o[2]], 0.0)
        if not q_ok:
            status = Status.OUT_OF_DOMAIN
        elif not resid <= solver.rtol:
            status = Status.MAX_ITER
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
    if res.converged and prob.p is None and K >= 2:  # the contrast channel at p = inf (§10.6)
        status, message = contrast_status(prob, alpha, res.x, status)
        conv = status == Status.CONVERGED
    else:
        message = status.message
    risk = risk_of(state, *a[:8]) if conv else math.nan
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


def _ladder(r: int) -> tuple[int, ...]:
    return KAPPA_LADDER.get(r, KAPPA_LADDER[4]) if r >= 2 else ()


def _refined(solve_at: Callable[[int | None, int | None], list[SpikedResult]], r: int,
             n_kappa: int | None, n_omega: int | None) -> list[SpikedResult]:
    """Solve on the ladder of kappa rules until every risk agrees with the previous rule's to
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

    def solve_at(nk: int | None, no: int | None) -> list[SpikedResult]:
        prob = build_spiked_problem(**params, n_kappa=nk, n_omega=no)
        return [solve_spiked(prob, alpha, solver)]

    r = np.shape(np.asarray(loadings, dtype=object))[1] if np.ndim(loadings) == 2 else 1
    res = _refined(solve_at, int(r), n_kappa, n_omega)[0]
    if strict and not res.converged:
        raise ConvergenceError(f"K-group equations did not converge at alpha={alpha:g}: "
                               f"{res.message}")
    return res


def risk_spiked_curve(alphas: Iterable[float], *, strict: bool = False,
                      solver: SolverConfig = SolverConfig(), progress: bool | None = None,
                      **params):
    """Risk along alpha (warm starts) as a pandas DataFrame: one row per alpha, every parameter
    and order parameter as columns (lists and matrices as JSON strings). ``progress``: a report
    per point solved on stderr (:class:`asymptotics.core.progress.Progress`; False: none; with
    r >= 2 spikes each quadrature rule of the refinement ladder solves the curve again)."""
    import pandas as pd

    from asymptotics.core.progress import Progress

    checks.flag("strict", strict)
    checks.optional_flag("progress", progress)
    alphas = [checks.positive("alpha", a) for a in checks.sequence("alphas", alphas)]
    n_kappa, n_omega = params.pop("n_kappa", None), params.pop("n_omega", None)
    group_checks.spiked_inputs(*(params.get(n) for n in ("loadings", "bulk", "fractions",
                                                        "overlaps", "p")), n_kappa, n_omega)
    group_checks.instance("solver", solver, SolverConfig, "SolverConfig(rtol=1e-10)")

    def solve_at(nk: int | None, no: int | None) -> list[SpikedResult]:
        prob = build_spiked_problem(**params, n_kappa=nk, n_omega=no)
        out, x0 = [], None
        K = prob.fractions.shape[0]
        desc = "spiked curve" + ("" if nk is None else f" ({nk} kappa nodes)")
        with Progress(len(alphas), desc, unit="pt", enabled=progress) as bar:
            for a in bar.iter(alphas):
                res = solve_spiked(prob, a, solver, x0=x0)
                if res.converged:
                    o = sizes(K, *prob.loadings.shape[1:], prob.k)
                    x0 = np.array(res.state[o[2]:o[4]])
                out.append(res)
        return out

    loadings = params.get("loadings")
    r = np.shape(np.asarray(loadings, dtype=object))[1] if np.ndim(loadings) == 2 else 1
    results = _refined(solve_at, int(r), n_kappa, n_omega)
    if strict and not all(res.converged for res in results):
        bad = next(res for res in results if not res.converged)
        raise ConvergenceError(f"K-group equations did not converge at alpha={bad.alpha:g}: "
                               f"{bad.message}")
    return pd.DataFrame([res.as_dict() for res in results])


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
