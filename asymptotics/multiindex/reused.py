"""The second giant step on the SAME batch as the first (docs/THEORY.md §14).

Protocol of :mod:`asymptotics.multiindex.steps` with one batch of ``n0 = alpha0 d`` samples used
by every step. The first step is the fresh one. At the second step a training point ``nu`` sees
row ``j`` of group ``g`` through the leave-one-out field plus its own term of the first gradient
(``|x_nu|^2 / n0 = 1/alpha0``):

    H = A_g h0 + nu_g n + a_g.z + l_g b + (eta_1 eps_g / alpha0) e0(z) sigma'(h0),

``(z, b, h0, n)`` independent standard Gaussians (target coordinates, the first step's common
noise direction, the row's initial field, the row's first-step noise direction), ``A_g``,
``nu_g``, ``a_g``, ``l_g`` the first step's bulk rescaling, row noise, loading and outside spike,
``e0 = y - f0``. The second step's drifts are expectations under this TRAINING law (exact at
leading order: the leave-one-out weights are independent of ``x_nu``); its batch noise is
built from the same samples as the first step's, so its Gram with the first step's noise is
``E[c2 c1] / alpha0`` (the diagonal, Onsager-type part): the noise is split into that part
(along the old directions) and a remainder with the variance left (the closure, §14.3).
``self_term=False`` gives the fresh second step by the same code (a check of
:func:`asymptotics.multiindex.steps.advance`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from asymptotics.coefficients.functions import Function
from asymptotics.coefficients.gauss_rules import gauss_hermite
from asymptotics.spiked.coefficients import tensor_rule

NODES_Z = {1: 64, 2: 32, 3: 16}  # Gauss-Hermite nodes per target axis, by k
NODES_B = 16  # on the first step's noise direction
NODES_H0 = 40  # on the row's initial field
NODES_N = 32  # on the row noise (the smoothing tables)
TABLE_STEP = 0.01  # grid step of the smoothing tables (at most TABLE_MAX points)
TABLE_MAX = 4_000
PRUNE = 1e-10  # z nodes with a smaller relative weight are dropped
# the second step's integral: (z, b) nodes of joint relative weight below PRUNE_OUTER and h0
# nodes below PRUNE_H0 are dropped (the smoothing tables keep the full rules' range); against
# the unpruned rules: <= 5e-8 of each part's scale, risk <= 3e-11 (benchmarks/bench_reused.py)
PRUNE_OUTER = 1e-12
PRUNE_H0 = 1e-10


@dataclass(frozen=True)
class FirstStep:
    """The first step from the initial state, per group: loading ``a`` (K x k), bulk rescaling
    ``A``, row-noise norm ``nu``, outside spike ``l`` along the common noise ``b`` (norm
    ``b_norm``), the moments of ``e0 = y - f0`` and of ``sigma'`` at initialisation."""

    a: np.ndarray
    A: np.ndarray
    nu: np.ndarray
    l: np.ndarray
    b_norm: float
    f0: float
    m1: float
    v: float
    e0_sq: float
    e0_z_cov: np.ndarray = field(repr=False)  # Var(e0 z_j)
    e0_sq_z: np.ndarray = field(repr=False)  # E[e0^2 z_j^2]

    def state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(a, L, c)``: the same state as the fresh mapping's first step."""
        L = self.l[:, None] if self.b_norm > 0 else np.zeros((self.l.size, 0))
        return self.a, factor_gram(L @ L.T), self.A**2 + self.nu**2


@dataclass(frozen=True)
class SecondStep:
    """The second step's parts per group (each already multiplied by ``eta_2 eps_g``): drift
    along theta ``d_theta`` (K x k), along the first noise direction ``d_b``, the common noise
    remainder Gram ``C`` (K x K), the row's parts along ``w0`` and the first row noise, the row
    noise remainder ``row_var``, the theta-fluctuation covariance per unit ``1/d`` (K x K x k,
    with the first step's in ``cross``), and the new state ``(a, L, c)`` (THEORY.md §12.1)."""

    self_term: bool
    d_theta: np.ndarray
    d_b: np.ndarray
    C: np.ndarray
    d_w0: np.ndarray
    d_n: np.ndarray
    row_var: np.ndarray
    theta_cov: np.ndarray = field(repr=False)  # (K, K, k)
    cross: np.ndarray = field(repr=False)  # (K, k): times eta_1 eps_g for step 1's group g
    row_theta_var: np.ndarray = field(repr=False)  # (K, k): the row noise along theta_j, x d
    state: tuple = field(repr=False)


def first_step(sigma: Function, g, *, values: np.ndarray, fractions: np.ndarray, k: int,
               eta: float, alpha0: float) -> FirstStep:
    """The fresh first step in the variables of the module docstring (THEORY.md §12.2)."""
    xi, wxi = gauss_hermite(NODES_H0)
    s, ds = sigma.value_and_derivative(xi)
    m1, m2 = float(wxi @ ds), float(wxi @ (xi * ds))
    v = max(float(wxi @ (ds * ds)) - m1 * m1, 0.0)
    f0 = float(fractions @ values) * float(wxi @ s)
    Z, wz = tensor_rule(k, NODES_Z.get(k, 12))
    e0 = _evaluate(g, Z) - f0
    e0_z = wz @ (e0[:, None] * Z)
    e0_sq = float(wz @ (e0 * e0))
    cov = wz @ ((e0 * e0)[:, None] * Z * Z) - e0_z**2
    b_norm = math.sqrt(e0_sq / alpha0) if math.isfinite(alpha0) else 0.0
    scale = eta * values
    return FirstStep(a=scale[:, None] * m1 * e0_z[None, :], A=1.0 + scale * float(wz @ e0) * m2,
                     nu=np.abs(scale) * math.sqrt(e0_sq * v / alpha0), l=scale * m1 * b_norm,
                     b_norm=b_norm, f0=f0, m1=m1, v=v, e0_sq=e0_sq, e0_z_cov=cov,
                     e0_sq_z=wz @ ((e0 * e0)[:, None] * Z * Z))


class _Tables:
    """``E_n[phi(nu n + X)]`` on a uniform grid of X for phi = sigma, sigma', sigma'^2 and
    n sigma' (linear interpolation: error ``~ (step / nu)^2 / 8``)."""

    def __init__(self, sigma: Function, nu: float, lo: float, hi: float):
        n, wn = gauss_hermite(NODES_N)
        size = int(min(TABLE_MAX, max(64, (hi - lo) / TABLE_STEP))) + 1
        self.x = np.linspace(lo, hi, size)
        self.lo, self.h = lo, (hi - lo) / (size - 1)
        s, ds = sigma.value_and_derivative(self.x[:, None] + nu * n[None, :])
        tab = np.stack([s @ wn, ds @ wn, (ds * ds) @ wn, ds @ (wn * n)])
        slope = np.hstack([np.diff(tab, axis=1), np.zeros((4, 1))])
        self.tab, self.slope = np.ascontiguousarray(tab), np.ascontiguousarray(slope)

    def contract(self, base: np.ndarray, shift: np.ndarray, outer: tuple[np.ndarray, np.ndarray],
                 weights: tuple[np.ndarray, ...]) -> list[np.ndarray]:
        """For each function q, ``sum_h phi_q(X[:, h]) weights[q][h, c]`` (N x c_q) at
        ``X = base[None, :] + shift[:, None] + outer[0][:, None] * outer[1][None, :]``."""
        u = np.multiply.outer(outer[0] / self.h, outer[1])  # the grid coordinate of X
        u += ((base - self.lo) / self.h)[None, :]
        u += (shift / self.h)[:, None]
        np.clip(u, 0.0, self.x.size - 1.0, out=u)
        i = u.astype(np.intp)
        u -= i
        out = []
        for q, w in enumerate(weights):
            v = np.take(self.slope[q], i)
            v *= u
            v += np.take(self.tab[q], i)
            out.append(v @ w)
        return out


def second_step(first: FirstStep, sigma: Function, g, *, values: np.ndarray,
                fractions: np.ndarray, k: int, eta1: float, eta2: float, alpha0: float,
                self_term: bool = True) -> SecondStep:
    """The second step (module docstring; THEORY.md §14.2), on the same batch
    (``self_term=True``) or on a fresh one (``False``, no self term and no shared noise)."""
    K = values.size
    own = 1.0 if self_term else 0.0
    Zr, wzr, iz, bb, W, h0, wh = _rules(k)  # outer nodes (z, b) flattened, inner h0
    _, dsh0 = sigma.value_and_derivative(h0)
    e0_r = _evaluate(g, Zr) - first.f0  # on the z rule alone (the moment of `cross`)
    Z = Zr[iz]
    y = _evaluate(g, Z)
    e0 = y - first.f0
    kappa = own * eta1 * values / alpha0
    m = Z @ first.a.T + bb[:, None] * first.l[None, :]  # (N, K): spike coordinate per group
    # the h0-contractions of the four tabulated functions: F, M, Q, P0, PN, RU per node
    wts = (wh[:, None], np.stack([wh, wh * h0, wh * (dsh0 - first.m1)], axis=1), wh[:, None],
           wh[:, None])
    node = np.empty((K, 6, y.size))
    lo, hi = _range(first, sigma, g, kappa, k)
    tables: dict[float, _Tables] = {}  # groups with the same row noise share a table
    for gi in range(K):
        nu = float(first.nu[gi])
        if nu not in tables:
            same = first.nu == nu
            tables[nu] = _Tables(sigma, nu, lo[same].min() - 1, hi[same].max() + 1)
        tab = tables[nu]
        F, M3, Q, PN = tab.contract(first.A[gi] * h0, m[:, gi], (kappa[gi] * e0, dsh0), wts)
        node[gi] = np.vstack([F.T, M3[:, :1].T, Q.T, M3[:, 1:2].T, PN.T, M3[:, 2:].T])
    f1 = (fractions * values) @ node[:, 0]
    e1 = y - f1
    M = node[:, 1]
    eM = e1 * M  # (K, N)
    eMW = eM * W

    scale = eta2 * values
    d_theta = eMW @ Z
    eM_e0 = eMW @ e0
    with np.errstate(invalid="ignore", divide="ignore"):
        diag_b = own * eM_e0 / (alpha0 * first.b_norm) if first.b_norm > 0 else 0.0 * eM_e0
        d_b = eMW @ bb + diag_b
    C = eMW @ eM.T
    if self_term and first.e0_sq > 0:
        C = C - np.outer(eM_e0, eM_e0) / first.e0_sq
    C = C / alpha0
    e1W = e1 * W
    d_w0 = node[:, 3] @ e1W
    ru = node[:, 5] @ (e1W * e0)
    u_sq = first.e0_sq * first.v
    d_n = node[:, 4] @ e1W
    if self_term and u_sq > 0:
        d_n = d_n + np.sign(values) * ru / math.sqrt(alpha0 * u_sq)
    rq = (node[:, 2] - M**2) * (e1 * e1W)  # (K, N)
    r_sq = rq.sum(axis=1)
    row_var = (r_sq - (own * ru**2 / u_sq if u_sq > 0 else 0.0)) / alpha0
    r_sq_z = rq @ (Z * Z)
    # theta-coordinate fluctuations of the common vectors (per unit 1/d), and with step 1's
    theta_cov = (np.einsum("gn,hn,nj->ghj", eMW, eM, Z * Z)
                 - d_theta[:, None] * d_theta[None]) / alpha0
    cross = own * ((eMW * (first.m1 * e0)) @ (Z * Z)
                   - first.m1 * (wzr @ (e0_r[:, None] * Zr))[None, :] * d_theta) / alpha0
    d_theta, d_b, d_w0, d_n = (scale[:, None] * d_theta, scale * d_b, scale * d_w0, scale * d_n)
    C = np.outer(scale, scale) * C
    row_var = scale**2 * row_var
    row_theta_var = scale[:, None] ** 2 * r_sq_z / alpha0
    theta_cov = np.outer(scale, scale)[:, :, None] * theta_cov
    cross = scale[:, None] * cross  # per unit eta_1 eps_g of the first step's group g
    outside = np.hstack([(first.l + d_b)[:, None], factor_gram(C)])
    c2 = (first.A + d_w0) ** 2 + (first.nu + d_n) ** 2 + np.maximum(row_var, 0.0)
    state = (first.a + d_theta, factor_gram(outside @ outside.T), c2)
    return SecondStep(self_term, d_theta, d_b, C, d_w0, d_n, row_var, theta_cov, cross,
                      row_theta_var, state)


def _range(first: FirstStep, sigma: Function, g, kappa: np.ndarray, k: int) -> tuple:
    """Per group, the range of the argument ``X`` of the smoothing tables over the full rules
    (the tables' grid does not depend on the pruning): the range over (z, h0) plus over b."""
    Zr, wzr = tensor_rule(k, NODES_Z.get(k, 12))
    Zr = Zr[wzr > PRUNE * wzr.max()]
    b, _ = gauss_hermite(NODES_B)
    h0, _ = gauss_hermite(NODES_H0)
    _, dsh0 = sigma.value_and_derivative(h0)
    e0 = _evaluate(g, Zr) - first.f0
    lo, hi = np.empty(kappa.size), np.empty(kappa.size)
    for gi in range(kappa.size):
        inner = first.A[gi] * h0[None, :] + kappa[gi] * e0[:, None] * dsh0[None, :]
        mz = Zr @ first.a[gi]
        lb = first.l[gi] * b
        lo[gi] = float((mz + inner.min(axis=1)).min() + lb.min())
        hi[gi] = float((mz + inner.max(axis=1)).max() + lb.max())
    return lo, hi


def _rules(k: int) -> tuple:
    """The quadrature of :func:`second_step`: the z rule (nodes, weights), the kept (z, b)
    nodes (z index, b value) and their joint weights, the pruned h0 rule."""
    Zr, wzr = tensor_rule(k, NODES_Z.get(k, 12))
    keep = wzr > PRUNE * wzr.max()
    Zr, wzr = Zr[keep], wzr[keep] / wzr[keep].sum()
    b, wb = gauss_hermite(NODES_B)
    W = wzr[:, None] * wb[None, :]
    iz, ib = np.nonzero(W > PRUNE_OUTER * W.max())
    W = W[iz, ib]
    h0, wh = gauss_hermite(NODES_H0)
    keep = wh > PRUNE_H0 * wh.max()
    return Zr, wzr, iz, b[ib], W / W.sum(), h0[keep], wh[keep] / wh[keep].sum()


def _evaluate(g, Z: np.ndarray) -> np.ndarray:
    if isinstance(g, Function):
        return np.asarray(g(Z[..., 0]), dtype=np.float64)
    return np.asarray(g(Z), dtype=np.float64)


def factor_gram(gram: np.ndarray, tol: float = 1e-10) -> np.ndarray:
    """``L`` (K x q) with ``L L^T = gram``, q its numerical rank."""
    lam, vec = np.linalg.eigh((gram + gram.T) / 2)
    keep = lam > tol * max(1.0, lam.max(initial=0.0))
    return vec[:, keep] * np.sqrt(lam[keep])[None, :]


BATCHES = ("fresh", "reused")
MAX_REUSED_STEPS = 2


def check_batch(batch: object) -> str:
    """``batch`` itself if it is 'fresh' or 'reused' (one-line error otherwise)."""
    if not (isinstance(batch, str) and batch in BATCHES):
        raise ValueError(f"batch must be one of {', '.join(BATCHES)}, got {batch!r}")
    return batch


def check_reused(steps: int, delta: float) -> None:
    """What the reused-batch mapping covers: steps <= 2, no label noise (one-line errors)."""
    if steps > MAX_REUSED_STEPS:
        raise ValueError(f"steps must be <= {MAX_REUSED_STEPS} for batch='reused' (the third "
                         f"step on the same batch needs the response terms, THEORY.md §14.4), "
                         f"got {steps}")
    if delta != 0.0:
        raise ValueError(f"delta must be 0 for batch='reused' (label noise in the self term is "
                         f"not implemented), got {delta!r}")


def reused_second(sigma: Function, g, *, values: np.ndarray, fractions: np.ndarray, k: int,
                  eta: tuple[float, ...], alpha0: float) -> tuple:
    """The state ``(a, L, c)`` after the second step on the first step's batch (§14.2)."""
    first = first_step(sigma, g, values=values, fractions=fractions, k=k, eta=eta[0],
                       alpha0=alpha0)
    return second_step(first, sigma, g, values=values, fractions=fractions, k=k, eta1=eta[0],
                       eta2=eta[1], alpha0=alpha0, self_term=True).state
