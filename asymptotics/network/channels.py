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

from asymptotics.spiked.kernels import dresolvent


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
