"""What each giant step learns, fresh vs reused batch, at the user's d (docs/THEORY.md §14.5).

The update ``W_t - W_(t-1)`` of group g's rows is a common vector ``N_g`` (the same for every
row of the group: drift along theta, along the earlier spike directions, and the batch's
common noise) plus row parts (independent across rows). Its leading right singular vector is
an outlier problem (Benaych-Georges & Nadakuditi 2012, arXiv 0910.2120): the common part has
singular value ``sqrt(p lambda)`` (``lambda`` the top eigenvalue of ``sum_g pi_g N_g N_g^T``)
against row parts of norm ``rho``, so ``|<u, v>|^2 = 1/(1 + rho^2/(p lambda))`` at leading order
in ``rho^2/(p lambda)`` (order 1/p here: far above the transition). At finite d the
theta-coordinates of ``N_g`` fluctuate by ``O(d^-1/2)`` (the batch is finite); the expected
overlap is averaged over that Gaussian fluctuation (its covariance is computed from the step's
integrals), and so are the rows' overlaps ``|<w_i, theta_j>| / |w_i|``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from asymptotics.core import checks

from .reused import check_batch, factor_gram, first_step, second_step

SAMPLES = 4000  # draws of the finite-d fluctuation
LEARNED = 1e-6  # a drift above this is learned (the quadrature: ~1e-4 relative of O(0.1) drifts)


@dataclass(frozen=True)
class StepDirections:
    """Per step t = 1..T (rows) and target direction j (columns): ``direction`` the expected
    ``|<u_t, theta_j>|`` at ``d`` (``direction_inf``: d -> infinity), ``row_overlap`` the
    expected mean over rows of ``|<w_i, theta_j>| / |w_i|`` after step t (row 0: at
    initialisation), ``drift`` the expected ``mean_i eps_i <w_i(t) - w_i(t-1), theta_j>`` at d;
    ``learned[t-1][j]``: the step moves the rows along theta_j at order one."""

    sigma: str
    target: str
    readout: str
    batch: str
    alpha0: float
    eta: tuple[float, ...]
    d: int
    beta: float
    direction: np.ndarray = field(repr=False)
    direction_inf: np.ndarray = field(repr=False)
    row_overlap: np.ndarray = field(repr=False)
    drift: np.ndarray = field(repr=False)
    learned: tuple[tuple[bool, ...], ...] = ()


def _folded(mu: np.ndarray, s: float) -> np.ndarray:
    """``E|mu + s G|``, G ~ N(0, 1)."""
    from scipy.special import erf

    if s <= 0:
        return np.abs(mu)
    return (s * math.sqrt(2 / math.pi) * np.exp(-mu * mu / (2 * s * s))
            + mu * erf(mu / (s * math.sqrt(2))))


def _top(vectors: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, float]:
    """Top eigenvector and eigenvalue of ``sum_g weights_g N_g N_g^T`` (rows of ``vectors``)."""
    lam, vec = np.linalg.eigh((vectors.T * weights) @ vectors)
    return vec[:, -1], float(lam[-1])


def _direction(common: np.ndarray, theta: np.ndarray, rows: np.ndarray, fractions: np.ndarray,
               p: float, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(E|<u, theta_j>| at d, |<u, theta_j>| at d -> inf)``: ``common`` (K x m, the first k
    coordinates along theta), ``theta`` (S x K x k samples of those coordinates at finite d),
    ``rows`` (K) the row parts' squared norms."""
    u, lam = _top(common, fractions)
    inf = np.abs(u[:k])
    if lam <= 0:
        return np.full(k, math.nan), np.full(k, math.nan)
    rho2 = float(fractions @ rows)
    shrink = 1.0 / math.sqrt(1.0 + rho2 / (p * lam))
    out = np.zeros(k)
    for S in theta:
        N = common.copy()
        N[:, :k] = S
        v, lv = _top(N, fractions)
        out += np.abs(v[:k])
    return out / len(theta) * shrink, inf


def step_directions(sigma: str, target: str, *, alpha0: float, eta: float | Sequence[float],
                    d: int, batch: str = "fresh", readout: object = "constant",
                    beta: float = 1.0, steps: int = 2, seed: int = 0) -> StepDirections:
    """Overlaps of each step's leading right singular vector with the target directions, and of
    the rows with them, at dimension ``d`` (module docstring; THEORY.md §14.5); steps 1..2."""
    from asymptotics.coefficients.functions import get_function
    from asymptotics.spiked.problem import resolve_target
    from asymptotics.spiked.readouts import parse_readout

    check_batch(batch)
    steps = checks.integer("steps", steps, 1)
    if steps > 2:
        raise ValueError(f"steps must be 1 or 2 for step_directions, got {steps}")
    d = checks.integer("d", d, 2)
    alpha0 = checks.real("alpha0", alpha0, 0.0, lo_open=True)
    beta = checks.real("beta", beta, 0.0, lo_open=True)
    etas = (float(eta),) * steps if isinstance(eta, (int, float)) else tuple(map(float, eta))
    if len(etas) != steps or min(etas) < 0:
        raise ValueError(f"eta must be one value >= 0 or one per step (steps={steps}), got {eta!r}")
    s = get_function(sigma)
    g, k, _ = resolve_target(target)
    ro = parse_readout(readout)
    values = np.asarray(ro.values, dtype=np.float64)
    fr = np.asarray(ro.weights, dtype=np.float64)
    K, p = values.size, beta * d
    rng = np.random.default_rng(seed)
    f1 = first_step(s, g, values=values, fractions=fr, k=k, eta=etas[0], alpha0=alpha0)
    # step 1: N_g = eta_1 eps_g m1 (E[e0 z] theta + |b| b); theta-fluctuation common to groups
    scale1 = etas[0] * values * f1.m1
    common1 = np.hstack([f1.a, f1.l[:, None]])
    g1 = rng.standard_normal((SAMPLES, k)) * np.sqrt(f1.e0_z_cov / (alpha0 * d))
    fl1 = scale1[None, :, None] * g1[:, None, :]
    rows1 = (f1.A - 1.0) ** 2 + f1.nu**2  # along w0, and the row noise
    direction, direction_inf = np.zeros((steps, k)), np.zeros((steps, k))
    direction[0], direction_inf[0] = _direction(common1, f1.a[None] + fl1, rows1, fr, p, k)
    a1, L1, c1 = f1.state()
    row = np.zeros((steps + 1, k))
    row[0] = math.sqrt(2 / (math.pi * d))
    norm1 = np.sqrt(c1 + np.sum(a1 * a1, 1) + np.sum(L1 * L1, 1))
    noise1 = (etas[0] * values)[:, None] ** 2 * f1.v * f1.e0_sq_z[None, :] / alpha0  # (K, k)
    bulk1 = f1.A[:, None] ** 2 + noise1  # the rows' bulk along theta_j, times d
    row[1] = _rows(f1.a[None] + fl1, bulk1, norm1, fr, d)
    learned = [tuple(bool(x) for x in np.any(np.abs(f1.a) > LEARNED, axis=0))]
    drift = np.zeros((steps, k))
    drift[0] = (fr * values) @ f1.a
    if steps == 2:
        kw = dict(values=values, fractions=fr, k=k, eta1=etas[0], eta2=etas[1], alpha0=alpha0,
                  self_term=batch == "reused")
        sec = second_step(f1, s, g, **kw)
        sd1 = np.sqrt(f1.e0_z_cov / (alpha0 * d))  # the step-1 theta-fluctuation g1, per axis
        g1 = np.empty((SAMPLES, k))
        fl2 = np.empty((SAMPLES, K, k))
        m1 = f1.m1 if f1.m1 != 0 else 1.0
        for j in range(k):  # the joint law of (g1_j, step-2 fluctuations of the K groups)
            c12 = sec.cross[:, j] / (m1 * d)
            cov = np.block([[np.array([[sd1[j] ** 2]]), c12[None, :]],
                            [c12[:, None], sec.theta_cov[:, :, j] / d]])
            lam, vec = np.linalg.eigh((cov + cov.T) / 2)
            root = (vec * np.sqrt(np.maximum(lam, 0))) @ vec.T  # symmetric: no sign choice
            draws = rng.standard_normal((SAMPLES, K + 1)) @ root
            g1[:, j], fl2[:, :, j] = draws[:, 0], draws[:, 1:]
        # the second step's drift depends on the first step's finite-d loading a_1 + scale1 g1:
        # a quadratic in g1 per axis (stencil +-sqrt(3) sd: exact in the Gaussian mean)
        d_theta = np.broadcast_to(sec.d_theta, (SAMPLES, K, k)).copy()
        hs = []  # hess * sd1^2 per axis: the Gaussian mean of the quadratic
        for j in range(k):
            h = math.sqrt(3.0) * sd1[j]
            if h <= 0 or not np.any(scale1):
                continue
            shifted = []
            for sgn in (1.0, -1.0):
                a = f1.a.copy()
                a[:, j] += sgn * h * scale1
                shifted.append(second_step(replace(f1, a=a), s, g, **kw).d_theta)
            jac = (shifted[0] - shifted[1]) / (2 * h)
            hess = (shifted[0] - 2 * sec.d_theta + shifted[1]) / h**2
            hs.append(hess * sd1[j] ** 2)
            t = g1[:, j][:, None, None]
            d_theta += jac[None] * t + 0.5 * hess[None] * t * t
        exact = sec.d_theta + 0.5 * sum(hs)  # the mean over g1 (E t^2 = sd1^2), not sampled
        drift[1] = (fr * values) @ exact
        Lc = factor_gram(sec.C)
        common2 = np.hstack([sec.d_theta, sec.d_b[:, None], Lc])
        rows2 = sec.d_w0**2 + sec.d_n**2 + np.maximum(sec.row_var, 0.0)
        direction[1], direction_inf[1] = _direction(common2, d_theta + fl2, rows2, fr, p, k)
        a2, L2, c2 = sec.state
        norm2 = np.sqrt(c2 + np.sum(a2 * a2, 1) + np.sum(L2 * L2, 1))
        grow = ((f1.nu + sec.d_n) / np.where(f1.nu > 0, f1.nu, 1.0))[:, None] ** 2
        bulk2 = (f1.A + sec.d_w0)[:, None] ** 2 + noise1 * grow + sec.row_theta_var
        spike2 = f1.a[None] + scale1[None, :, None] * g1[:, None, :] + d_theta + fl2
        row[2] = _rows(spike2, bulk2, norm2, fr, d)
        learned.append(tuple(bool(x) for x in np.any(np.abs(sec.d_theta) > LEARNED, axis=0)))
    return StepDirections(sigma=s.name, target=target, readout=ro.name, batch=batch,
                          alpha0=alpha0, eta=etas, d=d, beta=beta, direction=direction,
                          direction_inf=direction_inf, row_overlap=row, drift=drift,
                          learned=tuple(learned))


def _rows(spike: np.ndarray, bulk: np.ndarray, norm: np.ndarray, fractions: np.ndarray,
          d: int) -> np.ndarray:
    """``E mean_i |<w_i, theta_j>| / |w_i|``: group g's rows are
    ``spike_gj + sqrt(bulk_gj / d) G`` over ``norm_g`` (``spike``: samples S x K x k of the
    spike's theta-coordinates; the bulk's variance along theta_j is not c_g: the batch noise
    is heavier along the target)."""
    out = np.zeros(spike.shape[2])
    for gi, w in enumerate(fractions):
        for j in range(spike.shape[2]):
            out[j] += w * _folded(spike[:, gi, j], math.sqrt(bulk[gi, j] / d)).mean() / norm[gi]
    return out
