"""Predicted spike and outlier counts after one and two large gradient steps (docs/THEORY.md §8).

Convention (Moniri et al. 2023, arXiv:2310.07891; Moniri & Hassani 2026, arXiv:2605.17767), in
THEORY.md §1 units: rows of ``W0`` on the unit sphere,
``f(x) = (1/sqrt p) sum_k a_k sigma(<w_k, x>)`` with a frozen readout of entries ``O(1/sqrt p)``
(not all equal), full-batch steps on ``n = alpha0 d`` samples with learning rates
``eta_t = eta_tilde_t p^(1/2 + a_t)``, ``a_t in [0, 1/2)``. Then the
rank-one part ``(E sigma') a u^T / sqrt p`` of the first gradient (``u = (1/n) sum_i y_i x_i``) is a
spike of order ``p^a1`` in ``W1``, while everything else the step adds vanishes, so ``a = 0`` is the
constant-step regime (an order-one spike) and ``a = 1/2`` with a constant readout is THEORY.md §1.

One step, feature matrix ``F = sigma(X W1^T)`` (fresh ``X``, ``n`` x ``p``): writing
``X W1^T = X W0^T + Delta`` with ``Delta_ij = eps_j kappa_i``, ``eps_j ~ p^(a - 1/2)``,
``kappa = X u``, the Taylor term of order ``l`` has the rank-one mean part
``(E sigma^(l)(z) / l!) kappa^l (eps^l)^T`` of operator norm ``p^(1 - l (1/2 - a))`` against a bulk
of order ``p^(1/2)``: a spike of order ``l`` exists iff ``a > (l - 1)/(2 l)`` and
``E sigma^(l)(z) = E[sigma(z) He_l(z)] != 0`` (the activation's Hermite coefficient of degree
``l``).
Its left singular vector aligns with ``(X u)^l``, a polynomial feature of the direction ``u`` that
carries the target's first Hermite coefficient (``u -> mu1* theta* + noise``).

Two steps: expand ``sigma'(<w1_j, x>) = sigma'(<w0_j, x> + eps_j kappa)`` in ``eps_j``. Term ``k``
of the second gradient contributes ``eta2 (E sigma^(k+1) / k!) (a o eps^k) v_k^T / sqrt p`` with
``v_k = (1/n) sum_i y_i kappa_i^k x_i`` (``o`` the entrywise product), of operator norm
``p^(a2 - k (1/2 - a1))``. The ``k = 0`` term shares the left vector ``a`` with the first step's
spike, so ``W2`` keeps one leading outlier plus one new outlier for each ``k >= 1`` with
``k (1/2 - a1) < a2``: ``floor(a2 / (1/2 - a1))`` new outliers when the ratio is not an integer
(Moniri & Hassani's count; on an integer ratio the last term is of order one and BBP-dependent).
With an activation whose ``E sigma^(k+1)`` vanishes (odd ``sigma``: every odd ``k``), that term is
absent.

Learned directions: the right vector of term ``k`` has mean ``E[y kappa^k x]`` with
``kappa = <m1, z> + rho zeta (+ y / alpha0 if the batch is reused)``; ``m1_j = E[g z_j]``,
``rho^2 = E y^2 / alpha0``, ``zeta ~ N(0, 1)`` independent, the reused-batch term being the
self-interaction ``y_i |x_i|^2 / n`` of sample ``i`` with itself. Direction ``j`` is learned by
term ``k`` iff ``E[g(z) z_j kappa^k] != 0``. Fresh batches see only ``m1`` (information exponent
one, and staircase directions coupled to it); reused batches also see ``E[g^(r+1) z_j]``, e.g. a
``He_3`` direction through ``E[g^3 z_j]`` at ``k = 2``. Directions on which ``g`` is even (a pure
``He_2(z_j)``) are invisible to both at this order: ``(y, kappa)`` is symmetric under
``z_j -> -z_j``; an information-exponent-2 direction that is not even (``He_2 + He_3``) is seen by
the reused batch through ``E[g^2 z_j]`` at ``k = 1``.

Finite size: the Taylor expansion needs ``eps_j kappa`` small, i.e. ``eta_tilde_1 E sigma'
|u| p^(a1 - 1/2) = O(1)`` with a small constant; otherwise ``sigma'`` saturates and the higher terms
are much weaker than their Taylor value. Term ``k`` is an outlier once ``C_k p^(e_k)`` exceeds the
BBP threshold, ``e_k = a2 - k (1/2 - a1)`` (:func:`two_step_term_exponents`), so near a boundary
(:func:`boundary_gap` small) the finite-p count is decided by the constants ``C_k``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from asymptotics.coefficients.quadrature import gauss_hermite
from asymptotics.core import group_checks

_TOL = 1e-10


def _check_exponent(value: float, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a real number, got {value!r}") from None
    if not (math.isfinite(v) and 0.0 <= v < 0.5):
        raise ValueError(f"{name} must be in [0, 1/2), got {value!r}")
    return v


def _check_order(order: int, name: str = "order", minimum: int = 1) -> int:
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {order!r}")
    if order < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {order}")
    return int(order)


def _check_coefficients(coefficients: Sequence[float], name: str) -> np.ndarray:
    c = np.asarray(coefficients, dtype=np.float64)
    if c.ndim != 1 or c.size < 2:
        raise ValueError(
            f"{name} must be a 1-d sequence indexed by degree (c[0], c[1], ...), "
            f"with at least degrees 0 and 1; got shape {c.shape}"
        )
    if not np.all(np.isfinite(c)):
        raise ValueError(f"{name} must be finite")
    return c


def _nonzero(c: np.ndarray, tol: float) -> np.ndarray:
    scale = max(float(np.max(np.abs(c))), 1.0)
    return np.abs(c) > tol * scale


# ---------------------------------------------------------------------------------------------
# Hermite coefficients


def hermite_coefficients(fn, max_degree: int = 8, *, n_nodes: int = 160) -> tuple[float, ...]:
    """Normalised Hermite coefficients ``c_l = E[f(z) He_l(z)] / sqrt(l!)``, l = 0..max_degree,
    of a function (name, expression in z, or callable; see ``asymptotics.coefficients.functions``),
    by
    Gauss-Hermite quadrature with ``n_nodes`` nodes (exact for polynomials of degree
    < 2 n_nodes - max_degree). ``f = sum_l c_l He_l / sqrt(l!)``; ``E f^2 = sum_l c_l^2``."""
    from asymptotics.coefficients.functions import get_function

    max_degree = _check_order(max_degree, "max_degree", minimum=1)
    n_nodes = _check_order(n_nodes, "n_nodes", minimum=max_degree + 2)
    f = get_function(fn)
    z, w = gauss_hermite(n_nodes)
    fz = f(z)
    out = []
    he_prev, he = np.zeros_like(z), np.ones_like(z)
    for l in range(max_degree + 1):
        out.append(float(np.sum(w * fz * he)) / math.sqrt(math.factorial(l)))
        he_prev, he = he, z * he - l * he_prev
    return tuple(out)


def information_exponent(coefficients: Sequence[float], *, tol: float = _TOL) -> int | None:
    """First degree ``l >= 1`` with a nonzero coefficient (``None`` if there is none)."""
    c = _check_coefficients(coefficients, "coefficients")
    nz = _nonzero(c, tol)
    for l in range(1, c.size):
        if nz[l]:
            return l
    return None


# ---------------------------------------------------------------------------------------------
# One step


def one_step_spike_threshold(order: int) -> float:
    """Exponent above which a spike of order ``l`` appears after one step: ``(l - 1) / (2 l)``."""
    l = _check_order(order)
    return (l - 1) / (2 * l)


def one_step_spike_orders(
    a: float, coefficients: Sequence[float], *, tol: float = _TOL
) -> tuple[int, ...]:
    """Orders ``l >= 1`` of the spikes in the features ``sigma(X W1^T)`` after one step with
    ``eta = eta_tilde p^(1/2 + a)``: ``a > (l - 1)/(2 l)`` and ``coefficients[l] != 0``, where
    ``coefficients`` are the activation's Hermite coefficients indexed by degree (as returned by
    :func:`hermite_coefficients`; only which ones vanish matters). Degrees beyond
    ``len(coefficients) - 1`` are not counted, so pass enough of them: every order up to ``L`` is
    open once ``a > (L - 1)/(2 L)``."""
    a = _check_exponent(a, "a")
    c = _check_coefficients(coefficients, "coefficients")
    nz = _nonzero(c, tol)
    return tuple(l for l in range(1, c.size) if nz[l] and a > (l - 1) / (2 * l))


def one_step_spike_count(a: float, coefficients: Sequence[float], *, tol: float = _TOL) -> int:
    """Number of spikes of the feature matrix after one step (see :func:`one_step_spike_orders`)."""
    return len(one_step_spike_orders(a, coefficients, tol=tol))


# ---------------------------------------------------------------------------------------------
# Two steps


def two_step_ratio(a1: float, a2: float) -> float:
    """``a2 / (1/2 - a1)``: the number of Taylor orders of the second step that outgrow the bulk."""
    a1 = _check_exponent(a1, "a1")
    a2 = _check_exponent(a2, "a2")
    return a2 / (0.5 - a1)


def two_step_outlier_count(a1: float, a2: float) -> int:
    """Moniri & Hassani's count ``floor(a2 / (1/2 - a1))``: outliers of ``W2`` beyond the leading
    one (the one-step spike, which the second step's zeroth order reinforces).
    Generic activation."""
    x = two_step_ratio(a1, a2)
    return int(math.floor(x + 1e-12))


def two_step_term_exponents(a1: float, a2: float, k_max: int) -> np.ndarray:
    """``e_k = a2 - k (1/2 - a1)``, k = 0..k_max: term ``k`` of the second step has operator norm
    of order ``p^(e_k)`` against an order-one bulk (module docstring), so it is an outlier for
    large p iff ``e_k > 0``."""
    a1 = _check_exponent(a1, "a1")
    a2 = _check_exponent(a2, "a2")
    k_max = _check_order(k_max, "k_max", minimum=0)
    return a2 - np.arange(k_max + 1, dtype=np.float64) * (0.5 - a1)


def boundary_gap(a1: float, a2: float) -> float:
    """``min_{k >= 1} |a2 - k (1/2 - a1)|`` = ``(1/2 - a1) dist(a2 / (1/2 - a1), Z_{>=1})``: the
    exponent of the marginal term. At size p it is separated from the bulk by a factor
    ``p^gap`` only, so the finite-p count needs ``p^gap >> C_k / threshold``."""
    x = two_step_ratio(a1, a2)
    k = max(1, round(x))
    return float((0.5 - a1) * abs(x - k)) if x >= 0.5 else float((0.5 - a1) * (1 - x))


def on_integer_boundary(a1: float, a2: float, *, width: float = 0.05) -> bool:
    """True when ``a2 / (1/2 - a1)`` is within ``width`` of a positive integer: there the last
    counted term has norm ``p^(small)`` and finite-d counts are decided by constants."""
    if not (width >= 0 and math.isfinite(width)):
        raise ValueError(f"width must be >= 0 and finite, got {width}")
    x = two_step_ratio(a1, a2)
    k = round(x)
    return k >= 1 and abs(x - k) <= width


def two_step_spike_orders(
    a1: float,
    a2: float,
    activation_coefficients: Sequence[float] | None = None,
    *,
    tol: float = _TOL,
) -> tuple[int, ...]:
    """Taylor orders ``k >= 1`` of the second step that give outliers of ``W2``:
    ``k (1/2 - a1) < a2`` (up to ``floor`` on an integer ratio) and, when the activation's Hermite
    coefficients are given (indexed by degree), ``coefficients[k + 1] != 0``. Orders whose degree
    ``k + 1`` lies beyond the coefficients given raise ``ValueError``."""
    K = two_step_outlier_count(a1, a2)
    orders = range(1, K + 1)
    if activation_coefficients is None:
        return tuple(orders)
    c = _check_coefficients(activation_coefficients, "activation_coefficients")
    if K + 1 >= c.size:
        raise ValueError(
            f"activation_coefficients must reach degree {K + 1} for a1={a1:g}, a2={a2:g} "
            f"(got degrees 0..{c.size - 1})"
        )
    nz = _nonzero(c, tol)
    return tuple(k for k in orders if nz[k + 1])


def two_step_outlier_count_for(
    a1: float, a2: float, activation_coefficients: Sequence[float], *, tol: float = _TOL
) -> int:
    """Activation-aware count: :func:`two_step_spike_orders` with the coefficients given."""
    return len(two_step_spike_orders(a1, a2, activation_coefficients, tol=tol))


# ---------------------------------------------------------------------------------------------
# Learnable directions, fresh vs reused batch


@dataclass(frozen=True)
class DirectionReport:
    """Which target directions the outliers of ``W2`` carry (see the module docstring).

    ``moments[j, k] = E[g(z) z_j kappa^k]`` for the orders ``k`` in ``orders`` (0 = the one-step
    spike); ``learned[j]`` is True when one of them is nonzero; ``first_order[j]`` the smallest
    such ``k`` (or -1)."""

    batch: str
    orders: tuple[int, ...]
    moments: np.ndarray
    learned: tuple[bool, ...]
    first_order: tuple[int, ...]


def target_function(target: str, n_directions: int | None = None):
    """A vectorised ``g(Z)`` (Z of shape (..., k)) from an expression in z1..zk, or in z
    (single index), and k."""
    from asymptotics.coefficients.functions import get_function
    from asymptotics.coefficients.targets import target_callable

    text = target.strip()
    try:  # the one target parser: asymptotics.coefficients.hermite (z1..zk, He<n>(.), the
          # registered functions)
        g0, k0 = target_callable(text)
    except ValueError as exc:
        try:
            fn = get_function(text)  # a registered activation's name, applied to z1
        except ValueError:
            raise exc from None  # the multi-index parser's reason (e.g. at most 8 variables)
        return (lambda Z: fn(Z[..., 0])), 1
    group_checks.target_growth(g0, k0, text)
    k = k0
    if n_directions is not None:
        if n_directions < k0:
            raise ValueError(f"n_directions={n_directions} but the target uses z{k0}")
        k = n_directions

    def g(Z: np.ndarray) -> np.ndarray:
        return g0(np.asarray(Z, dtype=np.float64)[..., :k0])

    return g, k


def learnable_directions(
    target: str,
    *,
    a1: float,
    a2: float,
    batch: str,
    alpha0: float = 1.0,
    activation_coefficients: Sequence[float] | None = None,
    n_directions: int | None = None,
    n_nodes: int = 24,
    tol: float = 1e-8,
) -> DirectionReport:
    """Directions ``theta_j`` of a multi-index target ``y = g(z1, ..., zk)`` (an expression in
    ``z1..zk``, or in ``z`` for a single index) that the outliers of ``W2`` align with, for a
    ``'fresh'`` or ``'reused'`` second batch. Orders considered: 0 and those of
    :func:`two_step_spike_orders`. Expectations by tensor Gauss-Hermite quadrature
    (``n_nodes`` per axis, k + 1 axes, k <= 3); ``moments`` are relative to ``E y^2``.
    For giant steps (``eta ~ p``) see :func:`asymptotics.multiindex.directions.step_directions`
    (THEORY.md §14.5)."""
    if batch not in ("fresh", "reused"):
        raise ValueError(f"batch must be 'fresh' or 'reused', got {batch!r}")
    if not (alpha0 > 0 and math.isfinite(alpha0)):
        raise ValueError(f"alpha0 must be > 0 and finite, got {alpha0}")
    orders = (0, *two_step_spike_orders(a1, a2, activation_coefficients))
    g, k = target_function(target, n_directions)
    if k > 3:
        raise ValueError(f"learnable_directions supports up to 3 directions, got {k}")
    n_nodes = _check_order(n_nodes, "n_nodes", minimum=4)
    z, w = gauss_hermite(n_nodes)
    grids = np.array(list(itertools.product(z, repeat=k + 1)))  # (z1..zk, zeta)
    weights = np.prod(np.array(list(itertools.product(w, repeat=k + 1))), axis=1)
    Z, zeta = grids[:, :k], grids[:, k]
    y = g(Z)
    ey2 = float(np.sum(weights * y * y))
    if not ey2 > 0:
        raise ValueError("target has zero second moment")
    m1 = np.array([np.sum(weights * y * Z[:, j]) for j in range(k)])
    rho = math.sqrt(ey2 / alpha0)
    kappa = Z @ m1 + rho * zeta
    if batch == "reused":
        kappa = kappa + y / alpha0
    moments = np.empty((k, len(orders)))
    for j in range(k):
        for col, kk in enumerate(orders):
            moments[j, col] = np.sum(weights * y * Z[:, j] * kappa**kk) / ey2 ** ((kk + 1) / 2)
    nz = np.abs(moments) > tol
    learned = tuple(bool(row.any()) for row in nz)
    first = tuple(int(orders[int(np.argmax(row))]) if row.any() else -1 for row in nz)
    return DirectionReport(batch=batch, orders=orders, moments=moments, learned=learned,
                           first_order=first)
