"""One giant step as spiked random features (sRF), THEORY.md §3, extended to mu0 != 0.

After the step of THEORY.md §1, W1 = s W0 + N + r 1_p v^T with N a bulk of independent-looking
row noise, so that W1 ~ sqrt(c) W0' + r 1_p v^T, |v| = 1. Derivation (docs/DERIVATIONS.md §1):
at initialisation f(x; a0, W0) = mu0 + O(p^-1/2), so the residual is e = y - mu0 and

    E e   = mu0_star - mu0,     E e^2 = mu2_star + Delta - 2 mu0 mu0_star + mu0^2,
    u     = (1/n0) sum_i e_i x_i = mu1_star theta* + N(0, E e^2 / n0 I),
            |u|^2 -> mu1_star^2 + E e^2/alpha0
    r     = eta_tilde * E sigma'(z) * |u|,   v = u / |u|,   gamma = <v, theta*> = mu1_star / |u|
    s     = 1 + eta_tilde * c1 * E e   (c1 = E z sigma'(z): the isotropic part of E[e x x^T])
    c     = s^2 + eta_tilde^2 * s2 * E e^2 / alpha0.

With mu0 = 0 and c1 = 0 (odd sigma, e.g. tanh, erf) this is THEORY.md §3 verbatim (label noise
adding Delta to mu2_star). Not captured: the rank-one term eta_tilde c1 E[g He2] W0 theta theta^T
(nonzero only when both sigma and g have a second Hermite component), and the non-isotropy of the
c1-part of the bulk noise (W0 times a sample covariance); the validation report measures both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

from asymptotics.coefficients.cget import GECoefficients, ge_coefficients
from asymptotics.coefficients.functions import Function


@dataclass(frozen=True)
class SpikeMapping:
    """sRF parameters of one giant step: W1 = sqrt(c) W0 + r 1 v^T, gamma = <v, theta*>."""

    r: float
    c: float
    gamma: float
    rho: float
    scale: float  # s, the isotropic rescaling of W0 by the mean of the step
    residual_mean: float  # E e
    residual_second_moment: float  # E e^2
    u_norm: float  # |u|


class StepMoments(NamedTuple):
    """One giant step seen through its residual (THEORY.md §3, §11): E e, E e^2, |u|, gamma and,
    per initial readout value eps (a0 = eps/sqrt(p)), the group's (loading, scale s, bulk c)."""

    residual_mean: float
    residual_second_moment: float
    u_norm: float
    gamma: float
    groups: list[tuple[float, float, float]]


def step_moments(k: GECoefficients, *, alpha0: float, eta: float, delta: float,
                 values: tuple[float, ...], mean: float) -> StepMoments:
    """The residual e = y - mu0 E[eps] of the first batch (the initial output tends to
    mu0 E[eps]), |u|^2 = mu1*^2 + E e^2/alpha0, and for each readout value eps: loading
    eps eta mu1' |u|, scale s = 1 + eps eta c1 E e, bulk s^2 + eps^2 eta^2 s2 E e^2/alpha0
    (alpha0 = inf: an infinite first batch). The constant readout (eps = 1) is the sRF spike."""
    ee = k.mu0_star - k.mu0 * mean
    ee2 = k.mu2_star + delta - 2.0 * k.mu0 * mean * k.mu0_star + k.mu0**2 * mean**2
    u_norm = math.sqrt(k.mu1_star**2 + ee2 / alpha0)
    r = eta * k.dmu1 * u_norm
    groups = []
    for e in values:
        scale = 1.0 + e * eta * k.c1 * ee
        groups.append((e * r, scale, scale**2 + e**2 * eta**2 * k.s2 * ee2 / alpha0))
    gamma = k.mu1_star / u_norm if u_norm > 0 else 0.0
    return StepMoments(ee, ee2, u_norm, max(-1.0, min(1.0, gamma)), groups)


def srf_mapping(
    sigma: str | Function,
    target: str | Function,
    *,
    alpha0: float,
    eta: float,
    delta: float = 0.0,
    ge: GECoefficients | None = None,
) -> SpikeMapping:
    """(r, c, gamma) of one giant step with eta = eta_tilde p on n0 = alpha0 d samples."""
    if not (alpha0 > 0 and math.isfinite(alpha0)):
        raise ValueError(f"alpha0 must be > 0 and finite, got {alpha0}")
    if not (eta >= 0 and math.isfinite(eta)):
        raise ValueError(f"eta must be >= 0 and finite, got {eta}")
    if not (delta >= 0 and math.isfinite(delta)):
        raise ValueError(f"delta must be >= 0 and finite, got {delta}")
    k = ge if ge is not None else ge_coefficients(sigma, target)
    m = step_moments(k, alpha0=alpha0, eta=eta, delta=delta, values=(1.0,), mean=1.0)
    r, scale, c = m.groups[0]
    ee, ee2, u_norm, gamma = m.residual_mean, m.residual_second_moment, m.u_norm, m.gamma
    return SpikeMapping(
        r=float(r),
        c=float(c),
        gamma=float(gamma),
        rho=math.sqrt(max(1.0 - gamma * gamma, 0.0)),
        scale=float(scale),
        residual_mean=float(ee),
        residual_second_moment=float(ee2),
        u_norm=float(u_norm),
    )


def common_row_ratio(
    sigma: str | Function,
    target: str | Function,
    *,
    alpha0: float,
    eta: float,
    delta: float = 0.0,
    ge: GECoefficients | None = None,
) -> float:
    """omega = p |Pi wbar1_rand|^2 / c: the random part of the trained network's mean row (outside
    the spike v), relative to that of rows drawn independently with the bulk variance c
    (omega = 1, the closure of the finite-p theory and the sRF surrogate). docs/DERIVATIONS.md §8,
    "The network's initial output": the residual of the step is ``y - f(x; a0, W0)`` and the
    linear part ``mu1 <wbar0, x>`` of the initial output f adds ``-eta m1^2 wbar0`` to every row
    (m1 = E sigma'), so the mean row of the bulk is ``(s - eta m1^2) wbar0`` instead of
    ``s wbar0``; the fluctuation of ``n0^-1 sum_i f_i x_i`` adds a common row of squared norm
    ``eta^2 m1^2 (E sigma^2 - mu0^2) / (alpha0 p)``, and the row noise of the step averages to
    ``(c - s^2)/p``:

        omega = [(s - eta m1^2)^2 + c - s^2 + eta^2 m1^2 (mu1^2 + mu_star^2) / alpha0] / c,

    with (s, c) = (scale, c) of :func:`srf_mapping`. Leading order in 1/p; eta = 0 gives 1."""
    k = ge if ge is not None else ge_coefficients(sigma, target)
    m = srf_mapping(sigma, target, alpha0=alpha0, eta=eta, delta=delta, ge=k)
    shrink = m.scale - eta * k.dmu1 ** 2
    noise = eta ** 2 * k.dmu1 ** 2 * (k.mu1 ** 2 + k.mu_star ** 2) / alpha0
    return float((shrink ** 2 + m.c - m.scale ** 2 + noise) / m.c)
