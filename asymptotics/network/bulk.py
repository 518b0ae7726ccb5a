"""The K-group generalised Marchenko-Pastur bulk (docs/DERIVATIONS.md §9.7, THEORY.md §15): the
deterministic block resolvent of §10.4 when the bulk rows of group g have the population
covariance ``Sig_g / d`` outside the span E (normalised, ``tr Sig_g = d``), the K matrices not
commuting.

With ``Vhat1 = C C^T``, ``Omega``'s quadratic form is ``X X^T``, row i of X the vector
``G_i (x) C_g(i)`` of covariance ``Sig_g/d (x) c_g c_g^T``; the deterministic equivalent of
``R = (Lam + X X^T)^-1`` (Lam = diag(lam + Vhat2_g)) is diagonal within each group,

    tau_g = 1/(lam + Vhat2_g + e_g),   e_g = d^-1 tr[Sig_g (Vc Kc)_gg],
    Kc = (I + Dc Vc)^-1,   Dc = blockdiag_g(D_g Sig_g),   Vc = Vhat1 (x) I_d,

with ``D_g = beta pi_g tau_g``,

and ``(V1, V2)`` are the derivatives of ``Psi = (beta d)^-1 log det(I + Dc Vc)`` at fixed tau
(an envelope: tau is its stationary point): ``V1_gh = (beta d)^-1 D_g tr[Kc_hg Sig_g]``,
``V2_g = pi_g tau_g``. With ``Sig_g = I`` this is :func:`asymptotics.spiked.kernels.resolvent`;
with K = 1 it is the generalised MP law of :func:`asymptotics.measures.channels.population_bulk`.
The derivatives along ``(Vhat1, Vhat2)`` (for ``Q``) are the Hessian of ``Psi`` with the
implicit differentiation of the tau equation. ``Sig`` is held as independent diagonal blocks
(B blocks of size n, d = B n: a pooled device). Every quantity is a trace over a block, blind
to a rotation common to the K groups, so each block works in the eigenbasis of a base class of
groups with equal covariances (``sigma'`` even makes ``eps`` and ``-eps`` one class; else the
first group): there ``W``'s base class is diagonal per direction and one evaluation costs one
Cholesky of the Schur complement of the other groups, size (K - c) n, per block (none when every
group is in the base class; :mod:`asymptotics.network.schur`, DERIVATIONS.md §9.7).
"""

from __future__ import annotations

import math

import numpy as np

from asymptotics.network import schur
from asymptotics.network.compiled.coupled import dmap_fast
from asymptotics.network.compiled.diagonal import diagonal_newton
from asymptotics.network.compiled.diagonal import map_fixed_point as fixed_point  # noqa: F401
from asymptotics.network.schur import LowRankW, base_class, wa, wgram, wtrace

_PREP: dict[int, tuple] = {}
#: the relative tau step below which a Newton step that no longer shrinks counts as converged
#: (the traces' rounding over d = blocks x size directions: ~1e-13 at 3200)
STALL = 1e-11
#: a Newton step of the resolvent at most this (relative) makes the next evaluation form W:
#: the next is then the last one (the completion's warm start is within the solver's tolerance)
FULL_NEXT = 1e-8
#: the exact results a bulk keeps (W, Kc Sig, Kc; Hessian parts; the derivative), the last ones
MEMO = 8


def _prepare(sig: np.ndarray) -> tuple:
    """``(Sig^-1, U, Sig, Sig^-1, F)``, the middle two in the working basis: the base class F's
    eigenbasis ``U`` per block (``Sig_F = U diag(s) U^T``, :func:`~asymptotics.network.schur.
    base_class`; its groups' covariances taken equal to its first's) where every ``Sig_g`` is
    invertible, else ``(None, None, Sig, None, None)``."""
    ev = np.linalg.eigvalsh(sig)
    if not np.all(ev > 1e-8 * ev.max()):
        return None, None, sig, None, None
    F = base_class(sig)
    sig_inv = np.linalg.inv(sig)
    s1, U = np.linalg.eigh(sig[:, F[0]])
    Ut = np.swapaxes(U, 1, 2)[:, None]

    def rot(x):
        y = np.matmul(np.matmul(Ut, x), U[:, None])
        return 0.5 * (y + np.swapaxes(y, 2, 3))

    sig_w, inv_w = rot(sig), rot(sig_inv)
    eye = np.eye(sig.shape[2])
    for f in F:
        sig_w[:, f] = s1[:, :, None] * eye
        inv_w[:, f] = (1.0 / s1)[:, :, None] * eye
    for x in (sig_inv, U, sig_w, inv_w):
        x.flags.writeable = False
    return sig_inv, U, sig_w, inv_w, F


class GroupBulk:
    """K population covariances on B independent blocks: ``sig`` is B x K x n x n, each group's
    trace over all blocks equal to d = B n (normalised units of ``c_g``)."""

    def __init__(self, sig: np.ndarray) -> None:
        sig = np.asarray(sig, dtype=np.float64)
        if sig.ndim != 4 or sig.shape[2] != sig.shape[3]:
            raise ValueError(f"sig must be B x K x n x n, got shape {sig.shape}")
        self.sig = sig
        self.B, self.K, self.n = sig.shape[:3]
        self.d = self.B * self.n
        self._memo: dict = {}  # exact functions of their arguments: (kind, arguments) -> value
        self.tau_last: np.ndarray | None = None
        self.tau_accept = 0.0  # (the completion's resolvent's ``accept``: _bulk_v's)
        self.y_last: np.ndarray | None = None  # the solver's last (V1, tau) on this bulk
        self.jac_last: tuple | None = None  # (and its map's Jacobian's arguments there)
        self._ed_last: np.ndarray | None = None  # the last de/dD of resolvent
        self._gram_last: tuple | None = None  # (W, its Gram) of :meth:`_gram`
        pre = _PREP.get(id(sig))
        if pre is None or pre[0] is not sig:
            pre = (sig, *_prepare(sig))
            if not sig.flags.writeable:  # (a cached device: the same array every call)
                if len(_PREP) >= 8:
                    _PREP.pop(next(iter(_PREP)))
                _PREP[id(sig)] = pre
        self._sig_inv, self._U, self.sig_w, self._sig_inv_w, F = pre[1:]
        self._eig = None
        self._work = np.empty((self.B, self.n, self.n))  # the Schur complement's scratch
        if self._U is not None:  # (s, U^T Sig_h^-1 U for h outside F, the order F + R, c)
            perm = np.array(F + [g for g in range(self.K) if g not in F], dtype=np.int64)
            self._eig = (np.ascontiguousarray(np.diagonal(self.sig_w[:, F[0]], axis1=1,
                                                          axis2=2)),
                         np.ascontiguousarray(self._sig_inv_w[:, perm[len(F):]]), perm, len(F),
                         np.argsort(perm), bool(np.all(perm == np.arange(self.K))))

    # -- one evaluation at fixed tau ------------------------------------------------------
    def kinv(self, vhat1: np.ndarray, D: np.ndarray) -> np.ndarray:
        """``Kc = (I + Dc Vc)^-1`` per block, shaped B x K x n x K x n (in the working basis,
        :meth:`to_work`)."""
        B, K, n = self.B, self.K, self.n
        A = np.einsum("gh,bgij->bgihj", D[:, None] * vhat1, self.sig_w)
        A = A.reshape(B, K * n, K * n)
        A[:, np.arange(K * n), np.arange(K * n)] += 1.0
        return np.linalg.inv(A).reshape(B, K, n, K, n)

    def trace_sig(self, Kc: np.ndarray) -> np.ndarray:
        """``T_ag = sum_b tr[Sig_bg Kc_b,ag]`` (K x K)."""
        return np.einsum("bgij,bajgi->ag", self.sig_w, Kc, optimize=True)

    def evaluate(self, vhat1: np.ndarray, D: np.ndarray, beta: float
                 ) -> tuple[np.ndarray, np.ndarray]:
        """``(e, V1)`` at fixed ``D = beta pi tau`` (module docstring), from the symmetric
        positive definite ``W = (Dc^-1 + Vc)^-1 = Kc Dc``: ``tr[Sig_g Kc_ag] = tr W_ag / D_g``
        (one Cholesky inverse per block; :meth:`kinv` where ``Sig_g`` is singular or D = 0)."""
        self._check(vhat1)
        T = self._traces_schur(vhat1, D) if self._eig is not None and np.all(D > 0.0) else None
        if T is None:
            T = self.trace_sig(self.kinv(vhat1, D))
        e = np.einsum("ga,ag->g", vhat1, T) / self.d
        V1 = D[:, None] * T.T / (beta * self.d)  # V1_gh = D_g T_hg
        return e, 0.5 * (V1 + V1.T)

    def _check(self, vhat1: np.ndarray) -> None:
        if np.shape(vhat1) != (self.K, self.K):
            raise ValueError(f"vhat1 must be {self.K} x {self.K} (the bulk's groups), got shape "
                             f"{np.shape(vhat1)}")

    def _perm(self, vhat1: np.ndarray, D: np.ndarray) -> tuple:
        perm, ident = self._eig[2], self._eig[5]
        return (vhat1, D) if ident else (vhat1[np.ix_(perm, perm)], D[perm])

    def _traces_schur(self, vhat1: np.ndarray, D: np.ndarray) -> np.ndarray | None:
        """``T_ag = sum_b tr[Sig_bg Kc_b,ag]`` from ``W = (Dc^-1 + Vc)^-1`` by the Schur
        complement of the base class (:mod:`asymptotics.network.schur`; the traces do not see
        the common rotation). None where a Cholesky fails (not positive definite)."""
        s, rest, perm, c, inv, ident = self._eig
        vp, Dp = self._perm(vhat1, D)
        T = schur.traces(vp, Dp, s, rest, c, self._work)
        if T is None:
            return None
        if not ident:
            T = T[np.ix_(inv, inv)]
        return T / D[None, :]

    def wfull(self, vhat1: np.ndarray, D: np.ndarray) -> np.ndarray | None:
        """``W = Kc Dc = (Dc^-1 + Vc)^-1`` per block (B x K x n x K x n; symmetric positive
        definite) in the working basis (:func:`asymptotics.network.schur.wfull`); None where
        that does not apply (singular Sig, D <= 0, not positive definite)."""
        if self._eig is None or not np.all(D > 0.0):
            return None
        s, rest, perm, c, inv, ident = self._eig
        vp, Dp = self._perm(vhat1, D)
        return schur.wfull(vp, Dp, s, rest, c, None if ident else perm, work=self._work)

    def wform(self, vhat1: np.ndarray, D: np.ndarray):
        """:meth:`wfull`'s W in the most compact exact form its classes allow (every trace of
        the bulk and the coupling reads it through :meth:`wtrace`, :meth:`_gram`, :meth:`wa`):
        where every group is in the base class its blocks are diagonal, W is B x n x K x K
        (``W_xy = diag(W[:, :, x, y])``); with one group outside it a :class:`LowRankW`; else
        the dense W; with some ``D_g < 0`` (the spectra's real lam beyond the edge) the same
        forms by LU (W indefinite). None where Sig is singular, D complex or 0 somewhere, or
        (D > 0) W not positive definite."""
        if self._eig is None or np.iscomplexobj(D) or not np.all(D != 0.0):
            return None
        spd = bool(np.all(D > 0.0))
        s, rest, perm, c, inv, ident = self._eig
        vp, Dp = self._perm(vhat1, D)
        if c < self.K - 1:
            return schur.wfull(vp, Dp, s, rest, c, None if ident else perm, spd, self._work)
        return schur.wform(vp, Dp, s, rest, c, perm, inv, ident, spd, self._work)

    wtrace = staticmethod(wtrace)
    wa = staticmethod(wa)

    def wkc(self, vhat1: np.ndarray, D: np.ndarray) -> tuple:
        """``(W, Kc Sig, Kc)`` per block (each B x K x n x K x n; ``W = Kc Dc``) at ``(Vhat1,
        D)``, the last ones kept (the derivatives and the coupling ask for the same). From the
        Schur route ``Kc Sig`` and ``Kc`` are None, not formed: ``Kc = W Dc^-1 = I - W Vc``
        (``W^-1 = Dc^-1 + Vc``), so every contraction with them is one of W's (:meth:`parts`,
        :meth:`asymptotics.network.coupling.CoupledChannels._w_parts`)."""
        key = ("wkc", vhat1.tobytes(), D.tobytes())
        if (hit := self._memo.get(key)) is not None:
            return hit
        W = self.wform(vhat1, D)
        if W is None:
            Kc = self.kinv(vhat1, D)
            KS = self.ksig(Kc)
            W = KS * D[None, None, None, :, None]  # W_xy = D_y Kc_xy Sig_y
            return self._keep(key, (W, KS, Kc))
        return self._keep(key, (W, None, None))

    def _keep(self, key: tuple, value):
        """Keep ``value`` for ``key`` (the last :data:`MEMO` entries)."""
        self._memo[key] = value
        while len(self._memo) > MEMO:
            self._memo.pop(next(iter(self._memo)))
        return value

    def to_work(self, a: np.ndarray) -> np.ndarray:
        """Vectors ``a`` (B x ... x n, in the bulk's coordinates) in the working basis: group 1's
        eigenbasis per block where every ``Sig_g`` is invertible (every quantity of the bulk and
        the coupling is a trace, blind to this common rotation), else the given one."""
        if self._U is None:
            return a
        sh = a.shape
        x = a.reshape(sh[0], -1, sh[-1])
        return np.matmul(x, self._U).reshape(sh)  # (U^T a) per block

    def ksig(self, Kc: np.ndarray) -> np.ndarray:
        """``(Kc Sig)_xy = Kc_xy Sig_y`` per block (B x K x n x K x n; the working basis)."""
        B, K, n = self.B, self.K, self.n
        KT = np.ascontiguousarray(Kc.transpose(0, 3, 1, 2, 4)).reshape(B, K, K * n, n)
        out = np.matmul(KT, self.sig_w)  # (b, y, (x i), k)
        return out.reshape(B, K, K, n, n).transpose(0, 2, 3, 1, 4)

    # -- the resolvent: tau solved ---------------------------------------------------------
    def forget(self) -> None:
        """Drop the warm starts (the last solution and Jacobian): a point solved after
        :meth:`forget` does not depend, even in its last bits, on the points solved before."""
        self.tau_last = None
        self.tau_accept = 0.0
        self.y_last = None
        self.jac_last = None
        self.lin_last = None
        self._ed_last = None
        self._gram_last = None
        self._memo.clear()

    def resolvent(self, vhat1: np.ndarray, lamg: np.ndarray, beta: float, pi: np.ndarray,
                  tau0: np.ndarray | None = None, tol: float = 1e-14, max_iter: int = 100,
                  accept: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(tau, V1, V2)`` (module docstring): Newton on ``tau = 1/(lamg + e(tau))`` from
        ``tau0`` (default: the lower bound ``1/(lamg + Vhat1_gg)``), the plain iteration (the map
        is increasing in tau) where a Newton step leaves the positive orthant. NaN if it fails.
        From a warm start the Jacobian is the last one computed (a chord step: traces only) for
        three steps, then fresh at every step. After a step of at most :data:`FULL_NEXT`
        (relative) W is formed (kept: the completion asks for it at the tau returned), and the
        tau returned is the last one evaluated (within ``tol`` of the next; ``accept``: the
        warm start itself where its first step is at most that, relative)."""
        K = self.K
        vhat1 = np.asarray(vhat1, dtype=np.float64)
        self._check(vhat1)
        lamg = np.asarray(lamg, dtype=np.float64)
        key = ("res", vhat1.tobytes(), lamg.tobytes(), float(beta), np.asarray(pi).tobytes(),
               None if tau0 is None else np.asarray(tau0).tobytes(), tol, max_iter, accept)
        if (hit := self._memo.get(key)) is not None:  # (the completion's residual asks again)
            self.tau_last = hit[0]
            return hit
        den = lamg + np.diag(vhat1)
        if not np.all(den > 0.0):
            nan = np.full(K, np.nan)
            return nan, np.full((K, K), np.nan), nan
        if tau0 is None and self.tau_last is not None and self.tau_last.shape == (K,) \
                and np.all(self.tau_last > 0.0):
            tau0 = self.tau_last  # the last solution: the solver's points are close
        tau = 1.0 / den if tau0 is None else np.array(tau0, dtype=np.float64)
        ED = self._ed_last if self._ed_last is not None and tau0 is not None else None
        last = math.inf
        fast = diagonal_newton(self, vhat1, lamg, beta, pi, tau, ED, tol, max_iter, STALL,
                               FULL_NEXT)
        for it in range(max_iter):
            if fast is not None:  # (the compiled loop: the tau and traces of its last step)
                tau, T = fast
                break
            D = beta * pi * tau
            T = None if ED is None or it >= 3 or last <= FULL_NEXT else self._traces_schur(
                vhat1, D) if self._eig is not None and np.all(D > 0.0) else None
            if T is None:  # a fresh Jacobian (the first step, the chord slow, or the last step)
                W, KS, Kc = self.wkc(vhat1, D)
                if KS is not None:
                    T = self.trace_sig(Kc)
                    ED = self._ed_ks(vhat1, KS)
                else:  # tr[Sig_g Kc_ag] = tr W_ag / D_g, (Kc Sig)_xy = W_xy / D_y
                    T = self.wtrace(W) / D[None, :]
                    ED = self._ed_gram(vhat1, self._gram(W), D)
                self._ed_last = ED
            e = np.einsum("ga,ag->g", vhat1, T) / self.d
            u = 1.0 / (lamg + e)
            Jm = np.eye(K) + (u * u)[:, None] * ED * (beta * pi)[None, :]
            try:
                step = np.linalg.solve(Jm, u - tau)
            except np.linalg.LinAlgError:
                step = u - tau
            new = tau + step
            if not (np.all(np.isfinite(new)) and np.all(new > 0.0)):
                new = u
            rel = float(np.max(np.abs(new - tau) / np.abs(new)))
            # converged: within tol, or stalled at the traces' rounding (d terms summed: a step
            # no longer shrinking, below STALL relative)
            done = rel <= tol or (it >= 2 and rel <= STALL and rel >= 0.5 * last) or (
                it == 0 and tau0 is not None and rel <= accept)
            if done:
                break
            tau, last = new, rel
        else:
            if tau0 is not None:  # from the lower bound, where the warm start failed (once:
                self.tau_last = None  # a cold start that fails is NaN)
                return self.resolvent(vhat1, lamg, beta, pi, None, tol, max_iter)
            nan = np.full(K, np.nan)
            return nan, np.full((K, K), np.nan), nan
        V1 = (beta * pi * tau)[:, None] * T.T / (beta * self.d)
        V1 = 0.5 * (V1 + V1.T)
        self.tau_last = tau
        return self._keep(key, (tau, V1, pi * tau))

    def _ed_ks(self, vhat1: np.ndarray, KS: np.ndarray) -> np.ndarray:
        """``de_g/dD_h = -d^-1 tr[(Vc Kc Sig)_gh (Vc Kc Sig)_hg]`` (K x K)."""
        B, K, n = self.B, self.K, self.n
        ZS = np.matmul(vhat1, KS.reshape(B, K, -1)).reshape(B, K, n, K, n)
        return -(ZS * ZS.transpose(0, 3, 4, 1, 2)).sum(axis=(0, 2, 4)) / self.d

    def _gram(self, W: np.ndarray, Wr: np.ndarray | None = None) -> np.ndarray:
        """``H[x,y,c,e] = sum_b <W_b,xy, W_b,ce>_F = sum_b tr[W_b,xy W_b,ec]`` (W symmetric;
        ``Wr``: W's blocks as rows, if formed). The last W's kept (read-only): the resolvent's
        last step and :meth:`parts` ask for the same W's."""
        if Wr is None and self._gram_last is not None and self._gram_last[0] is W:
            return self._gram_last[1]
        if Wr is None and (isinstance(W, LowRankW) or W.ndim == 4):
            H = wgram(W)
        else:
            R = (W.transpose(1, 3, 0, 2, 4) if Wr is None else Wr).reshape(self.K ** 2, -1)
            H = (R @ R.T).reshape((self.K,) * 4)
        if Wr is None:
            H.flags.writeable = False
            self._gram_last = (W, H)
        return H

    def _ed_gram(self, vhat1: np.ndarray, H: np.ndarray, D: np.ndarray) -> np.ndarray:
        """:meth:`_ed_ks` from the Gram of W's blocks (``(Kc Sig)_xy = W_xy / D_y``):
        ``de_g/dD_h = -d^-1 sum_ac V_ga V_hc tr[W_ah W_cg] / (D_g D_h)``."""
        return -np.einsum("ga,hc,ahgc->gh", vhat1, vhat1, H) / (self.d * np.outer(D, D))

    # -- derivatives along (Vhat1, Vhat2) ---------------------------------------------------
    def parts(self, vhat1: np.ndarray, tau: np.ndarray, beta: float, pi: np.ndarray) -> tuple:
        """The Hessian pieces at ``(Vhat1, tau)``: ``HVV[c,d,a,b] = dV1_cd/dVhat1_ab``,
        ``HVD[c,d,g] = dV1_cd/dD_g``, ``ED[g,h] = de_g/dD_h`` (``de_g/dVhat1_ab =
        beta HVD[a,b,g]``: Psi's Hessian is symmetric)."""
        key = ("parts", vhat1.tobytes(), tau.tobytes(), float(beta), pi.tobytes())
        if (hit := self._memo.get(key)) is not None:
            return hit
        D = beta * pi * tau
        W, KS, Kc = self.wkc(vhat1, D)
        bd = beta * self.d
        K = self.K
        Wr = None if KS is None else W.transpose(1, 3, 0, 2, 4).reshape(K, K, -1)
        H = self._gram(W, Wr)  # H[d,a,c,e] = tr[W_da W_ec]
        HVV = -H.transpose(2, 0, 1, 3) / bd
        if KS is None:  # HVD_cdg = tr[Kc_cg W_dg^T] / D_g, Kc = I - W Vc (:meth:`wkc`):
            # delta_cg tr W_dg - sum_z Vhat1_zg <W_cz, W_dg>_F, the second from the Gram
            HVD = -np.einsum("zg,czdg->cdg", vhat1, H)
            tw = self.wtrace(W)
            HVD[np.arange(K), :, np.arange(K)] += tw.T
            HVD /= bd * D[None, None, :]
        else:
            Kcr = Kc.transpose(1, 3, 0, 2, 4).reshape(K, K, -1)  # (c, g, (z,i,k))
            KSr = KS.transpose(1, 3, 0, 2, 4).reshape(K, K, -1)
            HVD = np.matmul(Kcr.transpose(1, 0, 2), KSr.transpose(1, 2, 0)).transpose(1, 2, 0) / bd
        ED = self._ed_ks(vhat1, KS) if self._eig is None else self._ed_gram(vhat1, H, D)
        return self._keep(key, (HVV, HVD, ED))

    def dresolvent(self, vhat1: np.ndarray, tau: np.ndarray, beta: float, pi: np.ndarray,
                   X1: np.ndarray, X2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The derivative ``(dV1, dV2)`` of ``(V1, V2)`` along ``(Vhat1, Vhat2) -> + (X1, X2)``
        (as :func:`asymptotics.spiked.kernels.dresolvent`)."""
        K = self.K
        y = self.dlin(vhat1, tau, beta, pi) @ np.concatenate([np.ravel(X1), X2])
        dV1 = y[:K * K].reshape(K, K)
        return 0.5 * (dV1 + dV1.T), y[K * K:]

    def dlin(self, vhat1: np.ndarray, tau: np.ndarray, beta: float, pi: np.ndarray
             ) -> np.ndarray:
        """The matrix of :meth:`dresolvent` (before V1's symmetrisation), kept."""
        key = ("dmap", vhat1.tobytes(), tau.tobytes(), float(beta), pi.tobytes())
        if (lin := self._memo.get(key)) is None:
            lin = self._keep(key, self._dmap(vhat1, tau, beta, pi))
        return lin

    def _dmap(self, vhat1, tau, beta, pi) -> np.ndarray:
        """The matrix of :meth:`dresolvent`: ``(X1, X2) -> (dV1, dV2)`` (raveled), from
        ``dtau = -Jm^-1 t2 (X2 + beta HVD^T X1)`` (``de_g/dVhat1_ab = beta HVD[a,b,g]``) and
        ``dV1 = HVV X1 + HVD (beta pi dtau)`` (W diagonal: compiled, :func:`dmap_fast`)."""
        if (fast := dmap_fast(self, vhat1, tau, beta, pi)) is not None:
            return fast
        HVV, HVD, ED = self.parts(vhat1, tau, beta, pi)
        K = self.K
        bp = beta * pi
        t2 = tau * tau
        Jm = np.eye(K) + t2[:, None] * ED * bp[None, :]
        At = -np.linalg.inv(Jm) * t2[None, :]
        Hd = HVD.reshape(K * K, K)
        Mt = np.hstack([At @ (beta * Hd.T), At])  # dtau
        M1 = Hd @ (bp[:, None] * Mt)
        M1[:, :K * K] += HVV.reshape(K * K, K * K)
        return np.vstack([M1, pi[:, None] * Mt])

