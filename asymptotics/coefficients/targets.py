"""The one parser of multi-index targets ``g(z1, ..., zk)`` (docs/THEORY.md §8): expressions in
``z1..zk`` with ``He<n>(.)`` (probabilists' Hermite) and the registered functions, parsed through an
AST whitelist into sympy; limits on the number of variables, the degree and the size of a
polynomial expansion; a vectorised callable of the target.
"""

from __future__ import annotations

import ast
import copy
import math
import re
from collections.abc import Callable
from functools import lru_cache

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


#: target values per call of the target in :func:`rows_into` (its temporaries stay small: the
#: allocator keeps such blocks, where larger ones go back to the system and fault in again)
EVAL_SIZE = 8192


def rows_into(g: Callable, evaluate: Callable, z: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``evaluate(g, z)`` (z: rows x rest nodes x k; a step's other-axes sums) written to
    ``out[:rows]`` by :data:`EVAL_SIZE` values at a time (elementwise: the same numbers)."""
    e, step = out[:z.shape[0]], max(1, EVAL_SIZE // max(1, z.shape[1]))
    for i in range(0, z.shape[0], step):
        e[i:i + step] = evaluate(g, z[i:i + step])
    return e


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


# ------------------------------------------------------------------------------------------------
# a target on a grid of spike and rest values (the steps' other-axes sums, docs/THEORY.md §12.4)

#: a sub-expression is tabled on its variables' distinct values when that grid is at most this
#: fraction of the block's (the per-block gather costs about one numpy operation); blocks of fewer
#: than GRID_MIN evaluations are evaluated as ever
GRID_GAIN, GRID_MIN = 0.25, 8192


def _distinct(bits: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    """(count, first index, inverse) of the distinct entries of an int64 array (by a sort)."""
    order = np.argsort(bits, kind="stable")
    b = bits[order]
    new = np.empty(len(b), dtype=bool)
    new[:1], new[1:] = True, b[1:] != b[:-1]
    inv = np.empty(len(b), dtype=np.int64)
    inv[order] = np.cumsum(new) - 1
    first = order[new]
    return len(first), first, inv


def _vars(node: ast.AST, args: tuple[str, ...]) -> tuple[int, ...]:
    return tuple(sorted({args.index(m.id) for m in ast.walk(node)
                         if isinstance(m, ast.Name) and m.id in args}))


def _tabled(node: ast.AST, args: tuple[str, ...]) -> tuple[int, ...]:
    """The variables of a sub-expression that calls a function, else ()."""
    if not isinstance(node, ast.expr) or isinstance(node, ast.Name) or not any(
            isinstance(m, ast.Call) for m in ast.walk(node)):
        return ()
    return _vars(node, args)


@lru_cache(maxsize=64)
def _expression(raw: Callable) -> tuple | None:
    """(the returned expression, the arguments, the variable sets of its sub-expressions that
    call a function) of a lambdified target's source, else None."""
    try:
        import inspect

        fn = ast.parse(inspect.getsource(raw)).body[0]
    except Exception:  # noqa: BLE001 (no source: not tabled)
        return None
    if not (isinstance(fn, ast.FunctionDef) and len(fn.body) == 1
            and isinstance(fn.body[0], ast.Return) and fn.body[0].value is not None):
        return None
    expr, args = fn.body[0].value, tuple(a.arg for a in fn.args.args)
    sets = frozenset(S for m in ast.walk(expr) if (S := _tabled(m, args)))
    return expr, args, sets


@lru_cache(maxsize=256)
def _hoisted(raw: Callable, small: frozenset) -> tuple:
    """(the expression's code with each outermost sub-expression that calls a function on a set
    of variables in ``small`` replaced by a name, [(name, its code, its variables)], the
    variables left)."""
    expr, args, _ = _expression(raw)
    terms = []

    class Hoist(ast.NodeTransformer):
        def generic_visit(self, node: ast.AST) -> ast.AST:
            if (S := _tabled(node, args)) in small:
                name = f"_grid_term{len(terms)}"
                terms.append((name, compile(ast.fix_missing_locations(ast.Expression(node)),
                                            "<grid>", "eval"), S))
                return ast.copy_location(ast.Name(name, ast.Load()), node)
            return super().generic_visit(node)

    rest = Hoist().visit(ast.Expression(copy.deepcopy(expr)))
    return (compile(ast.fix_missing_locations(rest), "<grid>", "eval"), terms,
            _vars(rest, args))


def grid_target(g: object, Uz: np.ndarray, RzT: np.ndarray) -> Callable | None:
    """``block(sl)``: the target at ``z[d] = Uz[d, sl, None] + RzT[d, None, :]`` (rows x rest
    nodes), as ``steps.evaluate`` gives it, bit for bit, with every outermost sub-expression that
    calls a function and depends on few distinct values (those of its variables over the spike
    nodes times over the rest nodes: at most ``GRID_GAIN`` of the nodes) evaluated once on those
    values and gathered; a one-variable Function is one such term. None: nothing to table
    (evaluate as ever). Elementwise numpy at the same values in the same order: the same numbers
    (distinct by their bits: -0.0 and 0.0 apart)."""
    from asymptotics.coefficients.functions import Function

    k, n = Uz.shape
    nr = RzT.shape[1]
    if n * nr < GRID_MIN:
        return None
    if isinstance(g, Function):
        raw, args, sets = None, ("z1",), frozenset({(0,)})
    elif callable(raw := getattr(g, "raw", None)) and (parsed := _expression(raw)) is not None:
        _, args, sets = parsed
    else:
        return None
    if len(args) != k or not sets:
        return None
    per: dict = {}

    def distinct(S: tuple[int, ...], side: int) -> tuple[int, np.ndarray, np.ndarray]:
        if (S, side) not in per:
            if len(S) == 1:
                V = (Uz, RzT)[side][S[0]]
                per[S, side] = _distinct(np.ascontiguousarray(V).view(np.int64))
            else:  # the tuples' codes from each variable's distinct values
                code = np.zeros(n if side == 0 else nr, dtype=np.int64)
                for d in S:
                    m, _, inv = distinct((d,), side)
                    code = code * m + inv
                per[S, side] = _distinct(code)
        return per[S, side]

    def count(d: int, side: int) -> int:  # one variable's distinct values (a sort, no more)
        if (d, side) not in per:
            b = np.sort(np.ascontiguousarray((Uz, RzT)[side][d]).view(np.int64))
            per[d, side] = 1 + int(np.count_nonzero(b[1:] != b[:-1]))
        return per[d, side]

    def gains(S: tuple[int, ...]) -> bool:  # (the tuples are at least each variable's values)
        if max(count(d, 0) for d in S) * max(count(d, 1) for d in S) > GRID_GAIN * n * nr:
            return False
        return distinct(S, 0)[0] * distinct(S, 1)[0] <= GRID_GAIN * n * nr

    small = frozenset(S for S in sets if gains(S))
    if not small:
        return None
    if raw is None:
        terms, code, used, scope = [("t", None, (0,))], None, (), {}
    else:
        (code, terms, used), scope = _hoisted(raw, small), raw.__globals__
    tables = []
    with np.errstate(all="ignore"):
        for name, term, S in terms:
            (_, uf, ui), (_, rf, ri) = distinct(S, 0), distinct(S, 1)
            zs = [Uz[d, uf][:, None] + RzT[d, rf][None, :] for d in S]
            T = g(zs[0]) if raw is None else eval(term, scope, {
                args[d]: z for d, z in zip(S, zs, strict=True)})
            T = np.broadcast_to(np.asarray(T, dtype=np.float64), (len(uf), len(rf)))
            tables.append((name, np.take(T, ri, axis=1), ui))  # per distinct spike value
    bufs: dict = {}

    def block(sl: slice) -> np.ndarray:
        rows = len(range(*sl.indices(n)))
        local = {}
        for d in used:  # z as the plain evaluation forms it
            if d not in bufs or bufs[d].shape[0] < rows:
                bufs[d] = np.empty((rows, nr))
            local[args[d]] = np.add(Uz[d, sl, None], RzT[d][None, :], out=bufs[d][:rows])
        for name, T, ui in tables:
            local[name] = np.take(T, ui[sl], axis=0)  # a fresh C-ordered array
        if code is None:
            return local["t"]
        with np.errstate(all="ignore"):
            out = np.asarray(eval(code, scope, local), dtype=np.float64)
        if out.shape == (rows, nr) and out.flags.c_contiguous and out.flags.owndata:
            return out  # a fresh array (as the copy the plain evaluation makes)
        return np.broadcast_to(out, (rows, nr)).copy()

    return block
