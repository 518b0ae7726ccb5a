"""Validated parameters of the K-group, r-spike theory and the tables that do not depend on
alpha (docs/THEORY.md §10.1-§10.2). Errors name the parameter and say what is allowed."""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from functools import lru_cache

import numpy as np

from asymptotics.coefficients.functions import Function, get_function
from asymptotics.coefficients.quadrature import kappa_rule
from asymptotics.coefficients.targets import parse_target, target_callable
from asymptotics.core import checks, group_checks
from asymptotics.equations.ladder import ProbeCache
from asymptotics.spiked.coefficients import (
    LADDER_GAIN,
    PRUNE,
    Tables,
    feature_tables,
    target_tables,
    tensor_rule,
)

SUM_TOL = 1e-9
#: default Gauss-Hermite nodes per kappa dimension (r = 1, 2, 3, >= 4)
KAPPA_NODES = {1: 120, 2: 24, 3: 12}
#: the most learned directions: the kappa rule is a tensor product (33^4 = 1.2e6 nodes at the
#: top of the r = 4 ladder; 33^5 would need tens of GB)
MAX_SPIKES = 4


@dataclass(frozen=True)
class SpikedProblem:
    """Everything but alpha: the model's parameters (arrays float64) and the quadrature tables."""

    sigma: Function
    target_name: str
    target: Function | Callable = field(repr=False)
    k: int
    loadings: np.ndarray  # (K, r)
    bulk: np.ndarray  # (K,)
    fractions: np.ndarray  # (K,)
    overlaps: np.ndarray  # (r, k)
    lam: float
    beta: float
    delta: float
    p: float | None
    tables: Tables = field(repr=False)

    @property
    def p_inv(self) -> float:
        return 0.0 if self.p is None else 1.0 / self.p

    def params(self) -> dict:
        """Every parameter as plain values (lists for matrices)."""
        return dict(sigma=self.sigma.name, target=self.target_name,
                    loadings=self.loadings.tolist(), bulk=self.bulk.tolist(),
                    fractions=self.fractions.tolist(), overlaps=self.overlaps.tolist(),
                    lam=self.lam, beta=self.beta, delta=self.delta,
                    p=math.inf if self.p is None else self.p)

    def params_json(self) -> dict:
        """As :meth:`params`, with lists and matrices as JSON strings (DataFrame columns)."""
        return {k: json.dumps(v) if isinstance(v, list) else v for k, v in self.params().items()}


def _matrix(name: str, value: object, ndim: int) -> np.ndarray:
    try:
        a = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array of real numbers, got {value!r}") from None
    if a.ndim != ndim:
        shape = ("an r x k matrix" if name == "overlaps" else "a K x r matrix") if ndim == 2 \
            else "a list of K numbers"
        raise ValueError(f"{name} must be {shape}, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return a


@lru_cache(maxsize=64)
def _parsed(text: str) -> tuple[Callable[[np.ndarray], np.ndarray], int]:
    """The target parser's vectorised g and k, cached (sympy parsing costs milliseconds)."""
    return target_callable(text)


@lru_cache(maxsize=64)
def target_degrees(text: str) -> tuple[int | None, ...]:
    """Per variable z_j, the degree of the target as a polynomial in z_j (the others fixed), or
    None where it is not one: Gauss-Hermite with degree + 1 nodes is then exact in omega_j for
    h, h1 and h2 (docs/THEORY.md §10.2)."""
    expr, syms = parse_target(text)
    out: list[int | None] = []
    for z in syms:
        try:
            out.append(int(expr.as_poly(z).degree()) if expr.is_polynomial(z) else None)
        except Exception:  # noqa: BLE001 (sympy raises many kinds on non-polynomials)
            out.append(None)
    return tuple(out)


@lru_cache(maxsize=64)
def _resolve_text(text: str) -> tuple[Function | Callable, int, str]:
    """:func:`resolve_target` of a string, parsed and checked once (a refusal is not cached)."""
    try:
        return get_function(text), 1, text
    except ValueError:
        g, k = _parsed(text)
        group_checks.target_growth(g, k, text)
        return g, k, text


def resolve_target(target: str | Function | Callable) -> tuple[Function | Callable, int, str]:
    """(g, k, name): a Function (single index, kinks known) or a vectorised g(Z), Z (..., k)."""
    if isinstance(target, Function):
        return target, 1, target.name
    if isinstance(target, str):
        return _resolve_text(target)
    if callable(target) and isinstance(getattr(target, "k", None), int):
        # a vectorised g(Z), Z (..., k), that states its k (e.g. a rotated multi-index target)
        return target, target.k, str(getattr(target, "name", "user"))
    if callable(target):
        try:
            sig = inspect.signature(target)
            k = sum(1 for p in sig.parameters.values()
                    if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                    and p.default is p.empty)
        except (TypeError, ValueError):
            k = 1
        if k < 1:
            raise ValueError("target callable must take k >= 1 positional arguments z1..zk")
        name = getattr(target, "__name__", "user")
        if k == 1:
            return Function.from_callable(target, name=name), 1, name

        def g(Z: np.ndarray) -> np.ndarray:
            out = target(*[Z[..., j] for j in range(k)])
            return np.broadcast_to(np.asarray(out, dtype=np.float64), Z.shape[:-1])

        return g, k, name
    raise TypeError(f"target must be an expression in z1..zk, a name or a callable, got {target!r}")


def build_spiked_problem(*, sigma: str | Function | Callable, target: str | Function | Callable,
                         loadings: object, bulk: object, fractions: object, overlaps: object,
                         lam: float, beta: float, delta: float = 0.0, p: float | None = None,
                         n_kappa: int | None = None, n_omega: int | None = None
                         ) -> SpikedProblem:
    """Validate (docs/THEORY.md §10.1) and precompute the tables (§10.2)."""
    return spiked_builder(sigma=sigma, target=target, loadings=loadings, bulk=bulk,
                          fractions=fractions, overlaps=overlaps, lam=lam, beta=beta,
                          delta=delta, p=p)(n_kappa, n_omega)


def _capped_lam(lam: float) -> float:
    """A finite lam above ``LAM_CAP`` (1e100) is evaluated there, with a warning: the
    equations' variables of order 1/lam^2 leave float64 beyond lam ~ 1e150, while the risk
    is already its large-lam value to double precision (at p = infinity it stops moving
    near lam ~ 1e20, the unpenalised mean channel; at a finite p it is E g^2 up to p/lam)."""
    from asymptotics.models.problem import LAM_CAP, LimitWarning

    if LAM_CAP < lam < math.inf:
        import warnings

        warnings.warn(f"lam = {lam:g} is evaluated at lam = {LAM_CAP:g} (the K-group "
                      "equations leave double precision beyond ~1e150; the risk there is its "
                      "large-lam value to double precision)", LimitWarning, stacklevel=4)
        return LAM_CAP
    return lam


def spiked_builder(*, sigma: str | Function | Callable, target: str | Function | Callable,
                   loadings: object, bulk: object, fractions: object, overlaps: object,
                   lam: float, beta: float, delta: float = 0.0, p: float | None = None
                   ) -> Callable[[int | None, int | None], SpikedProblem]:
    """Validate once (docs/THEORY.md §10.1); the answer builds the problem with the tables of a
    given rule, ``(n_kappa, n_omega, reach) -> SpikedProblem`` (the rules of a quadrature
    ladder; ``n_kappa`` an ``(h, n)`` pair: the aligned rule of :func:`aligned_nodes`; ``reach``:
    :func:`build_tables`')."""
    s = get_function(sigma)
    g, k, tname = resolve_target(target)
    U = _matrix("loadings", loadings, 2)
    K, r = U.shape
    if K < 1 or r < 1:
        raise ValueError(f"loadings must be K x r with K, r >= 1, got shape {U.shape}")
    if r > MAX_SPIKES:
        raise ValueError(f"loadings has r = {r} columns (learned directions); the kappa "
                         f"integrals use a tensor rule, implemented for r <= {MAX_SPIKES}")
    c = _matrix("bulk", bulk, 1)
    pi = _matrix("fractions", fractions, 1)
    for name, a in (("bulk", c), ("fractions", pi)):
        if a.shape[0] != K:
            raise ValueError(f"{name} must have K = {K} entries (one per row of loadings), "
                             f"got {a.shape[0]}")
    if np.any(c < 0):
        raise ValueError(f"bulk must be >= 0 (the groups' bulk variances c_g), got {c.tolist()}")
    if np.any(pi <= 0):
        raise ValueError(f"fractions must be > 0, got {pi.tolist()}")
    if abs(pi.sum() - 1.0) > SUM_TOL:
        raise ValueError(f"fractions must sum to 1, got {pi.sum():g}")
    G = _matrix("overlaps", overlaps, 2)
    if G.shape != (r, k):
        raise ValueError(f"overlaps must be r x k = {r} x {k} (r = columns of loadings, k = "
                         f"variables of the target), got shape {G.shape}")
    norms = np.sqrt(np.sum(G**2, axis=0))
    if np.any(norms > 1.0 + 1e-12):
        j = int(np.argmax(norms))
        raise ValueError(f"overlaps: column {j + 1} has norm |Gamma_{j + 1}| = {norms[j]:g}; the "
                         "target directions are unit vectors, so |Gamma_j| <= 1")
    G = G / np.maximum(norms, 1.0)[None, :]  # round-off above 1
    lam = checks.positive("lam", lam, allow_zero=True)
    beta = checks.positive("beta", beta)
    delta = checks.positive("delta", delta, allow_zero=True)
    if p is not None:
        p = None if p == math.inf else checks.real("p", p, 1.0)
        group_checks.group_width(p, pi)
    lam = _capped_lam(lam)
    from asymptotics.models.problem import cap_beta

    beta = cap_beta(beta)
    degrees = target_degrees(tname) if isinstance(target, str) and (not isinstance(
        g, Function) or (not g.kinks and g.name == g.expression)) else getattr(target, "degrees",
                                                                               None)
    # every input of a problem, exactly (the arrays' bytes, the floats' hex: -0.0 is not 0.0)
    model_key = (s, s.name, g, tname, k, U.shape, U.tobytes(), c.tobytes(), pi.tobytes(),
                 G.shape, G.tobytes(), *(float(x).hex() for x in (lam, beta, delta)),
                 None if p is None else float(p).hex(), degrees)
    try:
        hash(model_key)
    except TypeError:  # a target that cannot be a key (unhashable): nothing is cached
        model_key = None

    def build(n_kappa: int | tuple[float, int] | None = None, n_omega: int | None = None,
              reach: int | None = None) -> SpikedProblem:
        key = (s, g, k, U.shape, U.tobytes(), c.tobytes(), G.shape, G.tobytes(), n_kappa,
               n_omega, degrees)
        try:
            tables = _TABLES.get(key)
        except TypeError:  # a target that cannot be a key (unhashable): not cached
            tables, key = None, None
        if tables is None:
            if isinstance(n_kappa, tuple):  # an aligned rule (h, n)
                tables = aligned_tables(s, g, k, U, c, G, n_kappa, n_omega, degrees)
            else:
                tables = build_tables(s, g, k, U, c, G, n_kappa=n_kappa, n_omega=n_omega,
                                      degrees=degrees, reach=reach)
            if key is not None and tables.weights.shape[0] <= TABLES_CACHE_NODES:
                _TABLES[key] = tables
                while len(_TABLES) > TABLES_CACHE_SIZE:
                    _TABLES.pop(next(iter(_TABLES)))
        return SpikedProblem(s, tname, g, k, U, c, pi, G, lam, beta, delta, p, tables)

    build.key = model_key  # type: ignore[attr-defined]  (the key of the probes' cache)
    return build


#: the tables of the last TABLES_CACHE_SIZE rules built (of at most TABLES_CACHE_NODES nodes,
#: a few MB each), by model and rule (tensor and aligned): the probes and sweep of a curve, the
#: curves of a grid over lam and repeated calls share them (they are read only); 16 holds both
#: ladders of r = 2 (7 + 5 rules: with fewer, a curve that climbs both evicts, first in first
#: out, every rule before it is asked for again)
TABLES_CACHE_SIZE = 16
TABLES_CACHE_NODES = 50_000
_TABLES: dict = {}


#: the probe points' climbs of the last PROBES_CACHE_SIZE curves (docs/THEORY.md §10.8), by
#: model (``build.key`` of :func:`spiked_builder`), solver, probe alphas, rules and policy: a
#: curve asked again (the same model and alphas) skips its probes (the same results, bit for bit)
PROBES_CACHE_SIZE = 32
PROBES_CACHE = ProbeCache(PROBES_CACHE_SIZE)


def probes_key(build: Callable, n_omega: int | None, solver: object) -> tuple | None:
    """The exact key of a curve's probes in :data:`PROBES_CACHE` (beyond its alphas, rules and
    policy): the model (``build.key``; None: not cached), ``n_omega`` and the solver's settings
    (each field's type and value, a float by its hex)."""
    model = getattr(build, "key", None)
    if model is None:
        return None
    conf = tuple((type(v), float(v).hex() if isinstance(v, float) else v)
                 for v in (getattr(solver, f.name) for f in fields(solver)))
    return model, type(n_omega), n_omega, type(solver), conf


def clear_cache() -> None:
    """Forget the cached tables and probes (benchmarks time a first computation)."""
    _TABLES.clear()
    PROBES_CACHE.clear()


#: the range [-U_MAX, U_MAX] of the aligned rule's trapezoid axis (as the steps mapping's)
U_MAX = 9.0


def aligned_rotation(loadings: np.ndarray, bulk: np.ndarray) -> np.ndarray:
    """An orthogonal r x r rotation of kappa whose first axis is the loading of the group with the
    sharpest feature along kappa (the smallest ``sqrt(c_g)/|u_g|``), the next axes the principal
    directions of the other loadings orthogonal to it (docs/DERIVATIONS.md §9.6)."""
    U = np.asarray(loadings, dtype=np.float64)
    norms = np.linalg.norm(U, axis=1)
    width = np.where(norms > 0, np.sqrt(np.asarray(bulk, dtype=np.float64)) /
                     np.maximum(norms, 1e-300), np.inf)
    r = U.shape[1]
    if not np.any(np.isfinite(width)):
        return np.eye(r)
    e1 = U[int(np.argmin(width))] / norms[int(np.argmin(width))]
    _, _, vt = np.linalg.svd(np.vstack([U - np.outer(U @ e1, e1), np.eye(r)]))
    R, _ = np.linalg.qr(np.column_stack([e1, vt[:r - 1].T]))
    return R * np.sign(R[:, 0] @ e1)  # (a QR sign of the first column only: any sign is exact)


def aligned_nodes(loadings: np.ndarray, bulk: np.ndarray, h: float, n: int
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The aligned kappa rule (docs/DERIVATIONS.md §9.6) in the model's own coordinates: on the
    axes of :func:`aligned_rotation` R, a trapezoid rule of step ``h`` on [-U_MAX, U_MAX] along
    the sharpest group's loading and ``n`` Gauss-Hermite nodes on each other axis, pruned of the
    nodes whose weight is below PRUNE times the largest (as the tensor rules) and mapped back by
    R (kappa ~ N(0, I_r) is invariant under rotation: the loadings and overlaps are kept)."""
    U = np.asarray(loadings, dtype=np.float64)
    r = U.shape[1]
    x = np.arange(-U_MAX, U_MAX + h / 2, h)
    w1 = np.exp(-0.5 * x * x)
    w1 /= w1.sum()
    rest, wr = tensor_rule(r - 1, n) if r > 1 else (np.zeros((1, 0)), np.ones(1))
    kap = np.hstack([np.repeat(x[:, None], len(wr), axis=0), np.tile(rest, (len(w1), 1))])
    w = np.repeat(w1, len(wr)) * np.tile(wr, len(w1))
    keep = w > PRUNE * w.max()  # (pruned as the tensor rules)
    return np.ascontiguousarray(kap[keep] @ aligned_rotation(U, bulk).T), w[keep] / w[keep].sum()


def aligned_tables(sigma: Function, target: Function | Callable, k: int, U: np.ndarray,
                   c: np.ndarray, G: np.ndarray, rule: tuple[float, int], n_omega: int | None,
                   degrees: tuple[int | None, ...] | None) -> Tables:
    """The tables of the problem on the aligned rule ``rule = (h, n)`` (:func:`aligned_nodes`)."""
    kap, w = aligned_nodes(U, c, float(rule[0]), int(rule[1]))
    mu0, mb1, ms2 = feature_tables(sigma, kap, U, c)
    hh, h1, h2 = target_tables(target, k, kap, G, n_omega, degrees)
    a = np.ascontiguousarray
    return Tables(a(kap), a(w), a(mu0), a(mb1), a(ms2), a(hh), a(h1), a(h2))


def kappa_nodes(r: int, n: int | None, target_kinks: tuple[float, ...],
                overlaps: np.ndarray, sigma_kinks: tuple[float, ...] = (),
                loadings: np.ndarray | None = None,
                bulk: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The outer rule over kappa ~ N(0, I_r); r = 1 as in ``asymptotics.coefficients.cget``: split
    at the
    target's kinks in kappa when a target direction is fully learned, and at sigma's kinks
    t / u_g of a group whose bulk is nearly zero (c_g < 0.05)."""
    if r == 1:
        kinks: list[float] = []
        gam = overlaps[0]
        if target_kinks and gam.shape[0] == 1 and gam[0] != 0.0:
            kinks = [t / gam[0] for t in target_kinks]
        if sigma_kinks and loadings is not None and bulk is not None:
            for u, c in zip(loadings[:, 0], bulk, strict=True):
                if u != 0.0 and c < 0.05:
                    kinks += [t / u for t in sigma_kinks]
        nk = n if n is not None else KAPPA_NODES[1]
        k, w = kappa_rule(tuple(sorted(set(kinks))), n=nk if not kinks else 60)
        return np.ascontiguousarray(k[:, None]), np.ascontiguousarray(w)
    return tensor_rule(r, n if n is not None else KAPPA_NODES.get(r, 8))


def build_tables(sigma: Function, target: Function | Callable, k: int, loadings: np.ndarray,
                 bulk: np.ndarray, overlaps: np.ndarray, *, n_kappa: int | None = None,
                 n_omega: int | None = None, degrees: tuple[int | None, ...] | None = None,
                 reach: int | None = None) -> Tables:
    """All tables of a problem (docs/THEORY.md §10.2); ``reach``: the ladder's next rule (r >= 2),
    whose features' line pieces are built with these (``feature_tables``: the same tables; the
    first two rules of a ladder are always both solved, §10.8)."""
    kinks = target.kinks if isinstance(target, Function) else ()
    r = loadings.shape[1]
    kap, w = kappa_nodes(r, n_kappa, kinks, overlaps, sigma.kinks, loadings, bulk)
    # (the target's first: it refuses an oversized rule before any table is computed)
    h, h1, h2 = target_tables(target, k, kap, overlaps, n_omega, degrees, LADDER_GAIN)
    nxt = kappa_nodes(r, reach, kinks, overlaps)[0] if reach is not None and r >= 2 else None
    mu0, mb1, ms2 = feature_tables(sigma, kap, loadings, bulk, LADDER_GAIN, nxt)
    c = np.ascontiguousarray
    return Tables(c(kap), c(w), c(mu0), c(mb1), c(ms2), c(h), c(h1), c(h2))
