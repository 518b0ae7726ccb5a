"""The one parser of multi-index targets ``g(z1, ..., zk)`` (docs/THEORY.md §8): expressions in
``z1..zk`` with ``He<n>(.)`` (probabilists' Hermite) and the registered functions, parsed through an
AST whitelist into sympy; limits on the number of variables, the degree and the size of a
polynomial expansion; a vectorised callable of the target.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable

import numpy as np

from asymptotics.coefficients.functions import to_sympy

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
    whitelisting parser :func:`asymptotics.coefficients.functions.to_sympy`, never evaluated)."""

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
    return lambdify(expr, syms), len(syms)


def lambdify(expr, syms) -> Callable[[np.ndarray], np.ndarray]:
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

    g.raw = raw  # type: ignore[attr-defined]  (g of z_1..z_k broadcast: spiked.coefficients)
    return g


# ------------------------------------------------------------------------------------------------
# Hermite expansion
