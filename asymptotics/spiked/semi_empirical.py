"""The semi-empirical K-group theory (docs/THEORY.md §10.3): the equations solved with the exact
p x p resolvent of a given bulk G (rows of group g: sqrt(c_g) G_i + V u_g), its learned basis V
and the unlearned target directions T, instead of the deterministic block resolvent (§10.4).
Costs a p x p inverse per iteration and K^4 block traces (about 10 s a point at p = 900); the
p -> infinity closure of the mean channel. With K = r = 1 it is the one-spike semi-empirical
theory of a given first layer (``asymptotics.risk(model="srf", measure=from_weights(W, v,
theta))``), exactly.

Units: Omega = G Pi G^T (Pi = I - V V^T), fields s = sum_g P_g G (V zetahat_g + T psihat_g), and
V1_gh = tr(P_g Omega P_h R)/p, V2_g = tr(P_g R)/p, zeta = Zm zetahat + Xm psihat,
psi = Xm^T zetahat + Tm psihat with Zm = (P G V)^T R (P G V) etc. (the deterministic limits:
Zm -> diag(delta_g), Xm -> 0, Tm -> beta V1^T), Q = Lemp(Qhat) + (s^T R P_g Omega P_h R s,
s^T R P_g R s), Lemp(X)_gh = tr(P_g Omega P_h R N_X R)/p.
"""

from __future__ import annotations

import math

import numpy as np

from asymptotics.equations.solver import (
    ConvergenceError,
    SolverConfig,
    Status,
    relative_residual,
    solve,
)
from asymptotics.spiked.kernels import (
    channel_v,
    error_parts,
    hats_of,
    mean_design,
    mean_lstsq,
    risk_of,
    sizes,
    vhats,
)
from asymptotics.spiked.problem import SpikedProblem, build_spiked_problem
from asymptotics.spiked.solve import SpikedResult, cold_start, unpack_state


class Bulk:
    """A sampled bulk: G (p x d, rows of any norm), labels (group of each row), V (d x r),
    T (d x k), with the products the equations need."""

    def __init__(self, G: np.ndarray, labels: np.ndarray, V: np.ndarray, T: np.ndarray) -> None:
        self.G = np.asarray(G, dtype=np.float64)
        self.labels = np.asarray(labels)
        p, d = self.G.shape
        self.p, self.d = p, d
        Y = self.G - (self.G @ V) @ V.T
        self.Om = Y @ Y.T
        self.GV = self.G @ V
        self.GT = self.G @ T
        self.K = int(self.labels.max()) + 1
        self.idx = [np.flatnonzero(self.labels == g) for g in range(self.K)]

    def resolvent(self, lam: float, M: np.ndarray, v2: np.ndarray) -> dict:
        """R = S^-1 and the contractions of THEORY.md §10.3 at the conjugates (M, v2)."""
        lab, K, p, idx = self.labels, self.K, self.p, self.idx
        S = M[lab][:, lab] * self.Om
        S[np.diag_indices(p)] += lam + v2[lab]
        R = np.linalg.inv(S)
        # A_h = Omega P_h R (p x p); block traces give every trace of the equations
        A = [self.Om[:, ix] @ R[ix, :] for ix in idx]

        def blk(X, g, h):
            return X[np.ix_(idx[g], idx[h])]

        V1 = np.array([[np.sum(blk(self.Om, g, h) * blk(R, h, g).T) for h in range(K)]
                       for g in range(K)]) / p
        V2 = np.array([np.trace(blk(R, g, g)) for g in range(K)]) / p
        # traces for Lemp: T1[g,h,l,m] = tr(P_g Om P_h R P_l Om P_m R)/p, T2[g,h,l] = ... P_l R,
        # U1[g,l,m] = tr(P_g R P_l Om P_m R)/p, U2[g,l] = tr(P_g R P_l R)/p
        T1 = np.zeros((K, K, K, K))
        T2 = np.zeros((K, K, K))
        U1 = np.zeros((K, K, K))
        U2 = np.zeros((K, K))
        for g in range(K):
            for l in range(K):
                for h in range(K):
                    Ah_gl = blk(A[h], g, l)
                    for m in range(K):
                        T1[g, h, l, m] = np.sum(Ah_gl * blk(A[m], l, g).T)
                    T2[g, h, l] = np.sum(Ah_gl * blk(R, l, g).T)
                for m in range(K):
                    U1[g, l, m] = np.sum(blk(A[l].T, g, m) * blk(R, m, g).T)
                U2[g, l] = np.sum(blk(R, g, l) * blk(R, l, g).T)
        Zm = np.zeros((K, self.GV.shape[1], K, self.GV.shape[1]))
        Xm = np.zeros((K, self.GV.shape[1], K, self.GT.shape[1]))
        Tm = np.zeros((K, self.GT.shape[1], K, self.GT.shape[1]))
        for g in range(K):
            for h in range(K):
                Rgh = blk(R, g, h)
                Zm[g, :, h, :] = self.GV[idx[g]].T @ Rgh @ self.GV[idx[h]]
                Xm[g, :, h, :] = self.GV[idx[g]].T @ Rgh @ self.GT[idx[h]]
                Tm[g, :, h, :] = self.GT[idx[g]].T @ Rgh @ self.GT[idx[h]]
        return dict(R=R, V1=V1, V2=V2, T1=T1 / p, T2=T2 / p, U1=U1 / p, U2=U2 / p,
                    Zm=Zm.reshape(K * Zm.shape[1], -1), Xm=Xm.reshape(K * Xm.shape[1], -1),
                    Tm=Tm.reshape(K * Tm.shape[1], -1))

    def field_forms(self, res: dict, zh: np.ndarray, ph: np.ndarray) -> tuple:
        """(s^T R P_g Omega P_h R s, s^T R P_g R s) of the fields s."""
        s = np.zeros(self.p)
        for g, ix in enumerate(self.idx):
            s[ix] = self.GV[ix] @ zh[g] + self.GT[ix] @ ph[g]
        Rs = res["R"] @ s
        K = self.K
        q1 = np.array([[Rs[self.idx[g]] @ self.Om[np.ix_(self.idx[g], self.idx[h])]
                        @ Rs[self.idx[h]] for h in range(K)] for g in range(K)])
        q2 = np.array([Rs[ix] @ Rs[ix] for ix in self.idx])
        return q1, q2


def _lemp(res: dict, X1: np.ndarray, X2: np.ndarray) -> tuple:
    """Lemp(X) = (tr(P_g Om P_h R N R)/p, tr(P_g R N R)/p), N = sum X1_lm P_l Om P_m + X2_l P_l."""
    q1 = np.einsum("ghlm,lm->gh", res["T1"], X1) + np.einsum("ghl,l->gh", res["T2"], X2)
    q2 = np.einsum("glm,lm->g", res["U1"], X1) + np.einsum("gl,l->g", res["U2"], X2)
    return 0.5 * (q1 + q1.T), q2


def _v_map(prob: SpikedProblem, bulk: Bulk, A: float, x: np.ndarray) -> np.ndarray:
    t = prob.tables
    K = prob.fractions.shape[0]
    V1, V2 = x[:K * K].reshape(K, K), x[K * K:]
    iv = 1.0 / (1.0 + channel_v(V1, V2, t.mub1, t.mus2))
    M, v2 = vhats(iv, t.weights, t.mub1, t.mus2, A)
    res = bulk.resolvent(prob.lam, M, v2)
    return np.concatenate([res["V1"].ravel(), res["V2"]])


def _overlaps(prob, bulk, res, zh, ph, Qh1, Qh2):
    """(zeta, psi) from the fields and Q from Lemp + field forms (the literal map's overlaps)."""
    K, r = prob.loadings.shape
    zeta = (res["Zm"] @ zh.ravel() + res["Xm"] @ ph.ravel()).reshape(K, r)
    psi = (res["Xm"].T @ zh.ravel() + res["Tm"] @ ph.ravel()).reshape(K, prob.k)
    f1, f2 = bulk.field_forms(res, zh, ph)
    q1, q2 = _lemp(res, Qh1, Qh2)
    return zeta, psi, q1 + f1, q2 + f2


def _full_map(prob: SpikedProblem, bulk: Bulk, A: float, x: np.ndarray) -> np.ndarray:
    t = prob.tables
    a = (t.weights, t.kappa, t.mu0, t.mub1, t.mus2, t.h, t.h1, t.h2, A, prob.delta)
    M, v2, Qh1, Qh2, zh, ph, E, V = hats_of(x, *a)
    res = bulk.resolvent(prob.lam, M, v2)
    zeta, psi, Q1, Q2 = _overlaps(prob, bulk, res, zh, ph, Qh1, Qh2)
    K = prob.fractions.shape[0]
    Phi, Psi, ht = mean_design(1.0 / (1.0 + V), t.weights, t.kappa, t.mu0, t.mub1, t.h,
                               np.zeros(K))
    m = mean_lstsq(Phi, ht - Psi @ zeta.ravel())
    return np.concatenate([Q1.ravel(), Q2, res["V1"].ravel(), res["V2"], zeta.ravel(),
                           psi.ravel(), m])


def _complete(prob: SpikedProblem, bulk: Bulk, A: float, v: np.ndarray) -> tuple:
    t = prob.tables
    K, r = prob.loadings.shape
    o = sizes(K, r, prob.k)
    V1, V2 = v[:K * K].reshape(K, K), v[K * K:]
    iv = 1.0 / (1.0 + channel_v(V1, V2, t.mub1, t.mus2))
    M, v2 = vhats(iv, t.weights, t.mub1, t.mus2, A)
    res = bulk.resolvent(prob.lam, M, v2)
    ph = A * np.einsum("j,jg,ji->gi", t.weights * iv, t.mub1, t.h1)
    Phi, Psi, ht = mean_design(iv, t.weights, t.kappa, t.mu0, t.mub1, t.h, np.zeros(K))
    U, sv, _ = np.linalg.svd(Phi, full_matrices=False)
    Qb = U[:, : int(np.sum(sv > 1e-12 * sv[0]))] if sv.size and sv[0] > 0 else U[:, :0]
    Psr = Psi - Qb @ (Qb.T @ Psi)
    htr = ht - Qb @ (Qb.T @ ht)
    # zeta = Zm zetahat + Xm psihat, zetahat = A (Psr^T htr - Psr^T Psr zeta) (m eliminated)
    Zm = res["Zm"]
    sys_ = np.eye(K * r) + A * Zm @ (Psr.T @ Psr)
    zeta = np.linalg.solve(sys_, A * Zm @ (Psr.T @ htr) + res["Xm"] @ ph.ravel())
    m = mean_lstsq(Phi, ht - Psi @ zeta)
    zh = A * (Psi.T @ (ht - Psi @ zeta - Phi @ m))
    psi = res["Xm"].T @ zh + res["Tm"] @ ph.ravel()
    x = np.zeros(o[-1])
    x[o[2]:o[3]] = V1.ravel()
    x[o[3]:o[4]] = V2
    x[o[4]:o[5]] = zeta
    x[o[5]:o[6]] = psi
    x[o[6]:] = m
    b, E0, q, V = error_parts(x, t.kappa, t.mu0, t.mub1, t.mus2, t.h, t.h1, t.h2)
    iv2 = iv * iv
    R1, R2 = vhats(iv2 * (E0 + prob.delta), t.weights, t.mub1, t.mus2, A)
    f1, f2 = bulk.field_forms(res, zh.reshape(K, r), ph)
    c1, c2 = _lemp(res, R1, R2)
    nq = K * K + K
    c0 = np.concatenate([(c1 + f1).ravel(), c2 + f2])
    Mq = np.eye(nq)
    for col in range(nq):
        qi = (t.mub1[:, col // K] * t.mub1[:, col % K] if col < K * K
              else t.mus2[:, col - K * K])
        K1, K2 = vhats(iv2 * qi, t.weights, t.mub1, t.mus2, A)
        e1, e2 = _lemp(res, K1, K2)
        Mq[:, col] -= np.concatenate([e1.ravel(), e2])
    ok = bool(np.linalg.det(Mq) > 1e-10 and np.all(np.diag(Mq) > 0))
    qv = np.linalg.solve(Mq, c0)
    x[:o[1]] = qv[:K * K]
    x[o[1]:o[2]] = qv[K * K:]
    return x, ok


def risk_spiked_semi_empirical(alpha: float, *, G: np.ndarray, labels: np.ndarray,
                               V: np.ndarray, T: np.ndarray, strict: bool = False,
                               solver: SolverConfig = SolverConfig(), **params) -> SpikedResult:
    """The K-group theory on a given bulk (docs/THEORY.md §10.3): ``G`` (p x d) the bulk rows
    (the layer is sqrt(c_g) G_i + V u_g), ``labels`` the group of each row, ``V`` (d x r) and
    ``T`` (d x k) orthonormal. ``params``: those of :func:`risk_spiked` except ``fractions``
    (taken from ``labels``), ``beta`` (p/d) and ``p`` (the p -> infinity closure)."""
    labels = np.asarray(labels)
    p, d = np.shape(G)
    pi = np.bincount(labels, minlength=int(labels.max()) + 1) / p
    prob = build_spiked_problem(fractions=pi, beta=p / d, **params)
    if np.shape(V) != (d, prob.loadings.shape[1]) or np.shape(T) != (d, prob.k):
        raise ValueError(f"V must be d x r = {d} x {prob.loadings.shape[1]} and T d x k = "
                         f"{d} x {prob.k}, got {np.shape(V)} and {np.shape(T)}")
    bulk = Bulk(G, labels, V, T)
    A = alpha / prob.beta
    K = pi.shape[0]
    nonneg = tuple(i * (K + 1) for i in range(K)) + tuple(K * K + g for g in range(K))
    cfg = SolverConfig(solver.rtol / 10, solver.scale_floor, solver.max_iter, solver.damping,
                       solver.anderson)
    sol = solve(lambda x: _v_map(prob, bulk, A, x), cold_start(prob), cfg, nonneg=nonneg)
    o = sizes(K, prob.loadings.shape[1], prob.k)
    state = np.full(o[-1], np.nan)
    status, resid = sol.status, sol.residual
    if sol.converged:
        state, ok = _complete(prob, bulk, A, sol.x)
        resid = relative_residual(state, _full_map(prob, bulk, A, state), solver.scale_floor)
        if not ok:
            status = Status.OUT_OF_DOMAIN
        elif not resid <= solver.rtol:
            status = Status.MAX_ITER
    conv = status == Status.CONVERGED
    t = prob.tables
    risk = risk_of(state, t.weights, t.kappa, t.mu0, t.mub1, t.mus2, t.h, t.h1,
                   t.h2) if conv else math.nan
    if strict and not conv:
        raise ConvergenceError(f"semi-empirical K-group equations did not converge at "
                               f"alpha={alpha:g}: {status.message}")
    return SpikedResult(alpha=float(alpha), risk=float(risk), converged=bool(conv),
                        status=status.name.lower(), message=status.message,
                        iterations=int(sol.n_iter), residual=float(resid),
                        order=unpack_state(prob, state), state=tuple(state.tolist()),
                        **prob.params())
