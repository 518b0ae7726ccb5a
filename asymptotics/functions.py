"""Activations and targets: a registry by name, safe user expressions, user callables.

A :class:`Function` carries a vectorised numpy evaluation ``f``, its derivative ``df`` (what
the giant step of THEORY.md §1 needs: ``sigma'``), and the points where it is not smooth
(``kinks``), which the quadrature splits at (THEORY.md §2, §4).
"""

from __future__ import annotations

import ast
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

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
            out = _real_values(raw, label)
            return np.broadcast_to(out, np.shape(z)).astype(np.float64)

        given = None if kinks is None else tuple(sorted(float(k) + 0.0 for k in kinks))
        with np.errstate(all="ignore"):
            key = CallableIdentity((f, df, given), fv(_PROBE).tobytes())
        known = _RESOLVED.get(key)  # a callable seen before: its kinks and rule, not redone
        if known is not None:
            kinks, rule = known
        elif given is None:
            kinks = tuple(sorted(float(k) + 0.0 for k in find_kinks(fv)))
        else:
            kinks = given
        if df is None:
            dfv = _finite_difference(fv, kinks)
        else:

            def dfv(z: Array) -> Array:
                out = _real_values(df(z), f"derivative of {label}")
                return np.broadcast_to(out, np.shape(z)).astype(np.float64)

        fn = cls(label, fv, dfv, kinks)
        if known is None:
            check_finite(fn)
            rule = resolve_quadrature(fn).kinks
            if len(_RESOLVED) >= 256:
                _RESOLVED.pop(next(iter(_RESOLVED)))
            _RESOLVED[key] = (kinks, rule)
        fn = replace(fn, kinks=rule)
        return replace(fn, identity=CallableIdentity.of(f, df, fn))


#: the kinks located and the quadrature break points chosen for each user callable seen (keyed
#: by the callable objects and their values): a loop of risk() calls does not redo them
_RESOLVED: dict = {}

FD_STEP = 1e-3  # step of the finite-difference derivative of a user callable


def _finite_difference(fv: Callable[[Array], Array], kinks: tuple[float, ...]
                       ) -> Callable[[Array], Array]:
    """f' by the central 5-point rule (error ~ h^4 f^(5)), one-sided 5-point within 2h of a kink
    so that the stencil never straddles it (the side of z; at the kink itself, the right)."""
    h = FD_STEP

    def dfv(z: Array) -> Array:
        z = np.asarray(z, dtype=np.float64)
        out = (-fv(z + 2 * h) + 8 * fv(z + h) - 8 * fv(z - h) + fv(z - 2 * h)) / (12 * h)
        for k in kinks:
            near = np.abs(z - k) < 2 * h
            if np.any(near):
                zn = z[near]
                step = np.where(zn >= k, h, -h)
                one_sided = (-25 * fv(zn) + 48 * fv(zn + step) - 36 * fv(zn + 2 * step)
                             + 16 * fv(zn + 3 * step) - 3 * fv(zn + 4 * step)) / (12 * step)
                out = np.array(out, dtype=np.float64)
                out[near] = one_sided
        return out

    return dfv


KINK_GRID = np.linspace(-12.0, 12.0, 24001)  # spacing 1e-3
MAX_KINKS = 16


def find_kinks(fv: Callable[[Array], Array]) -> tuple[float, ...]:
    """Points of [-12, 12] where f or f' jumps, located numerically (user callables).

    On a grid of spacing h the second difference of f is O(h^2 f'') where f is smooth, O(h J)
    at a jump J of f' and O(J) at a jump of f. Its local maxima above 0.1 h max(1, max|f'|)
    are candidates; each is placed by intersecting the straight lines through
    the two grid points on either side (exact for piecewise-linear pieces, error O(h^2)
    otherwise), or by bisection where f itself jumps. A spurious kink of a steep smooth
    function costs only quadrature nodes."""
    z = KINK_GRID
    h = z[1] - z[0]
    with np.errstate(all="ignore"):
        f = fv(z)
    if not np.all(np.isfinite(f)):
        return ()
    slope = max(1.0, float(np.max(np.abs(np.diff(f)))) / h)
    scale = max(1.0, float(np.max(np.abs(f))))
    d2 = np.abs(f[2:] - 2.0 * f[1:-1] + f[:-2])
    thresh = 0.1 * slope * h  # a jump of f' of 10% of the largest slope; f'' < 100 slope passes
    idx = [i + 1 for i in range(1, d2.size - 1)
           if d2[i] > thresh and d2[i] >= d2[i - 1] and d2[i] > d2[i + 1]]
    kinks: list[float] = []
    for i in idx[: MAX_KINKS + 1]:
        if i < 3 or i > z.size - 4:
            continue
        sl = (f[i - 1] - f[i - 2]) / h
        sr = (f[i + 3] - f[i + 2]) / h if i + 3 < z.size else (f[i + 2] - f[i + 1]) / h
        left = f[i - 1] + sl * (z[i] - z[i - 1])  # the left line at z[i]
        right = f[i + 2] + sr * (z[i] - z[i + 2])
        if abs(left - right) > 4.0 * abs(sl - sr) * h + 1e-9 * scale:  # f jumps: bisect
            a, b = z[i - 1], z[i + 1]
            fa = f[i - 1]
            for _ in range(60):
                mid = 0.5 * (a + b)
                fm = float(fv(np.array([mid]))[0])
                if abs(fm - fa) < abs(fm - f[i + 1]):
                    a, fa = mid, fm
                else:
                    b = mid
            kinks.append(0.5 * (a + b))
        elif sl != sr:  # f' jumps: intersect the two lines
            zk = (f[i + 2] - sr * z[i + 2] - f[i - 1] + sl * z[i - 1]) / (sl - sr)
            kinks.append(float(min(max(zk, z[i - 1]), z[i + 1])))
    if len(kinks) > MAX_KINKS:
        return ()  # an oscillating or noisy function: no split, check_quadrature decides
    return tuple(sorted(kinks))


QUADRATURE_RTOL = 1e-8  # agreement of the two rules, relative to sqrt(E f^2)
#: break points added where a smooth user function is not resolved by Gauss-Hermite (steep or
#: with complex singularities near the real axis, e.g. tanh(4 z)): Gauss-Legendre pieces of
#: length <= 3 near the bulk of the Gaussian
REFINE_POINTS = (-6.0, -3.0, -1.5, 0.0, 1.5, 3.0, 6.0)


class QuadratureWarning(UserWarning):
    """The Gaussian moments of a user function are not resolved by the package's rules."""


REFERENCE_PANEL = 0.01  # panel width of the reference rule
REFERENCE_NODES = 10  # Gauss-Legendre nodes per panel


def _reference_rule(kinks: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """A composite Gauss-Legendre rule for E F(Z), Z ~ N(0, 1): panels of width <= 0.01 on
    [-12, 12] with the kinks as panel edges, 10 nodes each (exact to rounding for every piece
    smooth on the scale of a panel, including oscillations down to a period of ~0.02)."""
    from scipy.special import roots_legendre

    edges = np.union1d(np.linspace(-12.0, 12.0, int(round(24.0 / REFERENCE_PANEL)) + 1),
                       [k for k in kinks if -12.0 < k < 12.0])
    t, wt = roots_legendre(REFERENCE_NODES)
    mid, half = 0.5 * (edges[1:] + edges[:-1]), 0.5 * (edges[1:] - edges[:-1])
    z = (mid[:, None] + half[:, None] * t[None, :]).ravel()
    w = (half[:, None] * wt[None, :]).ravel() * np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
    return z, w


def quadrature_error(fn: Function) -> float:
    """Largest difference, relative to sqrt(E f^2), of (E f, E z f, E f^2) and the same for f'
    (z ~ N(0, 1), and at the shifted, scaled argument 0.7 + 0.6 z) between the package's rule
    (Gauss-Hermite, or Gauss-Legendre pieces split at ``fn.kinks``: ``gauss_rules``) and a
    reference rule of 240,000 nodes with the kinks as panel edges (:func:`_reference_rule`)."""
    from .gauss_rules import gaussian_nodes

    worst = 0.0
    for shift, scale in ((0.0, 1.0), (0.7, 0.6)):
        z, w = gaussian_nodes(np.array([shift]), np.array([scale]), fn.kinks)
        zr, wr = _reference_rule([(k - shift) / scale for k in fn.kinks])
        for g in (fn, fn.derivative):
            with np.errstate(all="ignore"):
                v, vr = g(shift + scale * z[0]), g(shift + scale * zr)
            ours = np.array([np.sum(w[0] * v), np.sum(w[0] * v * z[0]), np.sum(w[0] * v * v)])
            ref = np.array([np.sum(wr * vr), np.sum(wr * vr * zr), np.sum(wr * vr * vr)])
            if not (np.all(np.isfinite(ours)) and np.all(np.isfinite(ref))):
                return math.inf
            norm = math.sqrt(max(abs(ref[2]), 1e-300))
            diff = np.abs(ours - ref)
            worst = max(worst, float(np.max(diff[:2])) / norm, float(diff[2]) / (2.0 * norm))
    return worst


def resolve_quadrature(fn: Function) -> Function:
    """``fn`` if the package's rule resolves its Gaussian moments (:func:`quadrature_error` <=
    :data:`QUADRATURE_RTOL`); else ``fn`` with the :data:`REFINE_POINTS` added as break points
    if that resolves them; else ``fn`` unchanged with a :class:`QuadratureWarning` naming the
    fix."""
    import warnings

    err = quadrature_error(fn)
    if err <= QUADRATURE_RTOL:
        return fn
    refined = replace(fn, kinks=tuple(sorted(set(fn.kinks) | set(REFINE_POINTS))))
    err_refined = quadrature_error(refined)
    if err_refined <= QUADRATURE_RTOL:
        return refined
    warnings.warn(
        f"the Gaussian moments of function {fn.name!r} differ by {min(err, err_refined):.2g} "
        f"(relative) between the package's quadrature and a reference rule (tolerance "
        f"{QUADRATURE_RTOL:g}; kinks located at {list(fn.kinks) or 'none'}): if it has kinks, "
        "give them exactly with Function.from_callable(f, kinks=[...]) (and df= for the "
        "derivative) or write it as an expression in z; if it oscillates fast, its moments "
        "need more nodes than the rules have", QuadratureWarning, stacklevel=4)
    return fn


class CallableIdentity:
    """Cache key of a user callable: the callable objects (compared by identity and kept alive,
    so an id is never reused while a cache holds the key) and the bytes of its values and
    derivative on a probe grid (a closure whose captured variables changed is a new function).
    """

    __slots__ = ("objects", "fingerprint")

    def __init__(self, objects: tuple, fingerprint: bytes) -> None:
        self.objects = objects
        self.fingerprint = fingerprint

    @classmethod
    def of(cls, f: Callable, df: Callable | None, fn: Function) -> CallableIdentity:
        with np.errstate(all="ignore"):
            values = np.concatenate([fn(_PROBE), fn.derivative(_PROBE)])
        return cls((f, df), values.tobytes())

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, CallableIdentity) and self.fingerprint == other.fingerprint
                and len(self.objects) == len(other.objects)
                and all(a is b for a, b in zip(self.objects, other.objects, strict=True)))

    def __hash__(self) -> int:
        return hash((tuple(id(o) for o in self.objects), self.fingerprint))


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


@functools.lru_cache(maxsize=256)
def parse_expression(text: str) -> Function:
    """A :class:`Function` from an expression in ``z`` (derivative by sympy, kinks located
    where an ``abs``/``sign``/``relu`` argument vanishes; quadrature checked by
    :func:`resolve_quadrature`). Cached by text: an expression determines its function."""
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
    return resolve_quadrature(fn)
