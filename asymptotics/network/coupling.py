"""The fields of the K-group equations when the groups' bulk outside E is coupled to their
coordinates on E (docs/DERIVATIONS.md §9.7): the interface of
:class:`asymptotics.network.channels.Channels` with the Gram of the special columns taken in
the resolvent of the outside columns.

Within group g the bulk's coordinates on ``[V, T]`` are ``b_E = A_g b_perp + eps`` (``eps``
independent of the part outside E, covariance ``Ecov_g``), so every special column is
``P_g B_perp a_(g,e) + P_g eps_e`` and, with ``W = (Dc^-1 + Vhat1 (x) I)^-1`` the bulk's
(:class:`asymptotics.network.bulk.GroupBulk`; block diagonal over its B device blocks, each
carrying its own ``a`` vectors, averaged),

    Acal[(g,e),(h,f)] = a_(g,e)^T W_gh a_(h,f) + delta_gh delta_g Ecov_g[e,f],
    X_TT = Acal_TT (I + M Acal_TT)^-1,   Phi_VT = Acal_VT (I + M Acal_TT)^-1,
    Phi_VV = Acal_VV - Acal_VT M (I + Acal_TT M)^-1 Acal_TV,     M = Vhat1 (x) I_k,
    psi = X_TT psihat + Phi_VT^T zetahat,   zeta = Phi_VT psihat + Phi_VV zetahat,

``F = s^T R s`` the quadratic form of ``(zetahat, psihat)`` with these blocks; the field parts
of Q are ``-dF/dVhat`` (``dW = -W (X1 (x) I) W + Kc dDc Kc^T``, tau moving by the bulk's
implicit derivative; F's dependence on ``(Acal, M)`` differentiated in closed form: with
``R = A (I + N A)^-1``, ``N = 0 (+) M`` on T, ``dF = w^T dA w - y_T^T dM y_T``, ``w = (I + N A)^-1
s``, ``y = R s``). With ``a = 0`` this is :class:`~asymptotics.network.channels.Channels`.
"""

from __future__ import annotations

import numpy as np

from asymptotics.network.bulk import GroupBulk
from asymptotics.network.channels import node_jacobian
from asymptotics.network.compiled.coupled import acal_diag, diag_w, field_q_fast, forms_from_wa
from asymptotics.network.schur import p_inverse
from asymptotics.spiked.kernels import channel_v, vhats

#: a point's first kappa rule solves the bulk's ``(V1, tau)`` subsystem by Newton with the exact
#: Jacobian (:func:`fp_map`, :func:`asymptotics.equations.solver.newton`; False: Anderson)
NEWTON = True

#: ``Acal`` with some ``D_g < 0`` by the Schur complement's solves, W not formed
#: (:meth:`CoupledChannels._wa_solve`; False: from W, :meth:`CoupledChannels._w_parts`)
SOLVE_ACAL = True


class CoupledChannels:
    """``a``: B x K x (r+k) x n coupling vectors (per device block, in the bulk's outside
    coordinates), ``ecov``: K x (r+k) x (r+k) residual covariances on ``[V, T]``."""

    def __init__(self, bulk: GroupBulk, a: np.ndarray, ecov: np.ndarray, r: int, k: int):
        self.bulk, self.r, self.k = bulk, r, k
        self.a = np.asarray(a, dtype=np.float64)
        self.ecov = np.asarray(ecov, dtype=np.float64)
        self.K = self.ecov.shape[0]
        m = r + k
        if self.a.shape != (bulk.B, self.K, m, bulk.n) or self.ecov.shape != (self.K, m, m):
            raise ValueError(f"coupling shapes must be a {(bulk.B, self.K, m, bulk.n)} and "
                             f"ecov {(self.K, m, m)}, got {self.a.shape} and {self.ecov.shape}")
        self.a_w = bulk.to_work(self.a)  # in the bulk's working basis
        self._key: tuple | None = None
        self._val: tuple | None = None
        self._acal: tuple | None = None  # the last (key, Acal) with every D_g > 0
        self._blk: tuple | None = None  # (that Acal, its :meth:`blocks`)
        iv, it = self._order()
        self._ix = (np.ix_(iv, iv), np.ix_(iv, it), np.ix_(it, it))
        order = np.concatenate([iv, it])
        self._ord, self._ix_ord, self._eye_k = order, np.ix_(order, order), np.eye(k)

    def forget(self) -> None:
        """Drop the kept results (W parts, Acal; the bulk's: :meth:`GroupBulk.forget`)."""
        self._key, self._val, self._acal, self._blk = None, None, None, None
        self.bulk.forget()

    def rotated(self, R: np.ndarray) -> CoupledChannels:
        """The same coupling with the V basis rotated by ``R`` (r x r; as the channels' V block
        ``R^T Sig R`` of :func:`asymptotics.network.solve.aligned_problem`)."""
        m = self.r + self.k
        Rb = np.eye(m)
        Rb[:self.r, :self.r] = R
        a = np.einsum("ie,bgin->bgen", Rb, self.a)
        ecov = np.einsum("ie,gij,jf->gef", Rb, self.ecov, Rb)
        return CoupledChannels(self.bulk, a, ecov, self.r, self.k)

    # -- the Gram of the special columns -------------------------------------------------
    def _w_parts(self, vhat1: np.ndarray, D: np.ndarray) -> tuple:
        key = (vhat1.tobytes(), D.tobytes())
        if self._key == key:
            return self._val
        W, _, Kc = self.bulk.wkc(vhat1, D)
        B, K, n = self.bulk.B, self.bulk.K, self.bulk.n
        m = self.r + self.k
        aT = np.swapaxes(self.a_w, 2, 3)  # (b, y, j, f)
        Wa = self.bulk.wa(W, aT)  # W a_(y,f): (b, x, i, y, f)
        Kta = None if Kc is None else np.matmul(self.a_w, Kc.reshape(B, K, n, K * n)).reshape(
            B, K, m, K, n).transpose(0, 3, 4, 1, 2)  # (not formed: Kc^T a in :meth:`_d_parts`)
        self._key, self._val = key, (D, Kc is not None, W, Wa, Kta)
        return self._val

    def _d_parts(self, vhat1: np.ndarray, D: np.ndarray) -> tuple:
        """Acal's derivative, linear in ``(X1, dD)``: ``P1[(x,y),g,e,h,f] = sum_b (W a)_(x;g,e)
        . (W a)_(y;h,f)``, ``P2[c,g,e,h,f] = sum_b (Kc^T a)_(c;g,e) . (Sig_c Kc^T a)_(c;h,f)``."""
        parts = self._w_parts(vhat1, D)
        if len(parts) == 7:
            return parts[5:]
        D, formed, _, Wa, Kta = parts
        B, K, n = Wa.shape[:3]
        if Kta is None:  # Kc_gc^T a = delta_gc a - sum_z Vhat1_zc W_zg a (Kc = I - W Vc)
            Kta = -np.einsum("zc,bzigf->bcigf", vhat1, Wa)
            for g in range(K):
                Kta[:, g, :, g, :] += np.swapaxes(self.a_w[:, g], 1, 2)
        m = self.r + self.k
        Wt = Wa.transpose(1, 3, 4, 0, 2).reshape(K, K * m, B * n)
        Wf = Wt.reshape(K * K * m, B * n)
        P1 = (Wf @ Wf.T).reshape(K, K * m, K, K * m).transpose(0, 2, 1, 3).reshape(
            K * K, K, m, K, m)
        Kt = Kta.transpose(1, 3, 4, 0, 2).reshape(K, K * m, B * n)
        if not formed:  # Sig_c Kc_gc^T a = W_cg a / D_c (Kc_gc = W_gc Sig_c^-1 / D_c)
            St = Wt / D[:, None, None]
        else:
            KS = np.matmul(self.bulk.sig_w[:, :, None], Kta.reshape(B, K, 1, n, K * m))
            St = KS.reshape(B, K, n, K, m).transpose(1, 3, 4, 0, 2).reshape(K, K * m, B * n)
        P2 = np.matmul(Kt, np.swapaxes(St, 1, 2)).reshape(K, K, m, K, m)
        self._val = (*parts, P1, P2)
        return P1, P2

    def acal(self, vhat1: np.ndarray, D: np.ndarray) -> np.ndarray:
        """``Acal`` (K (r+k) square, index ``g (r+k) + e``) at ``D = beta pi tau = delta``
        (with some ``D_g < 0``, W not formed: :meth:`_wa_solve`). With every ``D_g > 0`` the
        last one is kept (read-only; a point's completion asks for it five times)."""
        key = (vhat1.tobytes(), D.tobytes())
        if self._acal is not None and self._acal[0] == key:
            return self._acal[1]
        Wd = diag_w(self.bulk, vhat1, D)  # (W diagonal per direction: compiled)
        out = self._acal_np(vhat1, D, key) if Wd is None else acal_diag(Wd, self.a_w, D,
                                                                          self.ecov)
        if np.all(D > 0.0):  # (W's path: the same numbers whenever asked)
            out.flags.writeable = False
            self._acal = (key, out)
        return out

    def _acal_np(self, vhat1: np.ndarray, D: np.ndarray, key: tuple) -> np.ndarray:
        kept = self._key == key
        Wa = self._wa_solve(vhat1, D) if SOLVE_ACAL and not kept else None
        if Wa is None:
            Wa = self._w_parts(vhat1, D)[3]
        m = self.r + self.k
        B, K, n = Wa.shape[:3]
        ag = self.a_w.transpose(1, 2, 0, 3).reshape(K, m, B * n)  # (g, e, (b, i))
        Wg = Wa.transpose(1, 0, 2, 3, 4).reshape(K, B * n, K * m)  # (g, (b, i), (h, f))
        out = np.matmul(ag, Wg).reshape(K, m, K, m) / self.bulk.B
        for g in range(self.K):
            out[g, :, g, :] += D[g] * self.ecov[g]
        out = out.reshape(self.K * m, self.K * m)
        return 0.5 * (out + out.T)

    def _wa_solve(self, vhat1: np.ndarray, D: np.ndarray) -> np.ndarray | None:
        """``W a`` as :meth:`_w_parts` gives it (B x K x n x K x (r+k): ``(W_xy a_(y,f))_i``)
        where some ``D_g < 0`` (the spectra's real lam beyond the edge, THEORY.md §16.8: W
        symmetric indefinite) and a group is outside the base class, without forming W or
        ``S^-1`` (:mod:`asymptotics.network.schur`): with ``Y_i = P_i^-1 Vhat1_FR``,
        ``x_R = S^-1 (a_R - Y^T a_F)`` by one LU solve per block and ``x_F = P^-1 a_F - Y x_R``.
        None where it does not apply (then :meth:`_w_parts`)."""
        eig = self.bulk._eig
        if (eig is None or np.iscomplexobj(D) or not np.all(D != 0.0)
                or bool(np.all(D > 0.0))):
            return None
        s, rest, _, c, inv, _ = eig
        K = self.K
        if c >= K:
            return None
        vp, Dp = self.bulk._perm(vhat1, D)
        Pi = p_inverse(vp, Dp, s, c, spd=False)
        if Pi is None:
            return None
        B, n = s.shape
        m, mm = K - c, self.r + self.k
        Y = np.matmul(Pi, vp[:c, c:])  # (B, n, c, m)
        corr = vp[c:, c:] - np.matmul(vp[c:, :c], Y)  # (B, n, m, m)
        idx = np.arange(n)
        S = np.zeros((B, m, n, m, n))
        S[:, :, idx, :, idx] = corr.transpose(1, 0, 2, 3)  # (as schur.schur's S)
        for g in range(m):
            S[:, g, :, g, :] += rest[:, g] / Dp[c + g]
        # the right-hand sides: a_(y,f) in group y's slot (the permuted order: inv[y])
        R = np.zeros((B, K, n, K, mm))
        for y in range(K):
            R[:, inv[y], :, y, :] = np.swapaxes(self.a_w[:, y], 1, 2)
        R = R.reshape(B, K, n, K * mm)
        aF = R[:, :c].transpose(0, 2, 1, 3)  # (B, n, c, K mm)
        rhs = R[:, c:] - np.matmul(np.swapaxes(Y, 2, 3), aF).transpose(0, 2, 1, 3)
        try:
            xR = np.linalg.solve(S.reshape(B, m * n, m * n), rhs.reshape(B, m * n, K * mm))
        except np.linalg.LinAlgError:
            return None
        if not np.all(np.isfinite(xR)):
            return None
        xR = xR.reshape(B, m, n, K * mm)
        xF = np.matmul(Pi, aF) - np.matmul(Y, xR.transpose(0, 2, 1, 3))  # (B, n, c, K mm)
        X = np.concatenate([xF.transpose(0, 2, 1, 3), xR], axis=1)  # (B, K, n, K mm)
        return X[:, inv].reshape(B, K, n, K, mm)

    def dacal(self, vhat1: np.ndarray, D: np.ndarray, X1: np.ndarray, dD: np.ndarray
              ) -> np.ndarray:
        """The derivative of ``Acal`` along ``Vhat1 -> + X1``, ``D -> + dD``."""
        P1, P2 = self._d_parts(vhat1, D)
        out = (-np.tensordot(X1.ravel(), P1, axes=1) + np.tensordot(dD, P2, axes=1)) / self.bulk.B
        for g in range(self.K):
            out[g, :, g, :] += dD[g] * self.ecov[g]
        out = out.reshape(self.K * (self.r + self.k), -1)
        return 0.5 * (out + out.T)

    def _order(self) -> tuple[np.ndarray, np.ndarray]:
        """The indices of Acal's V and T parts (``(g, e)``, ``e < r``; ``(g, r + f)``)."""
        K, r, k = self.K, self.r, self.k
        m = r + k
        iv = np.array([g * m + e for g in range(K) for e in range(r)], dtype=np.int64)
        it = np.array([g * m + r + e for g in range(K) for e in range(k)], dtype=np.int64)
        return iv, it

    def _kron(self, vhat1: np.ndarray) -> np.ndarray:
        """``M = Vhat1 (x) I_k`` (``np.kron``'s products)."""
        K, k = vhat1.shape[0], self.k
        return (vhat1[:, None, :, None] * self._eye_k[None, :, None, :]).reshape(K * k, K * k)

    def _blocks_at(self, vhat1, dl):
        """:meth:`blocks` at ``(Vhat1, D)``, kept with the kept Acal (asked for three times)."""
        Ac = self.acal(vhat1, dl)
        if self._blk is not None and self._blk[0] is Ac:  # (the kept Acal: the same key)
            return self._blk[1]
        out = self.blocks(Ac, self._kron(vhat1))
        self._blk = self._blk if Ac.flags.writeable else (Ac, out)  # (kept with a kept Acal)
        return out

    def blocks(self, Ac, M):
        """``(Phi_VV, Phi_VT, X_TT)`` from ``Acal`` and ``M = Vhat1 (x) I_k``."""
        Avv, Avt, Att = Ac[self._ix[0]], Ac[self._ix[1]], Ac[self._ix[2]]
        n = Att.shape[0]
        Bi = np.linalg.inv(np.eye(n) + M @ Att)
        Xtt = Att @ Bi
        Pvt = Avt @ Bi
        Pvv = Avv - Avt @ M @ np.linalg.inv(np.eye(n) + Att @ M) @ Avt.T
        return Pvv, Pvt, Xtt

    # -- the interface of Channels ------------------------------------------------------
    def fields(self, vhat1, dl, zh, ph):
        Pvv, Pvt, Xtt = self._blocks_at(vhat1, dl)
        z, p = zh.ravel(), ph.ravel()
        psi = Xtt @ p + Pvt.T @ z
        zeta = Pvt @ p + Pvv @ z
        return zeta.reshape(self.K, self.r), psi.reshape(self.K, self.k)

    def zeta_system(self, vhat1, dl, ph):
        Pvv, Pvt, _ = self._blocks_at(vhat1, dl)
        return Pvv, Pvt @ ph.ravel()

    def field_q(self, vhat1, tau, beta, pi, zh, ph, dres=None):
        if (fast := field_q_fast(self, vhat1, tau, beta, pi, zh, ph)) is not None:
            return fast  # (W diagonal: compiled)
        K, D = self.K, beta * pi * tau
        Ac = self.acal(vhat1, D)
        M = self._kron(vhat1)
        u = np.concatenate([zh.ravel(), ph.ravel()])
        # F = u^T R u, R = A (I + N A)^-1 (A = Acal in the (V, T) order of u, N = 0 (+) M): dR =
        # Z^T dA Z - R dN R (Z = (I + N A)^-1), so dF = w^T dA w - y_T^T dM y_T, w = Z u, y = R u
        # (exact; the blocks of R are those of :meth:`blocks`)
        order, A, nv = self._ord, Ac[self._ix_ord], K * self.r
        N = np.zeros_like(A)
        N[nv:, nv:] = M
        w = np.linalg.solve(np.eye(A.shape[0]) + N @ A, u)
        yt = (A @ w)[nv:]
        m = self.r + self.k  # (w^T dA w is linear in (X1, dD), :meth:`dacal`: its coefficients)
        wa = np.zeros(K * m)
        wa[order] = w
        wa = wa.reshape(K, m)
        parts = self._w_parts(vhat1, D)
        if parts[1]:  # (Kc formed: the forms of P1, P2; else from W a, forms_from_wa)
            P1, P2 = self._d_parts(vhat1, D)
            c1 = np.einsum("xaebf,ae,bf->x", P1, wa, wa) / self.bulk.B
            c2 = np.einsum("caebf,ae,bf->c", P2, wa, wa) / self.bulk.B
        else:
            c1, c2 = forms_from_wa(parts[3], np.swapaxes(self.a_w, 2, 3), wa, vhat1, D)
        c2 = c2 + np.einsum("gef,ge,gf->g", self.ecov, wa, wa)
        Y = yt.reshape(K, self.k)
        cm = (c1 + (Y @ Y.T).ravel()).reshape(K, K)  # (the dM term: y_T^T (X1 (x) I) y_T)

        # -dF along each unit (dVhat1_gh, dVhat2_g): d tau is linear in them, so dV2 along a unit
        # is the matching column of the bulk's derivative matrix (read exactly: a product with
        # a unit vector); the products with non-finite entries go the general way
        lin = self.bulk.dlin(vhat1, tau, beta, pi)
        if not (np.all(np.isfinite(lin)) and np.all(np.isfinite(cm))):
            return self._field_q_general(vhat1, tau, beta, pi, c2, cm)
        nq = K * K
        q1, q2 = np.zeros((K, K)), np.zeros(K)
        for g in range(K):
            q2[g] = -float(beta * lin[nq:, nq + g] @ c2)
            for hh in range(K):
                q1[g, hh] = -float(beta * lin[nq:, g * K + hh] @ c2 - cm[g, hh])
        return 0.5 * (q1 + q1.T), q2

    def _field_q_general(self, vhat1, tau, beta, pi, c2, cm):
        """:meth:`field_q`'s unit derivatives through the bulk's ``dresolvent``."""
        K = self.K

        def d_f(dvh1, dvh2):
            _, dv2 = self.bulk.dresolvent(vhat1, tau, beta, pi, dvh1, dvh2)
            return float(beta * dv2 @ c2 - np.sum(dvh1 * cm))  # d delta_g = beta pi_g d tau_g

        q1, q2, eye = np.zeros((K, K)), np.zeros(K), np.eye(K)
        for g in range(K):
            q2[g] = -d_f(np.zeros((K, K)), eye[g])
            for hh in range(K):
                q1[g, hh] = -d_f(np.outer(eye[g], eye[hh]), np.zeros(K))
        return 0.5 * (q1 + q1.T), q2


# -- the bulk's (V1, tau) subsystem on a point's next kappa rule (DERIVATIONS.md §9.7) --------

def fp_jacobian(bulk, M, tau, beta, pi, dMv, dv2v) -> np.ndarray:
    """The Jacobian of ``y -> fmap(y) - y`` (the map of ``y = (V1, tau)`` of
    :func:`asymptotics.network.solve._bulk_v`) at the solution ``(Vhat1, tau) = (M, tau)``
    from the bulk's Hessian parts and ``-d(Vhat1, Vhat2)/d(V1, V2)`` (``dMv``, ``dv2v``;
    ``V2 = pi tau``): ``V1' = V1(Vhat1, D)``, ``tau' = 1/(lam + Vhat2 + e(Vhat1, D))``,
    ``D = beta pi tau``."""
    K, nq = pi.shape[0], pi.shape[0] * (pi.shape[0] + 1)
    HVV, HVD, ED = bulk.parts(M, tau, beta, pi)
    sc = np.concatenate([np.ones(K * K), pi])
    dM, dv2 = -dMv * sc[:, None, None], -dv2v * sc[:, None]
    dD = np.zeros((nq, K))
    dD[K * K:] = np.diag(beta * pi)
    dV1 = np.einsum("cdab,jab->jcd", HVV, dM) + np.einsum("cdg,jg->jcd", HVD, dD)
    dV1 = 0.5 * (dV1 + dV1.transpose(0, 2, 1))
    de = beta * np.einsum("abg,jab->jg", HVD, dM) + dD @ ED.T
    dt = -(tau * tau)[None, :] * (dv2 + de)
    return np.hstack([dV1.reshape(nq, K * K), dt]).T - np.eye(nq)


def chord_start(bulk, y: np.ndarray, vargs: tuple) -> tuple | None:
    """The chord's start and Jacobian for the ``(V1, tau)`` subsystem on a point's next kappa
    rule (:func:`asymptotics.network.solve._bulk_v`, DERIVATIONS.md §9.7), from the last rule's
    solution ``y`` and the bulk's state kept by the completion (``bulk.lin_last``: ``(Vhat1,
    tau, V1, e)`` there): one Newton step with the bulk linearised there (its exact Hessian
    parts) and the next rule's node sums (``vargs``: ``(w, mub1, mus2, A, lam, beta, pi)``),
    and the Jacobian of that rule's map with the same parts. None without a kept state."""
    lin = getattr(bulk, "lin_last", None)
    if lin is None:
        return None
    w, mb1, ms2, A, lam, beta, pi = vargs
    K = pi.shape[0]
    Mc, tc, V1c, ec = lin
    V1y, ty = y[:K * K].reshape(K, K), y[K * K:]
    iv = 1.0 / (1.0 + channel_v(V1y, pi * ty, mb1, ms2))
    Mn, v2n = vhats(iv, w, mb1, ms2, A)
    HVV, HVD, ED = bulk.parts(Mc, tc, beta, pi)
    dM, dD = Mn - Mc, beta * pi * (ty - tc)
    V1p = V1c + np.einsum("cdab,ab->cd", HVV, dM) + HVD @ dD
    ep = ec + beta * np.einsum("abg,ab->g", HVD, dM) + ED @ dD
    f = np.concatenate([(0.5 * (V1p + V1p.T)).ravel(), 1.0 / (lam + v2n + ep)])
    dMv, dv2v = node_jacobian(iv * iv, w, mb1, ms2, A)
    J = fp_jacobian(bulk, Mc, tc, beta, pi, dMv, dv2v)
    try:
        x1 = y - np.linalg.solve(J, f - y)
    except np.linalg.LinAlgError:
        return None
    if not np.all(np.isfinite(x1)):
        return None
    return x1, J


def newton_pays(bulk) -> bool:
    """Whether :data:`NEWTON` applies to ``bulk``: an evaluation factorises a Schur complement (a
    group outside the base class) or inverts ``I + Dc Vc`` (a singular Sig), and Newton's fewer
    evaluations pay for its Jacobians; with every group in the base class (W diagonal per
    direction) an evaluation is cheaper than a Jacobian: Anderson (THEORY.md §15)."""
    return bulk._eig is None or bulk._eig[3] < bulk.K


def fp_map(bulk, vargs: tuple, seen: dict | None = None) -> tuple:
    """``(fmap, jac)`` of the bulk's ``(V1, tau)`` subsystem (:func:`asymptotics.network.solve.
    _bulk_v`, DERIVATIONS.md §9.7; ``vargs``: ``(w, mub1, mus2, A, lam, beta, pi)``): ``fmap(y)``
    one evaluation of the bulk (its traces from ``jac``'s W at the same point, with :data:`NEWTON`),
    ``jac(y)`` the exact Jacobian of ``fmap(y) - y`` there (:func:`fp_jacobian`, tau' = fmap's).
    ``seen`` (Newton's dict): ``fmap`` forms W where ``jac`` was not asked at ``y`` and ``seen[
    "pred"] <= 1`` (Newton's: may be its last; the completion reads it), keeps ``(y, fmap(y))``."""
    w, mb1, ms2, A, lam, beta, pi = vargs
    K = pi.shape[0]

    def nodes(y):
        V1, tau = y[:K * K].reshape(K, K), y[K * K:]
        iv = 1.0 / (1.0 + channel_v(V1, pi * tau, mb1, ms2))
        return (iv, *vhats(iv, w, mb1, ms2, A), tau)

    def traces(M, D):  # (e, V1) from the W kept by jac at the same point, else None
        hit = bulk._memo.get(("wkc", M.tobytes(), D.tobytes())) if NEWTON else None
        if hit is None or hit[1] is not None:
            return None
        T = bulk.wtrace(hit[0]) / D[None, :]  # tr[Sig_g Kc_ag] = tr W_ag / D_g
        nV1 = D[:, None] * T.T / (beta * bulk.d)
        return np.einsum("ga,ag->g", M, T) / bulk.d, 0.5 * (nV1 + nV1.T)

    def fmap(y: np.ndarray) -> np.ndarray:
        _, M, v2, tau = nodes(y)
        D = beta * pi * tau
        if seen is not None and seen.get("jac") is not y and bulk._eig is not None and \
                seen.get("pred", 0.0) <= 1.0:  # (Newton's prediction: may be the last)
            bulk.wkc(M, D)
        e, nV1 = traces(M, D) or bulk.evaluate(M, D, beta)
        out = np.concatenate([nV1.ravel(), 1.0 / (lam + v2 + e)])
        (seen if seen is not None else {})["last"] = (y, out)
        return out

    def jac(y: np.ndarray) -> np.ndarray:
        (seen if seen is not None else {})["jac"] = y
        iv, M, v2, tau = nodes(y)
        dMv, dv2v = node_jacobian(iv * iv, w, mb1, ms2, A)
        J = fp_jacobian(bulk, M, tau, beta, pi, dMv, dv2v)
        kept = traces(M, beta * pi * tau)
        if kept is not None:  # tau's rows at tau' = fmap's (fp_jacobian's: tau' = tau)
            r = (1.0 / (tau * (lam + v2 + kept[0]))) ** 2
            J[K * K:, :] *= r[:, None]
            J[K * K:, K * K:] += np.diag(r - 1.0)
        return J

    return fmap, jac
