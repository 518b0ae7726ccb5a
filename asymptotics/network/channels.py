"""The fields of the K-group equations with anisotropic group bulks (docs/DERIVATIONS.md §9.3,
THEORY.md §15): the channels ``zeta = Phi_ZZ zetahat + Phi_ZT psihat``,
``psi = Phi_TZ zetahat + Phi_TT psihat`` and the field parts of ``(Q1, Q2)`` when the bulk rows
of group g have the normalised covariance ``Sig_g`` on the model's basis ``[V, T]`` (and the
identity elsewhere). With ``Sig_g = I`` this is §10.4 exactly (``Phi_ZZ = diag(delta_g)``,
``Phi_TT = beta V1``, ``Phi_ZT = 0``).

Leave-out of the k special columns ``Y_T = B T`` of ``Omega`` (Woodbury, rank k K): with
``A = blockdiag_g(delta_g Sig_g^TT)`` and ``M = Vhat1 (x) I_k`` (index ``g k + j``),
``Y_T^T R Y_T -> X = A (I + M A)^-1``; the V columns regress on the T columns within each group,
``y_V = Kc_g^T y_T + e``, ``Kc_g = (Sig_g^TT)^+ Sig_g^TV``, ``Cov e = E_g``, e independent of
``Omega``. With ``u = Kbig zetahat + psihat`` (``Kbig = blockdiag Kc_g``):

    psi = X u,   zeta = Kbig^T X u + blockdiag(delta_g E_g) zetahat,
    F = s^T R s = u^T X u + sum_g delta_g zetahat_g^T E_g zetahat_g,

and the field parts of ``Q1_gh``, ``Q2_g`` are ``-dF/dVhat1_gh``, ``-dF/dVhat2_g`` (the
derivatives of the resolvent's quadratic form; ``tau`` moves by implicit differentiation).
"""

from __future__ import annotations

import numpy as np

from asymptotics.spiked import kernels as _k
from asymptotics.spiked.kernels import channel_v, dresolvent, sizes, vhats


class Channels:
    """The per-group constants of the channels: ``Sig`` (K x (r+k) x (r+k)), split into the
    T block, the regression ``Kc`` and the residual covariance ``E``."""

    def __init__(self, sig: np.ndarray, r: int, k: int) -> None:
        sig = np.asarray(sig, dtype=np.float64)
        K = sig.shape[0]
        if sig.shape != (K, r + k, r + k):
            raise ValueError(f"channels must be K x (r+k) x (r+k) = {K} x {r + k} x {r + k}, "
                             f"got shape {sig.shape}")
        self.K, self.r, self.k = K, r, k
        self.stt = np.ascontiguousarray(sig[:, r:, r:])
        self.kbig = np.zeros((K * k, K * r))
        self.e = np.zeros((K, r, r))
        for g in range(K):
            stv = sig[g, r:, :r]
            kc = np.linalg.pinv(self.stt[g], rcond=1e-12) @ stv
            self.kbig[g * k:(g + 1) * k, g * r:(g + 1) * r] = kc
            e = sig[g, :r, :r] - stv.T @ kc
            self.e[g] = 0.5 * (e + e.T)

    def blockdiag(self, dl: np.ndarray, blocks: np.ndarray) -> np.ndarray:
        n = blocks.shape[1]
        out = np.zeros((self.K * n, self.K * n))
        for g in range(self.K):
            out[g * n:(g + 1) * n, g * n:(g + 1) * n] = dl[g] * blocks[g]
        return out

    def x_matrix(self, vhat1: np.ndarray, dl: np.ndarray) -> tuple[np.ndarray, ...]:
        """(X, A, M, B): ``X = A (I + M A)^-1`` and its pieces."""
        A = self.blockdiag(dl, self.stt)
        M = np.kron(vhat1, np.eye(self.k))
        B = np.linalg.inv(np.eye(self.K * self.k) + M @ A)
        return A @ B, A, M, B

    def fields(self, vhat1: np.ndarray, dl: np.ndarray, zh: np.ndarray,
               ph: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(zeta (K x r), psi (K x k)) from the conjugates (module docstring)."""
        X = self.x_matrix(vhat1, dl)[0]
        u = self.kbig @ zh.ravel() + ph.ravel()
        psi = X @ u
        zeta = self.kbig.T @ psi + self.blockdiag(dl, self.e) @ zh.ravel()
        return zeta.reshape(self.K, self.r), psi.reshape(self.K, self.k)

    def zeta_system(self, vhat1: np.ndarray, dl: np.ndarray,
                    ph: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``zeta = Phi_ZZ zetahat + c``: (Phi_ZZ, c) with ``c = Kbig^T X psihat``."""
        X = self.x_matrix(vhat1, dl)[0]
        pzz = self.kbig.T @ X @ self.kbig + self.blockdiag(dl, self.e)
        return pzz, self.kbig.T @ (X @ ph.ravel())

    def field_q(self, vhat1: np.ndarray, tau: np.ndarray, beta: float, pi: np.ndarray,
                zh: np.ndarray, ph: np.ndarray, dres=dresolvent) -> tuple[np.ndarray, np.ndarray]:
        """The field parts (Q1 K x K, Q2 K) = ``-dF/dVhat`` (module docstring); ``dres``: the
        bulk's derivative (default the isotropic one of §10.4)."""
        K = self.K
        dl = beta * pi * tau
        X, A, M, B = self.x_matrix(vhat1, dl)
        u = self.kbig @ zh.ravel() + ph.ravel()
        zq = np.array([zh[g] @ self.e[g] @ zh[g] for g in range(K)])

        def d_f(dvh1: np.ndarray, dvh2: np.ndarray) -> float:
            _, dv2 = dres(vhat1, tau, beta, pi, dvh1, dvh2)
            ddl = beta * dv2  # d delta_g = beta pi_g d tau_g = beta dV2_g
            dA = self.blockdiag(ddl, self.stt)
            dM = np.kron(dvh1, np.eye(self.k))
            dX = dA @ B - X @ (dM @ A + M @ dA) @ B
            return float(u @ dX @ u + ddl @ zq)

        q1 = np.zeros((K, K))
        q2 = np.zeros(K)
        zero1, zero2 = np.zeros((K, K)), np.zeros(K)
        for g in range(K):
            e2 = zero2.copy()
            e2[g] = 1.0
            q2[g] = -d_f(zero1, e2)
            for h in range(K):
                e1 = zero1.copy()
                e1[g, h] = 1.0
                q1[g, h] = -d_f(e1, zero2)
        return 0.5 * (q1 + q1.T), q2


#: the K-group problems on a kappa rule (:func:`spiked_problem`; the last 8 of at most
#: PROBLEM_NODES quadrature nodes)
PROBLEMS: dict = {}
PROBLEM_NODES = 20_000


def spiked_problem(params: dict, n_kappa: int | None, n_omega: int | None):
    """:func:`asymptotics.spiked.problem.build_spiked_problem` of ``params`` on a kappa rule,
    kept for the next point of the same groups (it does not depend on alpha; the parameters
    compared by value, objects such as the target by identity)."""
    from asymptotics.spiked.problem import build_spiked_problem

    prim = (list, tuple, float, int, str, type(None))
    objs = tuple(v for v in params.values() if not isinstance(v, prim))
    key = (tuple((k, repr(v) if isinstance(v, prim) else id(v))
                 for k, v in sorted(params.items())), n_kappa, n_omega)
    hit = PROBLEMS.get(key)
    if hit is None or any(a is not b for a, b in zip(hit[0], objs, strict=True)):
        hit = (objs, build_spiked_problem(**params, n_kappa=n_kappa, n_omega=n_omega))
        if hit[1].tables.weights.size <= PROBLEM_NODES:  # (a large rule is not kept)
            PROBLEMS[key] = hit
            while len(PROBLEMS) > 8:
                PROBLEMS.pop(next(iter(PROBLEMS)))
    return hit[1]


# -- the rows' outside scale in the mean channel (docs/DERIVATIONS.md §12, THEORY.md §15) -----

def mean_table(prob, scale: bool) -> np.ndarray:
    """The mean functions of the V-type channel coordinates on the kappa nodes of ``prob``:
    ``kappa`` (n x r: ``mub1_g kappa_a`` in the kernels) without the rows' outside scale; with
    it (``scale``), per group (n x K x (r+1)), ``mub1_g kappa_a`` and, for the scale
    coordinate ``S_i = (c_i - c_g) / (2 c_g)`` (DERIVATIONS.md §12), ``2 c_g nu_g``,
    ``nu_g = d mu0_g/d c_g`` by a central difference of the feature tables (relative step
    1e-4)."""
    t = prob.tables
    if not scale:
        return t.kappa
    hit = MEANS.get(id(prob))
    if hit is not None and hit[0] is prob:  # (the same problem object: its table, read only)
        return hit[1]
    out = _mean_table(prob)
    if t.weights.size > PROBLEM_NODES:  # (a large rule's problem is not kept either)
        return out
    out.flags.writeable = False
    MEANS[id(prob)] = (prob, out)
    while len(MEANS) > MEANS_SIZE:
        MEANS.pop(next(iter(MEANS)))
    return out


#: the scale mean tables of the last MEANS_SIZE problems (:func:`mean_table`; a kept problem is
#: the same object for every point of its setting and rule: the table depends on it alone)
MEANS: dict = {}
MEANS_SIZE = 16


def _mean_table(prob) -> np.ndarray:
    t = prob.tables
    from asymptotics.spiked.coefficients import feature_tables

    c = np.asarray(prob.bulk, dtype=np.float64)
    h = 1e-4 * np.where(c > 0, c, 1.0)
    up = feature_tables(prob.sigma, t.kappa, prob.loadings, c + h)[0]
    dn = feature_tables(prob.sigma, t.kappa, prob.loadings, np.maximum(c - h, 0.0))[0]
    nu = (up - dn) / (np.minimum(c, h) + h)[None, :]
    n, K, r = t.kappa.shape[0], c.size, t.kappa.shape[1]
    out = np.empty((n, K, r + 1))
    out[:, :, :r] = t.mub1[:, :, None] * t.kappa[:, None, :]
    out[:, :, r] = 2.0 * c[None, :] * nu
    return out


def _mean_parts(state, P, mu0, mb1, h, h1, h2):
    K, r, k = mb1.shape[1], P.shape[2], h1.shape[1]
    o = sizes(K, r, k)
    Z = state[o[4]:o[5]].reshape(K, r)
    Pk = state[o[5]:o[6]].reshape(K, k)
    b = mu0 @ state[o[6]:o[7]] + np.einsum("jgi,gi->j", P, Z)
    c = np.einsum("jg,jg->j", mb1, h1 @ Pk.T)
    return b, h2 - 2.0 * b * h + b * b - 2.0 * c


def error_parts(state, kap, mu0, mb1, ms2, h, h1, h2):
    """:func:`asymptotics.spiked.kernels.error_parts`; ``kap`` a :func:`mean_table` (n x K x r:
    each group's mean functions) or the nodes (n x r: the kernel)."""
    if kap.ndim == 2:
        return _k.error_parts(state, kap, mu0, mb1, ms2, h, h1, h2)
    K = mb1.shape[1]
    o = sizes(K, kap.shape[2], h1.shape[1])
    b, E0 = _mean_parts(state, kap, mu0, mb1, h, h1, h2)
    q = channel_v(state[o[0]:o[1]].reshape(K, K), state[o[1]:o[2]], mb1, ms2)
    V = channel_v(state[o[2]:o[3]].reshape(K, K), state[o[3]:o[4]], mb1, ms2)
    return b, E0, q, V


def hats_of(state, w, kap, mu0, mb1, ms2, h, h1, h2, A, delta):
    """:func:`asymptotics.spiked.kernels.hats_of` with ``kap`` as in :func:`error_parts`."""
    if kap.ndim == 2:
        return _k.hats_of(state, w, kap, mu0, mb1, ms2, h, h1, h2, A, delta)
    b, E0, q, V = error_parts(state, kap, mu0, mb1, ms2, h, h1, h2)
    iv = 1.0 / (1.0 + V)
    M, v2 = vhats(iv, w, mb1, ms2, A)
    Q1h, Q2h = vhats(iv * iv * (E0 + q + delta), w, mb1, ms2, A)
    a = w * iv
    zh = A * np.einsum("j,jgi->gi", a * (h - b), kap)
    ph = A * np.einsum("j,jg,ji->gi", a, mb1, h1)
    return M, v2, Q1h, Q2h, zh, ph, E0 + q, V


def mean_design(iv, w, kap, mu0, mb1, h, eps):
    """:func:`asymptotics.spiked.kernels.mean_design` with ``kap`` as in :func:`error_parts`."""
    if kap.ndim == 2:
        return _k.mean_design(iv, w, kap, mu0, mb1, h, eps)
    n, K = mb1.shape
    r = kap.shape[2]
    sq = np.sqrt(w * iv)
    Phi = np.zeros((n + K, K))
    Phi[:n] = sq[:, None] * mu0
    Phi[n:] = np.diag(np.sqrt(eps))
    Psi = np.zeros((n + K, K * r))
    Psi[:n] = (sq[:, None, None] * kap).reshape(n, K * r)
    ht = np.zeros(n + K)
    ht[:n] = sq * h
    return Phi, Psi, ht


def risk_of(state, w, kap, mu0, mb1, ms2, h, h1, h2) -> float:
    """:func:`asymptotics.spiked.kernels.risk_of` with ``kap`` as in :func:`error_parts`."""
    if kap.ndim == 2:
        return _k.risk_of(state, w, kap, mu0, mb1, ms2, h, h1, h2)
    _, E0, q, _ = error_parts(state, kap, mu0, mb1, ms2, h, h1, h2)
    return float(np.sum(w * (E0 + q)))


def node_jacobian(iv2, w, mb1, ms2, A) -> tuple[np.ndarray, np.ndarray]:
    """``-d(Vhat1, Vhat2)/d(V1, V2)`` (nq x K x K and nq x K, nq = K^2 + K: the columns
    ``V1_gh``, then ``V2_g``) from the node sums (``iv2 = 1/(1 + V)^2`` on the nodes)."""
    K = mb1.shape[1]
    nq = K * K + K
    dMv, dv2v = np.empty((nq, K, K)), np.empty((nq, K))
    for col in range(nq):
        qi = mb1[:, col // K] * mb1[:, col % K] if col < K * K else ms2[:, col - K * K]
        dMv[col], dv2v[col] = vhats(iv2 * qi, w, mb1, ms2, A)
    return dMv, dv2v
