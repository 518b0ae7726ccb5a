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

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from asymptotics.coefficients.targets import (  # noqa: F401  (re-exported: the target parser's public names)
    MAX_DEGREE,
    MAX_GRID_POINTS,
    MAX_MONOMIALS,
    MAX_TENSOR_ENTRIES,
    MAX_VARIABLES,
    lambdify,
    parse_target,
    target_callable,
)


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
    """Probabilists' Gauss-Hermite nodes and weights summing to 1
    (asymptotics.coefficients.quadrature)."""
    from asymptotics.coefficients.quadrature import gauss_hermite

    return gauss_hermite(nodes)


def tensor_grid(k: int, nodes: int) -> tuple[np.ndarray, np.ndarray]:
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
    pts, _ = tensor_grid(k, nodes)
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
        return row_space(self.unfolding(int(degree)).T, rtol)

    def relevant_subspace(self, rtol: float = 1e-9) -> np.ndarray:
        """Span of all the degree subspaces: the directions ``g`` depends on (up to
        ``max_degree`` for a numerical expansion)."""
        blocks = [self.subspace(l, rtol) for l in self.degrees if l >= 1]
        if not blocks:
            return np.zeros((0, self.k))
        return row_space(np.vstack(blocks), rtol)

    def as_text(self) -> str:
        """``g = c * He..(z..) + ...`` (exact coefficients where available)."""
        pieces = []
        for t in sorted(self.terms, key=lambda t: (t.degree, [-a for a in t.alpha])):
            coef = t.exact if t.exact is not None else f"{t.coefficient:.6g}"
            pieces.append(f"({coef})*{t.label()}" if t.label() != "1" else f"({coef})")
        return " + ".join(pieces) if pieces else "0"


def row_space(A: np.ndarray, rtol: float) -> np.ndarray:
    """Orthonormal basis (rows) of the row space of ``A`` (singular values > rtol * max)."""
    if A.size == 0:
        return np.zeros((0, A.shape[1] if A.ndim == 2 else 0))
    _, s, vt = np.linalg.svd(A, full_matrices=False)
    if s.size == 0 or s[0] == 0:
        return np.zeros((0, A.shape[1]))
    r = int(np.sum(s > rtol * s[0]))
    return canonical_basis(vt[:r])


def canonical_basis(B: np.ndarray) -> np.ndarray:
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
    coeffs, norm2 = _numeric_coefficients(lambdify(expr, syms), k, L, N, tol)
    terms = tuple(HermiteTerm(a, c, None) for a, c in sorted(coeffs.items()))
    return HermiteExpansion(text.strip(), k, False, terms, L, norm2, tol, N, expr)
