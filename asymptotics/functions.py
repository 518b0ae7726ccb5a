"""Activations and targets: a registry by name, safe user expressions, user callables.

A :class:`Function` carries a vectorised numpy evaluation ``f``, its derivative ``df`` (what
the giant step of THEORY.md §1 needs: ``sigma'``), and the points where it is not smooth
(``kinks``), which the quadrature splits at (THEORY.md §2, §4).
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import special

Array = np.ndarray
_PROBE = np.linspace(-12.0, 12.0, 481)


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
        kinks: Sequence[float] = (),
    ) -> Function:
        """Wrap a user callable. Without ``df`` the derivative is a 5-point finite difference."""
        if not callable(f):
            raise TypeError(f"function must be callable, got {type(f).__name__}")

        label = name or getattr(f, "__name__", "user")

        def fv(z: Array) -> Array:
            out = _real_values(f(z), label)
            return np.broadcast_to(out, np.shape(z)).astype(np.float64)

        if df is None:
            h = 1e-3

            def dfv(z: Array) -> Array:
                return (
                    -fv(z + 2 * h) + 8 * fv(z + h) - 8 * fv(z - h) + fv(z - 2 * h)
                ) / (12 * h)
        else:

            def dfv(z: Array) -> Array:
                out = _real_values(df(z), f"derivative of {label}")
                return np.broadcast_to(out, np.shape(z)).astype(np.float64)

        fn = cls(label, fv, dfv, tuple(float(k) for k in kinks))
        check_finite(fn)
        return fn


def _real_values(out: object, label: str) -> Array:
    """``out`` as float64, refusing complex values (a nonzero imaginary part would otherwise be
    dropped silently) and anything that is not numeric."""
    raw = np.asarray(out)
    if np.iscomplexobj(raw):
        if np.any(np.imag(raw) != 0):
            raise ValueError(f"function {label!r} returned complex values; functions must be "
                             "real-valued")
        raw = np.real(raw)
    try:
        return np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"function {label!r} must return real numbers, got "
                         f"{raw.dtype} values") from None


# a function may grow at most like exp(a z^2) with a < 1/4 for E f(z)^2 (z ~ N(0, 1)) to be
# finite; numerically: f^2 times the Gaussian density must have decayed by |z| = 12 to below
# GROWTH_RTOL of its largest value
GROWTH_RTOL = 1e-6
MAX_EXPONENT = 64


def check_finite(fn: Function) -> None:
    """Raise ValueError if ``fn`` or its derivative is not finite on a probe grid of [-12, 12],
    or if ``fn`` grows too fast for its Gaussian second moment E f(z)^2 to be finite and
    computable in float64 (e.g. ``exp(z**2)``)."""
    with np.errstate(all="ignore"):
        pairs = (("values", fn(_PROBE)), ("derivative", fn.derivative(_PROBE)))
    for what, values in pairs:
        bad = ~np.isfinite(values)
        if bad.any():
            z0 = _PROBE[np.argmax(bad)]
            raise ValueError(
                f"function {fn.name!r} returned non-finite {what} (e.g. at z={z0:g}); "
                "functions must be finite on the whole real line"
            )
    values = np.abs(pairs[0][1])
    with np.errstate(divide="ignore"):
        log_weight = 2.0 * np.log(values) - 0.5 * _PROBE**2  # log(f^2 phi) up to a constant
    if np.all(values == 0):
        return
    top = float(np.max(log_weight))
    edge = float(max(log_weight[0], log_weight[-1]))
    if float(np.max(values)) > 1e150:
        raise ValueError(
            f"function {fn.name!r} reaches |f| = {float(np.max(values)):.3g} on [-12, 12]; its "
            "Gaussian moments would overflow float64 (allowed: |f| <= 1e150 there)"
        )
    if edge > top + math.log(GROWTH_RTOL):
        raise ValueError(
            f"function {fn.name!r} grows too fast: f(z)^2 exp(-z^2/2) has not decayed at "
            f"|z| = {_PROBE[-1]:g}, so its Gaussian moments are infinite or overflow float64 "
            "(allowed: growth slower than exp(z^2/4), e.g. polynomials of moderate degree)"
        )


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


def get_function(spec: str | Function | Callable) -> Function:
    """Resolve a registered name, an expression in ``z`` (e.g. ``"tanh(2*z) + 0.1*z**2"``),
    a :class:`Function` or a Python callable."""
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
        return parse_expression(key)
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


def parse_expression(text: str) -> Function:
    """A :class:`Function` from an expression in ``z`` (derivative by sympy, kinks located
    where an ``abs``/``sign``/``relu`` argument vanishes)."""
    import sympy as sp

    expr, symbols = to_sympy(text)
    z = symbols["z"]
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
    return fn
