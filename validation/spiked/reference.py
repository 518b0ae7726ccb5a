"""A plain numpy reference of the semi-empirical equations of the K-group, r-spike model, written
independently of the theory package (a cross-check of its solver, never a production path).

Given a sampled bulk ``G`` (``p x d``), the spike basis ``V`` (``d x r``), the target directions
outside it ``T`` (``d x k``) and the group of every row, with ``Omega = G Pi G^T``,
``Pi = I - V V^T`` and ``P_g`` the projector on the rows of group ``g``:

- conditional coefficients per group (``xi ~ N(0, 1)``): ``mu0_g(k) = E sigma(u_g.k + sqrt(c_g)
  xi)``, ``mub1_g(k) = E[xi sigma(.)]`` (not divided by ``sqrt c_g``), ``mus_g(k)^2 = E sigma^2 -
  mu0_g^2 - mub1_g^2``; target ``h(k) = E g(Gamma^T k + rho omega)``, ``h2``, ``h1_j = E[omega_j
  g]``;
- channels ``V(k) = mub1^T V1 mub1 + sum_g mus_g^2 V2_g``, ``q(k)`` the same with ``Q1, Q2``,
  ``b(k) = mu0.m + sum_g mub1_g zeta_g.k``, ``E(k) = h2 + delta - 2 b h + b^2 - 2 sum_g mub1_g
  psi_g.h1 + q``;
- conjugates (``A = alpha/beta``, ``E_k`` over ``k ~ N(0, I_r)``): ``Vhat1 = A E[mub1 mub1^T /
  (1+V)]``, ``Vhat2_g = A E[mus_g^2/(1+V)]``, ``Qhat`` the same with the extra factor
  ``E/(1+V)``, ``zetahat_g = A E[mub1_g k (h - b)/(1+V)]``, ``psihat_g = A E[mub1_g h1/(1+V)]``;
- the mean channel, unpenalised: ``E[mu0 mu0^T/(1+V)] m = E[mu0 (h - sum_g mub1_g zeta_g.k)/(1+V)]``
  solved exactly at every iteration (least squares when the groups' ``mu0`` are dependent);
- spectral part: ``S = lam + sum_gh Vhat1_gh P_g Omega P_h + sum_g Vhat2_g P_g``, ``Gr = S^-1``,
  ``N`` the same with ``Qhat`` and without ``lam``, ``s = sum_g P_g G (V zetahat_g + T
  psihat_g)``; ``V1_gh = tr(P_g Omega P_h Gr)/p``, ``V2_g = tr(P_g Gr)/p``, ``Q1_gh = tr(P_g
  Omega P_h Gr N Gr)/p + s^T Gr P_g Omega P_h Gr s``, ``Q2_g = tr(P_g Gr N Gr)/p + s^T Gr P_g Gr
  s``, ``zeta_g = (P_g G V)^T Gr s``, ``psi_g = (P_g G T)^T Gr s``;
- risk ``R = E_k E(k) - delta`` at the fixed point (noiseless test inputs).

The ``V`` subsystem (``V1, V2`` and their conjugates) is closed: it is solved first (damped
Picard, one ``p x p`` inverse per iteration), then the rest with ``Gr`` fixed (two ``p x p``
products per iteration). Gauss-Hermite rules throughout; the relu moments are closed forms.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from scipy import linalg, special

from asymptotics.coefficients.functions import get_function
from asymptotics.coefficients.targets import target_callable

from ..protocol import montecarlo as mc
from ..protocol.simulator import STREAMS
from .simulator import SpikedSetting, directions

KAPPA_NODES = {1: 81, 2: 48, 3: 36}  # small risks need fine rules (tested against 1.5x more)
OMEGA_NODES = {1: 41, 2: 25, 3: 13}
XI_NODES = 101


class ReferenceError(RuntimeError):
    """The reference iteration did not converge (no number is returned then)."""


def _rule(n: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Tensor Gauss-Hermite rule for ``N(0, I_dim)``: nodes ``M x dim`` and weights (sum 1)."""
    x, w = hermegauss(n)
    w = w / w.sum()
    grids = np.meshgrid(*([x] * dim), indexing="ij")
    weights = np.meshgrid(*([w] * dim), indexing="ij")
    nodes = np.stack([g.ravel() for g in grids], axis=1)
    return nodes, np.prod(np.stack([g.ravel() for g in weights], axis=1), axis=1)


def _sigma_moments(sigma: str, a: np.ndarray, s: float) -> tuple[np.ndarray, ...]:
    """``E sigma(a + s xi)``, ``E[xi sigma(a + s xi)]``, ``E sigma(a + s xi)^2``."""
    if sigma == "relu":
        t = a / s
        cdf, pdf = special.ndtr(t), np.exp(-0.5 * t * t) / math.sqrt(2 * math.pi)
        return a * cdf + s * pdf, s * cdf, (a * a + s * s) * cdf + a * s * pdf
    f = get_function(sigma)
    x, w = hermegauss(XI_NODES)
    w = w / w.sum()
    vals = f(a[..., None] + s * x)
    return vals @ w, vals @ (w * x), (vals * vals) @ w


@dataclass(frozen=True)
class Tables:
    """Everything of the equations that does not depend on the order parameters."""

    kappa: np.ndarray  # M x r
    w: np.ndarray  # M
    mu0: np.ndarray  # K x M
    mub1: np.ndarray  # K x M
    mus2: np.ndarray  # K x M
    h: np.ndarray  # M
    h1: np.ndarray  # M x k
    h2: np.ndarray  # M


def tables(setting: SpikedSetting) -> Tables:
    """Conditional coefficients and target moments on the kappa rule."""
    r, k = setting.r, setting.k
    kappa, w = _rule(KAPPA_NODES[r], r)
    U = np.asarray(setting.loadings)
    mu0, mub1, mus2 = [], [], []
    for g in range(setting.K):
        m0, m1, m2 = _sigma_moments(setting.sigma, kappa @ U[g], math.sqrt(setting.bulk[g]))
        mu0.append(m0)
        mub1.append(m1)
        mus2.append(np.maximum(m2 - m0 * m0 - m1 * m1, 0.0))
    g_fn, _ = target_callable(setting.target)
    free = np.flatnonzero(setting.rho > 0)  # target directions with an unlearned part
    omega = np.zeros((1, k))
    wo = np.ones(1)
    if free.size:
        om, wo = _rule(OMEGA_NODES[free.size], free.size)
        omega = np.zeros((om.shape[0], k))
        omega[:, free] = om
    shift = kappa @ np.asarray(setting.overlaps)
    h, h2 = np.empty(len(w)), np.empty(len(w))
    h1 = np.empty((len(w), k))
    step = max(1, 2_000_000 // (omega.shape[0] * k))
    for s in range(0, len(w), step):  # chunks of kappa nodes
        gv = g_fn(shift[s:s + step, None, :] + omega[None] * setting.rho)  # m x L
        h[s:s + step], h2[s:s + step] = gv @ wo, (gv * gv) @ wo
        h1[s:s + step] = gv @ (wo[:, None] * omega)
    return Tables(kappa, w, np.array(mu0), np.array(mub1), np.array(mus2), h, h1, h2)


@dataclass
class State:
    """The order parameters."""

    V1: np.ndarray
    V2: np.ndarray
    Q1: np.ndarray
    Q2: np.ndarray
    zeta: np.ndarray  # K x r
    psi: np.ndarray  # K x k
    m: np.ndarray  # K


@dataclass(frozen=True)
class ReferenceResult:
    """Risk at the fixed point, the order parameters and the iterations used."""

    risk: float
    state: State
    iterations: int
    residual: float


class Reference:
    """The semi-empirical equations on one sampled bulk (module docstring)."""

    def __init__(self, setting: SpikedSetting, G: np.ndarray, V: np.ndarray,
                 T: np.ndarray) -> None:
        self.setting = setting
        self.t = tables(setting)
        p = G.shape[0]
        self.p = p
        self.groups = np.repeat(np.arange(setting.K), setting.group_sizes)
        if self.groups.size != p:
            raise ValueError(f"G has {p} rows, the setting {setting.p}")
        self.GV, self.GT = G @ V, G @ T
        self.Omega = G @ G.T - self.GV @ self.GV.T
        self.P = np.zeros((p, setting.K))
        self.P[np.arange(p), self.groups] = 1.0

    @classmethod
    def sampled(cls, setting: SpikedSetting, seed: np.random.SeedSequence) -> Reference:
        """On the bulk ``G``, ``V`` and ``T`` of one repetition of the simulator (its streams)."""
        children = mc.streams(seed, STREAMS)
        G = mc.sphere_rows(mc.BlockRows(children["weights"], setting.d), setting.p, setting.d)
        V, T, _ = directions(setting, np.random.default_rng(children["teacher"]),
                             np.random.default_rng(children["step"]))
        return cls(setting, G, V, T)

    # --- the kappa side ---------------------------------------------------------------------
    def channels(self, st: State) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``V(k)``, ``b(k)``, ``E(k)`` on the kappa rule."""
        t = self.t
        Vk = np.einsum("gm,gh,hm->m", t.mub1, st.V1, t.mub1) + st.V2 @ t.mus2
        qk = np.einsum("gm,gh,hm->m", t.mub1, st.Q1, t.mub1) + st.Q2 @ t.mus2
        b = st.m @ t.mu0 + np.sum(t.mub1 * (st.zeta @ t.kappa.T), axis=0)
        Ek = (t.h2 + self.setting.delta - 2 * b * t.h + b * b
              - 2 * np.sum(t.mub1 * (st.psi @ t.h1.T), axis=0) + qk)
        return Vk, b, Ek

    def mean_channel(self, st: State) -> np.ndarray:
        t = self.t
        Vk, _, _ = self.channels(st)
        D = t.w / (1 + Vk)
        lhs = (t.mu0 * D) @ t.mu0.T
        rhs = (t.mu0 * D) @ (t.h - np.sum(t.mub1 * (st.zeta @ t.kappa.T), axis=0))
        return np.linalg.lstsq(lhs, rhs, rcond=1e-12)[0]

    def v_hats(self, st: State, A: float) -> tuple[np.ndarray, np.ndarray]:
        t = self.t
        Vk, _, _ = self.channels(st)
        D = t.w / (1 + Vk)
        return A * (t.mub1 * D) @ t.mub1.T, A * t.mus2 @ D

    def other_hats(self, st: State, A: float) -> tuple[np.ndarray, ...]:
        t = self.t
        Vk, b, Ek = self.channels(st)
        D = t.w / (1 + Vk)
        DE = t.w * Ek / (1 + Vk) ** 2
        Qhat1, Qhat2 = A * (t.mub1 * DE) @ t.mub1.T, A * t.mus2 @ DE
        zetahat = A * (t.mub1 * (D * (t.h - b))) @ t.kappa
        psihat = A * (t.mub1 * D) @ t.h1
        return Qhat1, Qhat2, zetahat, psihat

    # --- the spectral side ------------------------------------------------------------------
    def resolvent(self, Vhat1: np.ndarray, Vhat2: np.ndarray, lam: float) -> np.ndarray:
        g = self.groups
        S = Vhat1[g][:, g] * self.Omega
        S[np.diag_indices_from(S)] += lam + Vhat2[g]
        c, low = linalg.cho_factor(S, lower=True, overwrite_a=True, check_finite=False)
        return linalg.cho_solve((c, low), np.eye(self.p), check_finite=False)

    def v_side(self, Gr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        V1 = self.P.T @ (self.Omega * Gr) @ self.P / self.p
        V2 = self.P.T @ np.diag(Gr) / self.p
        return V1, V2

    def rest_side(self, Gr: np.ndarray, Qhat1, Qhat2, zetahat, psihat) -> tuple[np.ndarray, ...]:
        g = self.groups
        N = Qhat1[g][:, g] * self.Omega
        N[np.diag_indices_from(N)] += Qhat2[g]
        X = Gr @ N @ Gr
        s = np.sum(self.GV * zetahat[g], axis=1) + np.sum(self.GT * psihat[g], axis=1)
        y = Gr @ s
        Py = self.P * y[:, None]
        Q1 = self.P.T @ (self.Omega * X) @ self.P / self.p + Py.T @ self.Omega @ Py
        Q2 = self.P.T @ np.diag(X) / self.p + self.P.T @ (y * y)
        return Q1, Q2, Py.T @ self.GV, Py.T @ self.GT

    # --- the solver -------------------------------------------------------------------------
    def solve(self, alpha: float, *, tol: float = 1e-10, damping: float = 0.5,
              max_iter: int = 3000) -> ReferenceResult:
        s = self.setting
        A = alpha / s.beta
        K, r, k = s.K, s.r, s.k
        st = State(np.zeros((K, K)), np.zeros(K), np.zeros((K, K)), np.zeros(K),
                   np.zeros((K, r)), np.zeros((K, k)), np.zeros(K))
        # 1. the closed V subsystem
        it, res = 0, math.inf
        step = damping
        while res > tol:
            it += 1
            if it > max_iter:
                raise ReferenceError(f"V subsystem: no convergence in {max_iter} iterations "
                                     f"(residual {res:.2e})")
            Gr = self.resolvent(*self.v_hats(st, A), s.lam)
            V1, V2 = self.v_side(Gr)
            new = np.concatenate([V1.ravel(), V2])
            old = np.concatenate([st.V1.ravel(), st.V2])
            new_res = float(np.max(np.abs(new - old)) / max(1.0, np.max(np.abs(new))))
            if new_res > res:  # oscillating: damp harder
                step = max(0.05, 0.7 * step)
            res = new_res
            st.V1 = (1 - step) * st.V1 + step * V1
            st.V2 = (1 - step) * st.V2 + step * V2
        Gr = self.resolvent(*self.v_hats(st, A), s.lam)
        st.V1, st.V2 = self.v_side(Gr)
        # 2. the rest with Gr fixed
        res, step, it2 = math.inf, damping, 0
        while res >= tol:
            it2 += 1
            if it2 > max_iter:
                raise ReferenceError(f"no convergence in {max_iter} iterations (residual "
                                     f"{res:.2e})")
            st.m = self.mean_channel(st)
            Q1, Q2, zeta, psi = self.rest_side(Gr, *self.other_hats(st, A))
            new = np.concatenate([Q1.ravel(), Q2, zeta.ravel(), psi.ravel()])
            old = np.concatenate([st.Q1.ravel(), st.Q2, st.zeta.ravel(), st.psi.ravel()])
            new_res = float(np.max(np.abs(new - old)) / max(1.0, np.max(np.abs(new))))
            if new_res > res:
                step = max(0.05, 0.7 * step)
            res = new_res
            st.Q1 = (1 - step) * st.Q1 + step * Q1
            st.Q2 = (1 - step) * st.Q2 + step * Q2
            st.zeta = (1 - step) * st.zeta + step * zeta
            st.psi = (1 - step) * st.psi + step * psi
        st.m = self.mean_channel(st)
        _, _, Ek = self.channels(st)
        risk = float(self.t.w @ Ek) - s.delta
        return ReferenceResult(risk, st, it + it2, res)


def reference_risk(setting: SpikedSetting, alpha: float, *, seed: int = 0) -> float:
    """The semi-empirical risk on the bulk of repetition 0 of ``SeedSequence(seed)``."""
    child = np.random.SeedSequence(int(seed)).spawn(1)[0]
    return Reference.sampled(setting, child).solve(alpha).risk
