"""Hermite analysis of a multi-index target ``g(z1, ..., zk)``: coefficient tensors, leap index,
subspaces by degree and the staircase prediction of what a few giant steps learn.

Conventions (Dandi et al. 2023, arXiv:2305.18270, Definitions 1-3; docs/THEORY.md §8):

* probabilists' Hermite polynomials ``He_n`` (``He_0 = 1, He_1 = z, He_2 = z^2 - 1``), orthogonal
  under ``z ~ N(0, 1)`` with ``E He_m He_n = n! delta_mn``;
* ``g(z) = sum_alpha c_alpha prod_j He_{alpha_j}(z_j)`` over multi-indices ``alpha``, so
  ``c_alpha = E[g prod_j He_{alpha_j}(z_j)] / alpha!`` (``alpha! = prod_j alpha_j!``);
* degree-``l`` coefficient tensor ``C_l = E[grad^l g(z)] = E[g(z) He_l(z)]`` (Hermite tensor of
  Grad 1949), so that ``g = sum_l <C_l, He_l(z)> / l!``; entrywise
  ``C_l[i_1..i_l] = alpha! c_alpha`` with ``alpha`` the multiplicities of ``(i_1..i_l)``.
  Example: ``z1 z2 = He1(z1) He1(z2)`` gives ``C_2[0,1] = C_2[1,0] = 1``; ``z1^3 = He3 + 3 He1``
  gives ``C_3[0,0,0] = 6`` and ``C_1[0] = 3``;
* leap index (Dandi et al. 2023, Definition 3): the lowest ``l >= 1`` with
  ``C_l != 0`` (``He3(z1)`` has leap 3, ``z1^3`` has leap 1);
* subspace at degree ``l``: the span of the higher-order singular vectors of ``C_l`` (Dandi et al.
  2023, Definition 2; for a symmetric tensor the left singular vectors of its ``k x k^(l-1)``
  unfolding).

Predictions (Dandi et al. 2023, Theorems 1-2 and the staircase theorem):

* one step with ``n ~ d^l``: directions in ``span(V_1, ..., V_l)`` can be reached; the leap-index
  subspace ``V_leap`` is what a single step with ``n ~ d^leap`` learns; fewer samples
  (``n = O(d^(leap - delta))``) leave every overlap at ``O(d^(-1/2))``;
* ``T`` steps with ``n ~ d`` (staircase): ``U_0 = {0}``; a direction ``v`` orthogonal to the learned
  subspace ``U_t`` becomes learnable at step ``t + 1`` iff it is linearly connected to ``U_t``,
  i.e. the degree-1 Hermite coefficient in the new coordinates, conditional on the learned ones,
  ``c(u) = E[g(z) P_perp z | P_U z = u]``, does not vanish. ``U_(t+1) = U_t + range(M)`` with
  ``M = E_u[c(u) c(u)^T]``. Directions never added are never learned with ``n ~ d``
  (``z1 z2 z3 z4``: nothing; ``z1 + z1 z2 + z1 z2 z3``: ``theta1``, then ``theta2``, then
  ``theta3``).

Polynomials are expanded exactly (sympy; ``z^n = sum_j n! / (2^j j! (n-2j)!) He_(n-2j)``); other
expressions numerically by tensor Gauss-Hermite quadrature up to ``max_degree``. The staircase
integrals use tensor Gauss-Hermite quadrature, exact up to rounding for polynomials (``deg + 2``
nodes per axis integrate every polynomial needed exactly).
"""

from __future__ import annotations

import argparse
import ast
import itertools
import math
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from .functions import to_sympy

MAX_VARIABLES = 8
MAX_TENSOR_ENTRIES = 2_000_000
MAX_GRID_POINTS = 2_000_000
MAX_DEGREE = 40  # polynomial targets: total degree
MAX_MONOMIALS = 200_000  # polynomial targets: bound on the size of the expansion
_VAR = re.compile(r"^z([1-9][0-9]?)$")
_HE = re.compile(r"^(?:He|he)([0-9]{1,2})$")


# ------------------------------------------------------------------------------------------------
# parsing


def _he_text(n: int, arg: str) -> str:
    """``He_n(u) = sum_j (-1)^j n! / (2^j j! (n-2j)!) u^(n-2j)`` as text in ``arg``."""
    parts = []
    for j in range(n // 2 + 1):
        coef = (-1) ** j * math.factorial(n) // (
            2**j * math.factorial(j) * math.factorial(n - 2 * j))
        power = n - 2 * j
        mono = "1" if power == 0 else f"({arg})**{power}"
        parts.append(f"({coef})*{mono}")
    return "(" + " + ".join(parts) + ")"


class _HermiteCalls(ast.NodeTransformer):
    """Rewrite ``He<n>(u)`` calls into their polynomial (the result is re-parsed by the
    whitelisting parser :func:`asymptotics.functions.to_sympy`, never evaluated)."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name):
            m = _HE.match(node.func.id)
            if m:
                n = int(m.group(1))
                if len(node.args) != 1 or node.keywords:
                    raise ValueError(f"{node.func.id}() takes exactly one argument")
                if n > 30:
                    raise ValueError(f"Hermite degree must be <= 30, got {node.func.id}")
                return ast.parse(_he_text(n, ast.unparse(node.args[0])), mode="eval").body
        return node


def parse_target(text: str) -> tuple[object, tuple[object, ...]]:
    """``(expr, (z1, ..., zk))`` from text in ``z1..zk`` (``z`` alone means ``z1``); ``He<n>(u)``
    (probabilists' Hermite) is allowed besides the functions of ``functions.to_sympy``."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("target must be a non-empty expression in z1..zk, e.g. 'z1*z2'")
    if len(text) > 500:
        raise ValueError("target longer than 500 characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"cannot parse target {text!r}: {exc.msg}") from None
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    called = {n.func.id for n in ast.walk(tree)
              if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    indices = sorted(int(_VAR.match(v).group(1)) for v in names - called if _VAR.match(v))
    single = "z" in names - called
    if single and indices:
        raise ValueError("use either z (single index) or z1..zk, not both")
    k = 1 if single else (max(indices) if indices else 1)
    if k > MAX_VARIABLES:
        raise ValueError(f"at most {MAX_VARIABLES} variables z1..z{MAX_VARIABLES}, got z{k}")
    tree = _HermiteCalls().visit(tree)
    rewritten = ast.unparse(tree)
    variables = ("z",) if single else tuple(f"z{j}" for j in range(1, k + 1))
    expr, symbols = to_sympy(rewritten, variables, max_length=100_000)
    import sympy as sp

    if single:
        z1 = sp.Symbol("z1", real=True)
        expr = expr.subs(symbols["z"], z1)
        syms = (z1,)
    else:
        syms = tuple(symbols[v] for v in variables)
    if expr.has(sp.zoo, sp.oo, -sp.oo, sp.nan):
        raise ValueError(f"target {text!r} is not finite (it simplifies to {expr})")
    if expr.is_polynomial(*syms):
        deg = _degree_bound(expr, set(syms))
        if deg > MAX_DEGREE:
            raise ValueError(f"target {text!r} has degree up to {deg}; at most {MAX_DEGREE} "
                             "is supported")
        if math.comb(deg + len(syms), len(syms)) > MAX_MONOMIALS:
            raise ValueError(f"target {text!r} may expand into more than {MAX_MONOMIALS} "
                             f"monomials (degree {deg} in {len(syms)} variables); use fewer "
                             "variables or a lower degree")
    return expr, syms


def _degree_bound(expr, syms: set) -> int:
    """An upper bound on the total degree of a polynomial expression, without expanding it."""
    import sympy as sp

    if expr in syms:
        return 1
    if expr.is_number or not expr.free_symbols & syms:
        return 0
    if isinstance(expr, sp.Add):
        return max(_degree_bound(a, syms) for a in expr.args)
    if isinstance(expr, sp.Mul):
        return sum(_degree_bound(a, syms) for a in expr.args)
    if isinstance(expr, sp.Pow) and expr.exp.is_Integer and int(expr.exp) >= 0:
        return int(expr.exp) * _degree_bound(expr.base, syms)
    return MAX_DEGREE + 1  # not a plain polynomial form


def target_callable(text: str) -> tuple[Callable[[np.ndarray], np.ndarray], int]:
    """``(g, k)``: a vectorised ``g(Z)`` for ``Z`` of shape ``(..., k)`` from a target text."""
    expr, syms = parse_target(text)
    return _lambdify(expr, syms), len(syms)


def _lambdify(expr, syms) -> Callable[[np.ndarray], np.ndarray]:
    import sympy as sp
    from scipy import special

    raw = sp.lambdify(syms, expr, modules=[{"erf": special.erf}, "numpy"])
    k = len(syms)

    def g(Z: np.ndarray) -> np.ndarray:
        Z = np.asarray(Z, dtype=np.float64)
        if Z.shape[-1] != k:
            raise ValueError(f"g expects inputs with last axis k={k}, got shape {Z.shape}")
        with np.errstate(all="ignore"):
            out = raw(*[Z[..., j] for j in range(k)])
        return np.broadcast_to(np.asarray(out, dtype=np.float64), Z.shape[:-1]).copy()

    return g


# ------------------------------------------------------------------------------------------------
# Hermite expansion


@lru_cache(maxsize=64)
def monomial_to_hermite(n: int) -> tuple[tuple[int, int], ...]:
    """``z^n = sum_j n! / (2^j j! (n-2j)!) He_(n-2j)(z)``: pairs ``(degree, coefficient)``."""
    return tuple((n - 2 * j, math.factorial(n) // (2**j * math.factorial(j)
                                                    * math.factorial(n - 2 * j)))
                 for j in range(n // 2 + 1))


def _exact_coefficients(expr, syms) -> dict[tuple[int, ...], object]:
    """Exact ``c_alpha`` of a polynomial (sympy numbers), zero terms dropped."""
    import sympy as sp

    floats = {f: sp.Rational(str(f)) for f in expr.atoms(sp.Float)}
    poly = sp.Poly(sp.expand(expr.xreplace(floats)), *syms)
    out: dict[tuple[int, ...], object] = {}
    for powers, coef in poly.terms():
        expansions = [monomial_to_hermite(int(n)) for n in powers]
        for combo in itertools.product(*expansions):
            alpha = tuple(deg for deg, _ in combo)
            weight = math.prod(c for _, c in combo)
            out[alpha] = out.get(alpha, sp.Integer(0)) + weight * coef
    clean = {}
    for alpha, c in out.items():
        c = c if c.is_Rational else sp.simplify(c)
        if not (c == 0 or c.is_zero):
            clean[alpha] = c
    return clean


def _gauss_hermite(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Probabilists' Gauss-Hermite nodes and weights summing to 1 (asymptotics.quadrature)."""
    from .quadrature import gauss_hermite

    return gauss_hermite(nodes)


def _grid(k: int, nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Tensor Gauss-Hermite grid: points (nodes^k, k) and weights summing to 1."""
    x, w = _gauss_hermite(nodes)
    if k == 0:
        return np.zeros((1, 0)), np.ones(1)
    pts = np.stack(np.meshgrid(*([x] * k), indexing="ij"), axis=-1).reshape(-1, k)
    wts = np.prod(np.stack(np.meshgrid(*([w] * k), indexing="ij"), axis=-1).reshape(-1, k), axis=1)
    return pts, wts


def default_nodes(k: int, degree: int | None) -> int:
    """Nodes per axis: ``degree + 2`` for a polynomial (exact), else as many as fit in
    :data:`MAX_GRID_POINTS` (at most 400; a kink converges only like ``nodes^-1.5``)."""
    if degree is not None:
        return max(2, degree + 2)
    return int(max(8, min(400, math.floor(MAX_GRID_POINTS ** (1.0 / max(k, 1)) + 1e-9))))


def _numeric_coefficients(g: Callable, k: int, max_degree: int, nodes: int,
                          tol: float) -> tuple[dict[tuple[int, ...], float], float]:
    """``c_alpha`` for ``|alpha| <= max_degree`` by tensor Gauss-Hermite quadrature; returns the
    coefficients above ``tol * sqrt(E g^2)`` and ``E g^2``."""
    if nodes**k > MAX_GRID_POINTS:
        raise ValueError(f"quadrature grid nodes^k = {nodes}^{k} exceeds {MAX_GRID_POINTS}; "
                         "use fewer nodes")
    x, w = _gauss_hermite(nodes)
    pts, _ = _grid(k, nodes)
    G = g(pts).reshape((nodes,) * k)
    if not np.all(np.isfinite(G)):
        raise ValueError("target is not finite on the Gaussian quadrature grid")
    Gw = G.copy()
    for axis in range(k):
        shape = [1] * k
        shape[axis] = nodes
        Gw = Gw * w.reshape(shape)
    norm2 = float(np.sum(Gw * G))
    H = np.stack([np.polynomial.hermite_e.hermeval(x, [0] * m + [1]) for m in
                  range(max_degree + 1)])  # (L+1, nodes)
    T = Gw
    for _ in range(k):  # contract the leading axis each time; it cycles to the end
        T = np.tensordot(T, H, axes=([0], [1]))
    out: dict[tuple[int, ...], float] = {}
    scale = math.sqrt(max(norm2, 0.0))
    for alpha in itertools.product(range(max_degree + 1), repeat=k):
        if sum(alpha) > max_degree:
            continue
        fact = math.prod(math.factorial(a) for a in alpha)
        c = float(T[alpha]) / fact
        if abs(c) * math.sqrt(fact) > tol * max(scale, 1e-300):
            out[alpha] = c
    return out, norm2


@dataclass(frozen=True)
class HermiteTerm:
    """One term ``coefficient * prod_j He_{alpha_j}(z_j)``; ``exact`` is sympy's text or None."""

    alpha: tuple[int, ...]
    coefficient: float
    exact: str | None = None

    @property
    def degree(self) -> int:
        return sum(self.alpha)

    def label(self) -> str:
        """``He1(z1)*He1(z2)`` (``1`` for the constant)."""
        parts = [f"He{a}(z{j + 1})" for j, a in enumerate(self.alpha) if a > 0]
        return "*".join(parts) if parts else "1"


@dataclass(frozen=True)
class HermiteExpansion:
    """Hermite expansion of a target (module docstring conventions); ``exact`` for polynomials."""

    expression: str
    k: int
    exact: bool
    terms: tuple[HermiteTerm, ...]
    max_degree: int
    norm2: float
    tol: float
    nodes: int | None = None
    expr: object = field(default=None, repr=False, compare=False)

    @property
    def variables(self) -> tuple[str, ...]:
        return tuple(f"z{j}" for j in range(1, self.k + 1))

    @property
    def degrees(self) -> tuple[int, ...]:
        """Degrees with a non-zero coefficient tensor, ascending."""
        return tuple(sorted({t.degree for t in self.terms}))

    @property
    def leap_index(self) -> int | None:
        """Lowest ``l >= 1`` with ``C_l != 0`` (Dandi et al. 2023, Def. 3); None for a constant."""
        return next((l for l in self.degrees if l >= 1), None)

    def coefficient_tensor(self, degree: int) -> np.ndarray:
        """``C_l`` (shape ``(k,) * l``): ``C_l[i_1..i_l] = alpha! c_alpha``, ``alpha`` the
        multiplicities of the index tuple."""
        if degree < 0 or int(degree) != degree:
            raise ValueError(f"degree must be an integer >= 0, got {degree}")
        degree = int(degree)
        if self.k**degree > MAX_TENSOR_ENTRIES:
            raise ValueError(f"C_{degree} has k^l = {self.k}^{degree} entries, more than "
                             f"{MAX_TENSOR_ENTRIES}")
        from sympy.utilities.iterables import multiset_permutations

        C = np.zeros((self.k,) * degree)
        for t in self.terms:
            if t.degree != degree:
                continue
            fact = math.prod(math.factorial(a) for a in t.alpha)
            base = [j for j, a in enumerate(t.alpha) for _ in range(a)]
            for idx in multiset_permutations(base):  # the distinct index tuples only
                C[tuple(idx)] = fact * t.coefficient
        return C

    def unfolding(self, degree: int) -> np.ndarray:
        """A ``k x m`` matrix ``A`` with ``A A^T = C C^T`` for the ``k x k^(l-1)`` unfolding
        ``C`` of ``C_l``, built without the tensor: identical columns of the unfolding (index
        tuples with the same multiplicities ``b``) are merged into one, scaled by the square
        root of their number ``(l-1)!/b!``. Same row space and singular values."""
        if degree < 1:
            return np.zeros((self.k, 0))
        cols: dict[tuple[int, ...], np.ndarray] = {}
        for t in self.terms:
            if t.degree != degree:
                continue
            value = math.prod(math.factorial(a) for a in t.alpha) * t.coefficient
            for i, a in enumerate(t.alpha):
                if a == 0:
                    continue
                b = t.alpha[:i] + (a - 1,) + t.alpha[i + 1:]
                count = math.factorial(degree - 1) / math.prod(math.factorial(x) for x in b)
                col = cols.setdefault(b, np.zeros(self.k))
                col[i] = math.sqrt(count) * value
        if not cols:
            return np.zeros((self.k, 0))
        return np.stack(list(cols.values()), axis=1)

    def tensor_norm(self, degree: int) -> float:
        """Frobenius norm of ``C_l``: ``|C_l|_F^2 = l! sum_{|alpha| = l} alpha! c_alpha^2``."""
        total = sum(math.factorial(degree) * math.prod(math.factorial(a) for a in t.alpha)
                    * t.coefficient**2 for t in self.terms if t.degree == degree)
        return math.sqrt(total)

    def subspace(self, degree: int, rtol: float = 1e-9) -> np.ndarray:
        """Orthonormal rows spanning the HOSVD subspace of ``C_l`` (``r x k``, ``r = 0`` if
        ``C_l = 0``)."""
        if degree < 0 or int(degree) != degree:
            raise ValueError(f"degree must be an integer >= 0, got {degree}")
        if degree == 0:
            return np.zeros((0, self.k))
        return _row_space(self.unfolding(int(degree)).T, rtol)

    def relevant_subspace(self, rtol: float = 1e-9) -> np.ndarray:
        """Span of all the degree subspaces: the directions ``g`` depends on (up to
        ``max_degree`` for a numerical expansion)."""
        blocks = [self.subspace(l, rtol) for l in self.degrees if l >= 1]
        if not blocks:
            return np.zeros((0, self.k))
        return _row_space(np.vstack(blocks), rtol)

    def as_text(self) -> str:
        """``g = c * He..(z..) + ...`` (exact coefficients where available)."""
        pieces = []
        for t in sorted(self.terms, key=lambda t: (t.degree, [-a for a in t.alpha])):
            coef = t.exact if t.exact is not None else f"{t.coefficient:.6g}"
            pieces.append(f"({coef})*{t.label()}" if t.label() != "1" else f"({coef})")
        return " + ".join(pieces) if pieces else "0"


def _row_space(A: np.ndarray, rtol: float) -> np.ndarray:
    """Orthonormal basis (rows) of the row space of ``A`` (singular values > rtol * max)."""
    if A.size == 0:
        return np.zeros((0, A.shape[1] if A.ndim == 2 else 0))
    _, s, vt = np.linalg.svd(A, full_matrices=False)
    if s.size == 0 or s[0] == 0:
        return np.zeros((0, A.shape[1]))
    r = int(np.sum(s > rtol * s[0]))
    return _canonical(vt[:r])


def _canonical(B: np.ndarray) -> np.ndarray:
    """A readable basis of the same span: axis vectors when the span is coordinate-aligned."""
    if B.shape[0] == 0:
        return B
    P = B.T @ B
    diag = np.diag(P)
    if np.allclose(P, np.diag(diag), atol=1e-9) and np.allclose(diag, np.round(diag), atol=1e-9):
        axes = np.flatnonzero(np.round(diag) == 1)
        return np.eye(B.shape[1])[axes]
    B = B.copy()
    for i in range(B.shape[0]):  # sign: first sizeable entry positive
        j = int(np.argmax(np.abs(B[i]) > 1e-9))
        if B[i, j] < 0:
            B[i] = -B[i]
    return B


def hermite_expansion(text: str, *, max_degree: int | None = None, nodes: int | None = None,
                      tol: float = 1e-9) -> HermiteExpansion:
    """Hermite expansion of a target text: exact and complete for polynomials (``max_degree``
    and ``nodes`` ignored); otherwise by quadrature up to ``max_degree`` (default 6) with
    ``nodes`` per axis."""
    if max_degree is not None and (int(max_degree) != max_degree or max_degree < 0):
        raise ValueError(f"max_degree must be an integer >= 0, got {max_degree}")
    if not (math.isfinite(tol) and 0 < tol < 1):
        raise ValueError(f"tol must be in (0, 1), got {tol}")
    expr, syms = parse_target(text)
    k = len(syms)
    if expr.is_polynomial(*syms):
        coeffs = _exact_coefficients(expr, syms)
        terms = tuple(HermiteTerm(a, float(c), str(c)) for a, c in sorted(coeffs.items()))
        degree = max((sum(a) for a in coeffs), default=0)
        norm2 = float(sum(c * c * math.prod(math.factorial(a) for a in alpha)
                          for alpha, c in ((t.alpha, t.coefficient) for t in terms)))
        return HermiteExpansion(text.strip(), k, True, terms, degree, norm2, tol, None, expr)
    L = 6 if max_degree is None else int(max_degree)
    N = nodes or default_nodes(k, None)
    if N < L + 1:
        raise ValueError(f"nodes must be >= max_degree + 1 = {L + 1}, got {N}")
    coeffs, norm2 = _numeric_coefficients(_lambdify(expr, syms), k, L, N, tol)
    terms = tuple(HermiteTerm(a, c, None) for a, c in sorted(coeffs.items()))
    return HermiteExpansion(text.strip(), k, False, terms, L, norm2, tol, N, expr)


# ------------------------------------------------------------------------------------------------
# staircase


@dataclass(frozen=True)
class StaircasePrediction:
    """What giant steps learn (module docstring). Bases are orthonormal rows in ``R^k``.

    ``steps[t]``: directions added at step ``t + 1`` with ``n ~ d`` (the staircase stops at the
    first empty step); ``one_step[l]``: directions reachable by one step with ``n ~ d^l``
    (``l = 1..max degree``); ``never``: relevant directions the staircase never reaches."""

    expression: str
    k: int
    leap_index: int | None
    steps: tuple[np.ndarray, ...]
    learned: np.ndarray
    relevant: np.ndarray
    never: np.ndarray
    one_step: tuple[tuple[int, np.ndarray], ...]


def _complement(Q: np.ndarray, k: int) -> np.ndarray:
    """Orthonormal rows spanning the orthogonal complement of the rows of ``Q``."""
    if Q.shape[0] == 0:
        return np.eye(k)
    _, s, vt = np.linalg.svd(Q, full_matrices=True)
    return vt[Q.shape[0]:]


def linear_connection_matrix(g: Callable, Q: np.ndarray, k: int,
                             nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """``M = E_u[c(u) c(u)^T]``, ``c(u) = E_v[g(Q^T u + P^T v) v]`` (``P`` the complement of the
    learned rows ``Q``), in the ``P`` coordinates, by tensor Gauss-Hermite quadrature;
    returns ``(M, P)``."""
    P = _complement(Q, k)
    r, s = Q.shape[0], P.shape[0]
    if nodes**k > MAX_GRID_POINTS:
        raise ValueError(f"quadrature grid nodes^k = {nodes}^{k} exceeds {MAX_GRID_POINTS}")
    u, wu = _grid(r, nodes)
    v, wv = _grid(s, nodes)
    Z = (u @ Q)[:, None, :] + (v @ P)[None, :, :]  # (Nu, Nv, k)
    G = g(Z)
    if not np.all(np.isfinite(G)):
        raise ValueError("target is not finite on the Gaussian quadrature grid")
    c = np.einsum("uv,v,vj->uj", G, wv, v)  # (Nu, s)
    return np.einsum("u,ui,uj->ij", wu, c, c), P


def staircase(expansion: HermiteExpansion, *, max_steps: int | None = None,
              rtol: float = 1e-9, nodes: int | None = None) -> StaircasePrediction:
    """Staircase (n ~ d, step by step) and one-step (n ~ d^l) predictions for ``expansion``."""
    k = expansion.k
    import sympy as sp

    syms = sp_symbols(k)
    g = _lambdify(expansion.expr, syms)
    degree = sp.Poly(expansion.expr, *syms).total_degree() if expansion.exact else None
    N = nodes or default_nodes(k, degree)
    var = expansion.norm2 - (next((t.coefficient for t in expansion.terms
                                   if t.degree == 0), 0.0)) ** 2
    scale = max(var, 1e-300)
    learned = np.zeros((0, k))
    steps: list[np.ndarray] = []
    limit = k if max_steps is None else int(max_steps)
    for _ in range(limit):
        if learned.shape[0] == k:
            break
        M, P = linear_connection_matrix(g, learned, k, N)
        vals, vecs = np.linalg.eigh((M + M.T) / 2)
        new = vecs[:, vals > rtol * scale].T @ P
        if new.shape[0] == 0:
            break
        new = _canonical(_row_space(new, 1e-9))
        steps.append(new)
        learned = _canonical(_row_space(np.vstack([learned, new]), 1e-9))
    relevant = expansion.relevant_subspace(rtol)
    never = relevant - (relevant @ learned.T) @ learned if learned.shape[0] else relevant
    if never.size and np.linalg.norm(never, 2) > 1e-6:
        never = _row_space(never, 1e-6)
    else:
        never = np.zeros((0, k))
    one: list[tuple[int, np.ndarray]] = []
    reach = np.zeros((0, k))
    for l in range(1, expansion.max_degree + 1):
        V = expansion.subspace(l, rtol)
        if V.shape[0]:
            reach = _row_space(np.vstack([reach, V]), 1e-9)
        one.append((l, _canonical(reach)))
    return StaircasePrediction(expansion.expression, k, expansion.leap_index, tuple(steps),
                               learned, relevant, _canonical(never), tuple(one))


def sp_symbols(k: int) -> tuple[object, ...]:
    """The real sympy symbols ``z1..zk`` used by :func:`parse_target`."""
    import sympy as sp

    return tuple(sp.Symbol(f"z{j}", real=True) for j in range(1, k + 1))


def describe(B: np.ndarray) -> str:
    """``theta1, theta2`` for axis-aligned rows, else ``0.707*theta1 + 0.707*theta2; ...``."""
    if B.shape[0] == 0:
        return "none"
    rows = []
    for row in B:
        nz = np.flatnonzero(np.abs(row) > 1e-9)
        if len(nz) == 1 and abs(abs(row[nz[0]]) - 1) < 1e-9:
            rows.append(f"theta{nz[0] + 1}")
        else:
            rows.append(" + ".join(f"{row[j]:.4g}*theta{j + 1}" for j in nz).replace("+ -", "- "))
    return ", ".join(rows) if all(r.startswith("theta") for r in rows) else "; ".join(rows)


# ------------------------------------------------------------------------------------------------
# command line


def report(text: str, *, max_degree: int | None = None, nodes: int | None = None,
           tol: float = 1e-9) -> str:
    """The text printed by ``python -m asymptotics hermite``."""
    ex = hermite_expansion(text, max_degree=max_degree, nodes=nodes, tol=tol)
    sc = staircase(ex)
    how = "polynomial, exact (sympy)" if ex.exact else (
        f"not a polynomial: Gauss-Hermite quadrature, {ex.nodes} nodes per axis, degrees <= "
        f"{ex.max_degree}, coefficients below tol*|g| = {tol:g}*|g| dropped")
    lines = [f"target: {ex.expression}",
             f"variables: {', '.join(ex.variables)} (k={ex.k}, z_j = <theta_j, x>); {how}",
             "convention: g = sum_alpha c_alpha prod_j He_alpha_j(z_j) = sum_l <C_l, He_l(z)>/l!, "
             "He_n probabilists' Hermite, C_l = E[grad^l g]",
             f"expansion: g = {ex.as_text()}"]
    for l in ex.degrees:
        labels = [t.label() + " * " + (t.exact if t.exact is not None else f"{t.coefficient:.6g}")
                  for t in ex.terms if t.degree == l]
        sub = describe(ex.subspace(l)) if l else "-"
        rank = ex.subspace(l).shape[0]
        lines.append(f"  degree {l}: |C_{l}|_F={ex.tensor_norm(l):.6g}  rank={rank}"
                     f"  subspace: {sub}  terms: {'; '.join(labels)}")
    lines.append(f"leap_index={ex.leap_index if ex.leap_index is not None else 'none'}")
    lines.append("one step with n ~ d^l (learning rate eta = eta_tilde p d^((l-1)/2)):")
    for l, reach in sc.one_step:
        note = ""
        if ex.leap_index is None or l < ex.leap_index:
            note = "  (nothing: overlaps stay O(d^-1/2))"
        elif l == ex.leap_index:
            note = "  (the leap-index subspace)"
        lines.append(f"  l={l}: reachable {describe(reach)}{note}")
    lines.append("staircase with n ~ d (fresh batch per step):")
    for t, new in enumerate(sc.steps, start=1):
        lines.append(f"  step {t}: learns {describe(new)}")
    if sc.learned.shape[0] < ex.k or not sc.steps:
        lines.append(f"  step {len(sc.steps) + 1}: nothing new (the staircase stops)")
    else:
        lines.append(f"  all k={ex.k} directions learned after {len(sc.steps)} step(s)")
    lines.append(f"staircase_steps={len(sc.steps)}")
    lines.append(f"learned_with_n~d: {describe(sc.learned)}")
    lines.append(f"never_learned_with_n~d: {describe(sc.never)}")
    return "\n".join(lines)


def add_subparser(subparsers) -> argparse.ArgumentParser:
    """Register ``hermite`` on an argparse subparsers object."""
    p = subparsers.add_parser(
        "hermite", help="Hermite expansion, leap index and staircase of a target g(z1..zk)",
        description="Hermite expansion (probabilists' He_n), coefficient tensors, leap index "
                    "(Dandi et al. 2023, Def. 3) and staircase prediction of a multi-index target.")
    p.add_argument("target", help="expression in z1..zk, e.g. 'z1 + z1*z2 + z1*z2*z3', "
                                  "'He3(z1)', 'tanh(z1)*z2'")
    p.add_argument("--max-degree", type=int, default=None,
                   help="highest degree for non-polynomial targets (default 6)")
    p.add_argument("--nodes", type=int, default=None,
                   help="Gauss-Hermite nodes per axis for non-polynomial targets")
    p.add_argument("--tol", type=float, default=1e-9,
                   help="relative threshold below which a coefficient counts as zero")
    p.set_defaults(func=run_cli)
    return p


def run_cli(args: argparse.Namespace) -> int:
    """Print :func:`report`; bad input: one line on stderr, exit status 2."""
    try:
        if args.max_degree is not None and args.max_degree < 1:
            raise ValueError(f"--max-degree must be >= 1, got {args.max_degree}")
        if args.nodes is not None and args.nodes < 2:
            raise ValueError(f"--nodes must be >= 2, got {args.nodes}")
        text = report(args.target, max_degree=args.max_degree, nodes=args.nodes, tol=args.tol)
    except (ValueError, TypeError) as exc:
        msg = " ".join(str(exc).split())
        print(f"error: {msg}", file=sys.stderr)
        return 2
    print(text)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Stand-alone entry: ``python -m asymptotics.hermite EXPR``."""
    from ._cli import Parser

    parser = Parser(prog="python -m asymptotics.hermite")
    sub = parser.add_subparsers(dest="command", required=True)
    add_subparser(sub)
    args = parser.parse_args(["hermite", *(argv if argv is not None else sys.argv[1:])])
    return run_cli(args)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
