"""The step integrals' helpers of :mod:`asymptotics.multiindex.steps` (THEORY.md §12.4), public
here for the network route: the eta schedule, the trapezoid rule on the spike axes, the
xi-moments of sigma, the factor of a Gram matrix and the target's evaluation (the same code, so
that :func:`asymptotics.network.groups.advance_network` reproduces the states of §12 number for
number; ``tests/test_network_steps.py`` checks it)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from asymptotics.coefficients.functions import Function
from asymptotics.core import checks
from asymptotics.multiindex.steps import RANK_TOL, U_MAX


def etas(eta: float | Sequence[float], steps: int) -> tuple[float, ...]:
    if isinstance(eta, (int, float, np.integer, np.floating)) and not isinstance(eta, bool):
        eta = (float(eta),) * steps
    if isinstance(eta, str) or not isinstance(eta, Sequence):
        raise TypeError(f"eta must be a number or one number per step, got {eta!r}")
    if len(eta) != steps:
        raise ValueError(f"eta needs one value per step (steps={steps}), got {len(eta)}")
    return tuple(checks.real(f"eta[{t}]", e, 0.0) for t, e in enumerate(eta))


def trapezoid(r: int, h: float) -> tuple[np.ndarray, np.ndarray]:
    """A product trapezoid rule for N(0, I_r) on [-U_MAX, U_MAX]^r with step h (spectrally
    accurate for the analytic integrands here, also where they vary on a scale << 1)."""
    if r == 0:
        return np.zeros((1, 0)), np.ones(1)
    x = np.arange(-U_MAX, U_MAX + h / 2, h)
    w = np.exp(-0.5 * x * x)
    w /= w.sum()
    pts = np.stack(np.meshgrid(*([x] * r), indexing="ij"), axis=-1).reshape(-1, r)
    wts = np.prod(np.stack(np.meshgrid(*([w] * r), indexing="ij"), axis=-1).reshape(-1, r), 1)
    keep = wts > 1e-18 * wts.max()
    return pts[keep], wts[keep] / wts[keep].sum()


def xi_moments(sigma: Function, c: np.ndarray, M: np.ndarray, xi: np.ndarray,
                wxi: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per node and group: F = E sigma, m1 = E sigma', m2 = E[xi sigma'], v = Var sigma'
    over xi ~ N(0, 1) at pre-activation sqrt(c) xi + M. Stein's lemma puts m1 and m2 on sigma
    itself (smooth in M even for a kinked sigma) when c > 0."""
    sc = np.sqrt(c)
    pre = sc[None, None, :] * xi[None, :, None] + M[:, None, :]
    s, ds = sigma.value_and_derivative(pre)
    F = np.einsum("j,njg->ng", wxi, s)
    Eds2 = np.einsum("j,njg->ng", wxi, ds * ds)
    safe = np.where(sc > 0, sc, 1.0)
    m1_stein = np.einsum("j,njg->ng", wxi * xi, s) / safe
    m2_stein = np.einsum("j,njg->ng", wxi * (xi * xi - 1.0), s) / safe
    m1 = np.where(sc > 0, m1_stein, np.einsum("j,njg->ng", wxi, ds))
    m2 = np.where(sc > 0, m2_stein, 0.0)
    return F, m1, m2, np.maximum(Eds2 - m1 * m1, 0.0)


def factor(gram: np.ndarray) -> np.ndarray:
    """``L`` (K x q) with ``L L^T = gram`` and q its numerical rank."""
    lam, vec = np.linalg.eigh((gram + gram.T) / 2)
    keep = lam > RANK_TOL * max(1.0, lam.max(initial=0.0))
    return vec[:, keep] * np.sqrt(lam[keep])[None, :]


def evaluate(g: Function | Callable, Z: np.ndarray) -> np.ndarray:
    if isinstance(g, Function):
        return np.asarray(g(Z[..., 0]), dtype=np.float64)
    return np.asarray(g(Z), dtype=np.float64)
