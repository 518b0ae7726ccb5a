"""Activations and targets: a registry by name, safe user expressions, user callables.

A :class:`Function` carries a vectorised numpy evaluation ``f``, its derivative ``df`` (what
the giant step of THEORY.md §1 needs: ``sigma'``), and the points where it is not smooth
(``kinks``), which the quadrature splits at (THEORY.md §2, §4).
"""

from __future__ import annotations

import ast
import functools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from scipy import special

from asymptotics.coefficients.callables import (
    PROBE,
    RESOLVED,
    CallableIdentity,
    check_finite,
    find_kinks,
    finite_difference,
    real_values,
    resolve_quadrature,
)

Array = np.ndarray


@dataclass(frozen=True)
class Function:
    """A scalar function of one real variable, vectorised over numpy arrays.

    ``df`` is the derivative used by the gradient step (zero almost everywhere for ``sign``,
    as automatic differentiation would give). ``kinks`` lists the points where ``f`` or
    ``df`` is not smooth; quadrature splits its integrals there.
    """

    name: str
    f: Callable[[Array], Array] = field(repr=False, compare=False)
    df: Callable[[Array], Array] = field(repr=False, compare=False)
    kinks: tuple[float, ...] = ()
    expression: str | None = None
    fdf: Callable[[Array], tuple[Array, Array]] | None = field(default=None, repr=False,
                                                               compare=False)
    # what identifies the computation beyond the name: None for registered functions and
    # expressions (the name/expression determines them); for a user callable the callable
    # itself (by identity, kept alive here) and a fingerprint of its values, so that two
    # callables of one name never share a cache entry (every cache is keyed on Function)
    identity: CallableIdentity | None = field(default=None, repr=False)

    def __call__(self, z: Array) -> Array:
        return np.asarray(self.f(np.asarray(z, dtype=np.float64)), dtype=np.float64)

    def derivative(self, z: Array) -> Array:
        return np.asarray(self.df(np.asarray(z, dtype=np.float64)), dtype=np.float64)

    def value_and_derivative(self, z: Array) -> tuple[Array, Array]:
        """``(f(z), f'(z))``, sharing work where the function allows (tanh: f' = 1 - f^2)."""
        if self.fdf is not None:
            return self.fdf(np.asarray(z, dtype=np.float64))
        return self(z), self.derivative(z)

    @classmethod
    def from_callable(
        cls,
        f: Callable[[Array], Array],
        *,
        name: str | None = None,
        df: Callable[[Array], Array] | None = None,
        kinks: Sequence[float] | None = None,
    ) -> Function:
        """Wrap a user callable (vectorised over numpy arrays). Without ``df`` the derivative is
        a 5-point finite difference, one-sided next to a kink. Without ``kinks`` the points
        where f or f' jumps are located numerically on [-12, 12] (:func:`find_kinks`); either
        way the Gaussian moments are checked against a fine reference rule
        (:func:`resolve_quadrature`: refined, or a warning naming the fix)."""
        if not callable(f):
            raise TypeError(f"function must be callable, got {type(f).__name__}")

        label = name or getattr(f, "__name__", "user")

        def fv(z: Array) -> Array:
            try:
                raw = f(z)
            except TypeError as exc:
                if np.ndim(z) == 0:
                    raise
                raise ValueError(
                    f"function {label!r} must accept numpy arrays (it raised "
                    f"{type(exc).__name__}: {exc}); use a numpy function (np.tanh, not "
                    "math.tanh) or wrap it with numpy.vectorize") from None
            except Exception as exc:  # the user's code failed: say so, in one line
                raise ValueError(f"function {label!r} raised {type(exc).__name__}: {exc}"
                                 ) from None
            out = real_values(raw, label)
            return np.broadcast_to(out, np.shape(z)).astype(np.float64)

        given = None if kinks is None else tuple(sorted(float(k) + 0.0 for k in kinks))
        with np.errstate(all="ignore"):
            key = CallableIdentity((f, df, given), fv(PROBE).tobytes())
        known = RESOLVED.get(key)  # a callable seen before: its kinks and rule, not redone
        if known is not None:
            kinks, rule = known
        elif given is None:
            kinks = tuple(sorted(float(k) + 0.0 for k in find_kinks(fv)))
        else:
            kinks = given
        if df is None:
            dfv = finite_difference(fv, kinks)
        else:

            def dfv(z: Array) -> Array:
                out = real_values(df(z), f"derivative of {label}")
                return np.broadcast_to(out, np.shape(z)).astype(np.float64)

        fn = cls(label, fv, dfv, kinks)
        if known is None:
            check_finite(fn)
            rule = resolve_quadrature(fn).kinks
            if len(RESOLVED) >= 256:
                RESOLVED.pop(next(iter(RESOLVED)))
            RESOLVED[key] = (kinks, rule)
        fn = replace(fn, kinks=rule)
        return replace(fn, identity=CallableIdentity.of(f, df, fn))

MAX_EXPONENT = 64


def _sigmoid(z: Array) -> Array:
    return special.expit(z)


_REGISTRY: dict[str, Function] = {}


def _register(name: str, f, df, kinks=(), expression=None, fdf=None) -> None:
    _REGISTRY[name] = Function(name, f, df, tuple(kinks), expression, fdf)


def _tanh_fdf(z: Array) -> tuple[Array, Array]:
    t = np.tanh(z)
    dt = t * t
    np.subtract(1.0, dt, out=dt)
    return t, dt


_register("tanh", np.tanh, lambda z: 1.0 - np.tanh(z) ** 2, expression="tanh(z)",
          fdf=_tanh_fdf)
_register("relu", lambda z: np.maximum(z, 0.0), lambda z: (z > 0).astype(np.float64), (0.0,),
          expression="relu(z)")
_register("erf", special.erf, lambda z: 2.0 / math.sqrt(math.pi) * np.exp(-z * z),
          expression="erf(z)")
_register("sign", np.sign, lambda z: np.zeros_like(z, dtype=np.float64), (0.0,),
          expression="sign(z)")
_register("linear", lambda z: np.asarray(z, dtype=np.float64), lambda z: np.ones_like(z),
          expression="z")
_register("sin", np.sin, np.cos, expression="sin(z)")
_register("cos", np.cos, lambda z: -np.sin(z), expression="cos(z)")
_register("sigmoid", _sigmoid, lambda z: _sigmoid(z) * (1.0 - _sigmoid(z)),
          expression="sigmoid(z)")
_register("he2", lambda z: z * z - 1.0, lambda z: 2.0 * z, expression="z**2 - 1")
_register("he3", lambda z: z**3 - 3.0 * z, lambda z: 3.0 * z * z - 3.0, expression="z**3 - 3*z")
_register("he4", lambda z: z**4 - 6.0 * z * z + 3.0, lambda z: 4.0 * z**3 - 12.0 * z,
          expression="z**4 - 6*z**2 + 3")
_register("quadratic", lambda z: z * z, lambda z: 2.0 * z, expression="z**2")
_register("abs", np.abs, np.sign, (0.0,), expression="abs(z)")
_register("softplus", lambda z: np.logaddexp(0.0, z), _sigmoid, expression="log(1 + exp(z))")


def available() -> list[str]:
    """Names of the registered functions."""
    return sorted(_REGISTRY)


def is_function_name(text: str) -> bool:
    """Whether ``get_function`` takes ``text`` (a function of one variable)."""
    try:
        get_function(text)
    except ValueError:
        return False
    return True


def get_function(spec: str | Function | Callable) -> Function:
    """Resolve a registered name, an expression in ``z`` (e.g. ``"tanh(2*z) + 0.1*z**2"``; one
    in ``z1`` alone is read as the same expression in ``z``), a :class:`Function` or a Python
    callable."""
    if isinstance(spec, Function):
        return spec
    if isinstance(spec, str):
        key = spec.strip()
        if key in _REGISTRY:
            return _REGISTRY[key]
        if not any(ch in key for ch in "()+-*/ ") and key.isidentifier() and key != "z":
            raise ValueError(
                f"unknown function {spec!r}; registered names are {', '.join(available())}, "
                "or give an expression in z such as 'tanh(2*z)'"
            )
        try:
            return parse_expression(key)
        except ValueError as exc:
            # an expression in z1 alone is the same expression in z (one rule for both)
            if "unknown name 'z1'" not in str(exc) or re.search(r"\bz\b", key):
                raise
        return parse_expression(re.sub(r"\bz1\b", "z", key))
    if callable(spec):
        return Function.from_callable(spec)
    raise TypeError(f"function must be a name, an expression or a callable, got {spec!r}")


# ---------------------------------------------------------------------------------------------
# Safe expressions: a whitelist walk over Python's AST, converted to sympy (never eval()).

_SYMPY_FUNCS: dict[str, Callable] = {}


def _sympy_funcs() -> dict[str, Callable]:
    if not _SYMPY_FUNCS:
        import sympy as sp

        _SYMPY_FUNCS.update(
            sin=sp.sin, cos=sp.cos, tan=sp.tan, tanh=sp.tanh, sinh=sp.sinh, cosh=sp.cosh,
            exp=sp.exp, log=sp.log, sqrt=sp.sqrt, erf=sp.erf, abs=sp.Abs, sign=sp.sign,
            atan=sp.atan, arctan=sp.atan,
            relu=lambda x: sp.Max(x, 0),
            sigmoid=lambda x: 1 / (1 + sp.exp(-x)),
        )
    return _SYMPY_FUNCS


def to_sympy(text: str, variables: Sequence[str] = ("z",), *, max_length: int = 500):
    """Parse ``text`` into a sympy expression, allowing only numbers, the given variables,
    ``pi``, ``e``, + - * / ** and the whitelisted functions (see ``allowed_functions``)."""
    import sympy as sp

    if not isinstance(text, str) or not text.strip():
        raise ValueError("expression must be a non-empty string")
    if len(text) > max_length:
        raise ValueError(f"expression longer than {max_length} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"cannot parse expression {text!r}: {exc.msg}") from None
    except UnicodeError:  # a command line's undecodable bytes (surrogate escapes)
        raise ValueError(f"cannot parse expression {text!r}: it is not valid UTF-8 text"
                         ) from None
    funcs = _sympy_funcs()
    symbols = {v: sp.Symbol(v, real=True) for v in variables}
    binops = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
              ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a / b,
              ast.Pow: lambda a, b: a**b}

    def walk(node):
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
                and not isinstance(node.value, bool):
            if not (math.isfinite(float(node.value)) if abs(node.value) < 10**300 else False):
                raise ValueError(f"number {str(node.value)[:20]} in expression is too large "
                                 "(|x| < 1e300 allowed)")
            return sp.nsimplify(node.value) if isinstance(node.value, int) else sp.Float(node.value)
        if isinstance(node, ast.Name):
            if node.id in symbols:
                return symbols[node.id]
            if node.id == "pi":
                return sp.pi
            if node.id == "e":
                return sp.E
            raise ValueError(
                f"unknown name {node.id!r} in expression; allowed variables: {', '.join(variables)}"
            )
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            base, expo = walk(node.left), walk(node.right)
            _check_power(base, expo, text)
            return base**expo
        if isinstance(node, ast.BinOp) and type(node.op) in binops:
            return binops[type(node.op)](walk(node.left), walk(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            val = walk(node.operand)
            return -val if isinstance(node.op, ast.USub) else val
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
            if node.func.id not in funcs:
                raise ValueError(
                    f"function {node.func.id!r} not allowed in expressions; allowed: "
                    f"{', '.join(sorted(funcs))}"
                )
            if len(node.args) != 1:
                raise ValueError(f"{node.func.id}() takes exactly one argument")
            return funcs[node.func.id](walk(node.args[0]))
        what = type(node.func).__name__ if isinstance(node, ast.Call) else type(node).__name__
        raise ValueError(f"unsupported syntax in expression {text!r} ({what}); allowed: numbers, "
                         f"{', '.join(variables)}, pi, e, + - * / ** and function calls")

    return walk(tree), symbols


def _check_power(base, expo, text: str) -> None:
    """Refuse, before sympy evaluates it, a power whose exponent is a number above
    :data:`MAX_EXPONENT` in size (``z**100``) or a constant power beyond float64 (``9**9**9``)."""
    if not expo.is_number:
        return
    try:
        e = abs(complex(expo))
    except (TypeError, ValueError):
        return
    if e > MAX_EXPONENT:
        raise ValueError(f"exponent {expo} too large in expression {text!r} (at most "
                         f"{MAX_EXPONENT} in absolute value)")
    if base.is_number:
        try:
            b = abs(complex(base))
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"number too large in expression {text!r}") from None
        if b > 0 and e * abs(math.log10(b)) > 300:
            raise ValueError(f"constant power {base}**{expo} in expression {text!r} is beyond "
                             "float64 (|x| < 1e300 allowed)")


def _kinks_of(expr, z) -> tuple[float, ...]:
    import sympy as sp

    points: set[float] = set()
    for sub in sp.preorder_traversal(expr):
        args = []
        if isinstance(sub, (sp.Abs, sp.sign, sp.Heaviside)):
            args = [sub.args[0]]
        elif isinstance(sub, (sp.Max, sp.Min)):
            args = [sub.args[0] - sub.args[1]]
        for arg in args:
            try:
                for root in sp.solve(sp.Eq(arg, 0), z):
                    if root.is_real:
                        points.add(float(root))
            except (NotImplementedError, TypeError):
                pass
    return tuple(sorted(points))


@functools.lru_cache(maxsize=256)
def parse_expression(text: str) -> Function:
    """A :class:`Function` from an expression in ``z`` (derivative by sympy, kinks located
    where an ``abs``/``sign``/``relu`` argument vanishes; quadrature checked by
    :func:`resolve_quadrature`). Cached by text: an expression determines its function."""
    import sympy as sp

    expr, symbols = to_sympy(text)
    z = symbols["z"]
    if expr.has(sp.zoo, sp.oo, -sp.oo, sp.nan):  # z/0, log(0): not a function of z
        raise ValueError(f"expression {text!r} is not finite (it simplifies to {expr})")
    dexpr = sp.diff(expr, z)
    modules = [{"erf": special.erf, "Heaviside": lambda x, h=0.5: np.heaviside(x, 0.5),
                "DiracDelta": np.zeros_like}, "numpy"]
    f_raw = sp.lambdify(z, expr, modules=modules)
    df_raw = sp.lambdify(z, dexpr, modules=modules)

    def f(x: Array) -> Array:
        return np.broadcast_to(np.asarray(f_raw(x), dtype=np.float64), np.shape(x)).copy()

    def df(x: Array) -> Array:
        return np.broadcast_to(np.asarray(df_raw(x), dtype=np.float64), np.shape(x)).copy()

    fn = Function(text, f, df, _kinks_of(expr, z), expression=text)
    check_finite(fn)
    return resolve_quadrature(fn)
