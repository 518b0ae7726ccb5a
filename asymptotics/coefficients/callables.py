"""User callables as activations or targets: identity, kinks, derivative, quadrature checks.

A Python callable passed where a function is expected is wrapped by
:meth:`asymptotics.coefficients.functions.Function.from_callable`; this module holds what that
wrapper needs: the cache key of a callable (:class:`CallableIdentity`, so two callables of one name
never share a cache entry), the kinks located numerically (:func:`find_kinks`), a finite-difference
derivative that never straddles a kink, and the check of its Gaussian moments against a fine
reference rule (:func:`resolve_quadrature`, THEORY.md §2).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol, TypeVar

import numpy as np

Array = np.ndarray


class FunctionLike(Protocol):
    """What the checks here use of :class:`asymptotics.coefficients.functions.Function` (a
    protocol, so that this module never imports the one that imports it)."""

    name: str
    kinks: tuple[float, ...]

    def __call__(self, z: Array) -> Array: ...

    def derivative(self, z: Array) -> Array: ...


F = TypeVar("F", bound=FunctionLike)
#: the probe grid of a user function's checks and of its fingerprint
PROBE = np.linspace(-12.0, 12.0, 481)


#: the kinks located and the quadrature break points chosen for each user callable seen (keyed
#: by the callable objects and their values): a loop of risk() calls does not redo them
RESOLVED: dict = {}

FD_STEP = 1e-3  # step of the finite-difference derivative of a user callable


def finite_difference(fv: Callable[[Array], Array], kinks: tuple[float, ...]
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


def quadrature_error(fn: FunctionLike) -> float:
    """Largest difference, relative to sqrt(E f^2), of (E f, E z f, E f^2) and the same for f'
    (z ~ N(0, 1), and at the shifted, scaled argument 0.7 + 0.6 z) between the package's rule
    (Gauss-Hermite, or Gauss-Legendre pieces split at ``fn.kinks``: ``gauss_rules``) and a
    reference rule of 240,000 nodes with the kinks as panel edges (:func:`_reference_rule`)."""
    from asymptotics.coefficients.gauss_rules import gaussian_nodes

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


def resolve_quadrature(fn: F) -> F:
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
    def of(cls, f: Callable, df: Callable | None, fn: FunctionLike) -> CallableIdentity:
        with np.errstate(all="ignore"):
            values = np.concatenate([fn(PROBE), fn.derivative(PROBE)])
        return cls((f, df), values.tobytes())

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, CallableIdentity) and self.fingerprint == other.fingerprint
                and len(self.objects) == len(other.objects)
                and all(a is b for a, b in zip(self.objects, other.objects, strict=True)))

    def __hash__(self) -> int:
        return hash((tuple(id(o) for o in self.objects), self.fingerprint))


def real_values(out: object, label: str) -> Array:
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


def check_finite(fn: FunctionLike) -> None:
    """Raise ValueError if ``fn`` or its derivative is not finite on a probe grid of [-12, 12],
    or if ``fn`` grows too fast for its Gaussian second moment E f(z)^2 to be finite and
    computable in float64 (e.g. ``exp(z**2)``)."""
    with np.errstate(all="ignore"):
        pairs = (("values", fn(PROBE)), ("derivative", fn.derivative(PROBE)))
    for what, values in pairs:
        bad = ~np.isfinite(values)
        if bad.any():
            z0 = PROBE[np.argmax(bad)]
            raise ValueError(
                f"function {fn.name!r} returned non-finite {what} (e.g. at z={z0:g}); "
                "functions must be finite on the whole real line"
            )
    values = np.abs(pairs[0][1])
    with np.errstate(divide="ignore"):
        log_weight = 2.0 * np.log(values) - 0.5 * PROBE**2  # log(f^2 phi) up to a constant
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
            f"|z| = {PROBE[-1]:g}, so its Gaussian moments are infinite or overflow float64 "
            "(allowed: growth slower than exp(z^2/4), e.g. polynomials of moderate degree)"
        )

