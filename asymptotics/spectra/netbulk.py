"""The features' bulk of the network beyond one step on the route's bulk outside E
(docs/THEORY.md §16.8, docs/DERIVATIONS.md §9.8): the K-group generalised Marchenko-Pastur
law of :class:`asymptotics.network.bulk.GroupBulk` at complex lam = -z.

The V-part of §16.1 with the isotropic kernels replaced by the bulk's (DERIVATIONS.md §9.7):

    tau_g (lam + Vhat2_g + e_g) = 1,   e_g = d^-1 sum_a Vhat1_ga T_ag,
    V1_gh = D_g T_hg/(beta d),   T_ag = tr[Sig_g Kc_ag],   Kc = (I + Dc Vc)^-1,

every quantity analytic in (Vhat1, D), so the real-lam equations of the risk continue to
complex lam as in §16.1. :class:`OutsideTraces` evaluates ``T`` at a batch of complex points
without the dK-square inverse: per device block it works in the eigenbasis of ``Sig_1``, where
``Sig_g = diag(s_g) + O_g`` (``O_1 = 0``; ``O_g`` the off-diagonal part, zero when the groups'
covariances commute, e.g. K = 1 or the two groups of an odd sigma with a +-1 readout), and
expands ``Kc`` to second order in ``O``:

    T = T0 + A + B,   T0_ag = sum_i s_ig N_i[a,g],   N_i = (I + diag(D s_i) Vhat1)^-1,
    A_ag = -sum_b D_b sum_i N_i[a,b] Y^{bg}_i,
    B_ag = sum_{b,e} D_b D_e sum_i s_ig N_i[a,b] Q_i[e,g] Y^{be}_i,
    Q_i = Vhat1 N_i,   Y^{be}_i = sum_j (O_b o O_e)_ij Q_j[b,e]

(the first order vanishes: a trace of a diagonal times an off-diagonal matrix). Exact when the
covariances commute; :meth:`OutsideTraces.dense` is the exact dK inverse (the check). The
continuation path runs on a coarse commuting model (:meth:`OutsideTraces.coarse`) and its end
point is polished on the full one (:class:`ChordPolish`)."""

from __future__ import annotations

import numpy as np

from asymptotics.spectra.features import vpart_parts
from asymptotics.spectra.law import NEWTON_MAX, NEWTON_TOL, Y_END, Solver
from asymptotics.spectra.traces.outside_kernels import (
    compiled,
    traces_first,
    traces_second,
    vpart_sums,
)

#: off-diagonal parts of Sig_g (in Sig_1's eigenbasis) below this fraction of the diagonal's
#: size are exactly zero (commuting covariances: the expansion is exact)
COMMUTE_TOL = 1e-12
#: the directions of the path's commuting model (:meth:`OutsideTraces.coarse`)
COARSE_BINS = 48
#: the directions of largest s kept as single atoms in it (they set the bulk's edge)
COARSE_TOP = 16

#: the chord's inverse Jacobian takes Broyden's rank-one updates (superlinear instead of linear)
BROYDEN = True
#: the chord's tolerance on the commuting model with every direction (its solution only starts
#: the chord to the full model, which converges from ~1e-4 away in a few steps)
MEDIUM_TOL = 1e-8
#: Newton's tolerance on the path's commuting model (its end point only starts the chord)
APPROX_TOL = 1e-9

_CACHE: dict[int, tuple] = {}
_QUEUED: list = []


def _block_matvec(P: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``sum_j P[b, i, j] q[x, b, j]`` for real P (B x n x n) and complex q (N x B x n)."""
    qt = np.ascontiguousarray(q.transpose(1, 2, 0))  # (B, n, N)
    out = np.matmul(P, qt.real) + 1j * np.matmul(P, qt.imag)
    return out.transpose(2, 0, 1)


class OutsideTraces:
    """``T_ag = sum_blocks tr[Sig_g Kc_ag]`` of a :class:`~asymptotics.network.bulk.GroupBulk`
    at complex ``(Vhat1, D)`` (module docstring)."""

    def __init__(self, bulk) -> None:
        sig = np.asarray(bulk.sig, dtype=np.float64)
        self.sig = sig
        self.B, self.K, self.n = sig.shape[:3]
        self.d = self.B * self.n
        hit = _CACHE.get(id(bulk.sig))
        if hit is None or hit[0] is not bulk.sig:
            _, U = np.linalg.eigh(sig[:, 0])
            X = np.einsum("bij,bgjk,bkl->bgil", np.swapaxes(U, 1, 2), sig, U)
            X = 0.5 * (X + np.swapaxes(X, 2, 3))
            s = np.diagonal(X, axis1=2, axis2=3).transpose(0, 2, 1).copy()  # (B, n, K)
            O = X.copy()
            idx = np.arange(self.n)
            O[:, :, idx, idx] = 0.0
            size = np.max(np.abs(s))
            groups = [g for g in range(self.K)
                      if float(np.max(np.abs(O[:, g]))) > COMMUTE_TOL * size]
            pairs = {(b, e): O[:, b] * O[:, e] for b in groups for e in groups if b <= e}
            hit = (bulk.sig, s, groups, pairs)
            if len(_CACHE) >= 8:
                _CACHE.pop(next(iter(_CACHE)))
            _CACHE[id(bulk.sig)] = hit
        self.s, self.groups, self.pairs = hit[1], hit[2], hit[3]
        self.ws = self.s  # each direction's weight times s (weights 1)

    def coarse(self, n_bins: int = COARSE_BINS) -> OutsideTraces:
        """A commuting model of few weighted directions (the :data:`COARSE_TOP` directions of
        largest s as they are, each group's ``s`` averaged over bins of the others sorted by
        ``s_1``, then by ``s_2`` within a bin; the path's approximation of
        :func:`outside_solver`)."""
        flat = self.s.reshape(-1, self.K)
        top = np.argsort(flat.max(axis=1))[flat.shape[0] - COARSE_TOP:]
        atoms, weights = list(flat[top]), [1] * top.size
        rest = np.setdiff1d(np.arange(flat.shape[0]), top)
        n_bins = max(2, n_bins - top.size)
        order = rest[np.lexsort(tuple(flat[rest, g] for g in range(self.K - 1, -1, -1)))]
        k1 = n_bins if self.K == 1 else max(2, int(round(n_bins ** 0.5)))
        for part in np.array_split(order, k1):
            sub = part if self.K == 1 else part[np.argsort(flat[part, 1], kind="stable")]
            for chunk in np.array_split(sub, 1 if self.K == 1 else max(1, n_bins // k1)):
                if chunk.size:
                    atoms.append(flat[chunk].mean(axis=0))
                    weights.append(chunk.size)
        out = object.__new__(OutsideTraces)
        out.sig, out.B, out.K, out.n, out.d = self.sig, 1, self.K, len(atoms), self.d
        out.s = np.array(atoms)[None]
        out.ws = out.s * np.array(weights, dtype=np.float64)[None, :, None]
        out.groups, out.pairs = [], {}
        return out

    @property
    def exact(self) -> bool:
        """True when the groups' covariances commute (the expansion is then exact)."""
        return not self.groups

    def _ninv(self, vh: np.ndarray, D: np.ndarray) -> list:
        """``N_i = (I + diag(D s_i) Vhat1)^-1`` as a K x K nested list of (N, B, n) arrays."""
        K = self.K
        u = [D[:, g, None, None] * self.s[None, :, :, g] for g in range(K)]
        v = [[vh[:, a, b, None, None] for b in range(K)] for a in range(K)]
        if K == 1:
            return [[1.0 / (1.0 + u[0] * v[0][0])]]
        if K == 2:
            a, b = 1.0 + u[0] * v[0][0], u[0] * v[0][1]
            c, e = u[1] * v[1][0], 1.0 + u[1] * v[1][1]
            idet = 1.0 / (a * e - b * c)
            return [[e * idet, -b * idet], [-c * idet, a * idet]]
        A = np.stack([np.stack([u[a] * v[a][b] for b in range(K)], axis=-1)
                      for a in range(K)], axis=-2) + np.eye(K)
        Ni = np.linalg.inv(A)
        return [[Ni[..., a, b] for b in range(K)] for a in range(K)]

    def commuting(self) -> OutsideTraces:
        """The same directions without the off-diagonal parts (``T0`` only: the intermediate
        model of :class:`ChordPolish`)."""
        out = object.__new__(OutsideTraces)
        out.__dict__.update({k: v for k, v in self.__dict__.items() if k[0] != "_"})
        out.groups, out.pairs = [], {}
        return out

    def _ordered_pairs(self, both: bool = False) -> tuple:
        """(ob, oe, P): every ordered pair of groups (or, ``both``, each unordered pair once)
        and its symmetric ``O_b o O_e`` (pairs, B, n, n)."""
        key = "_pairs_both" if both else "_ordered"
        hit = self.__dict__.get(key)
        if hit is None or hit[3] != tuple(self.groups):
            ob, oe, P = [], [], []
            for (b, e), Pbe in (self.pairs.items() if self.groups else ()):
                for bb, ee in ((b, e), (e, b)) if b != e and not both else ((b, e),):
                    ob.append(bb)
                    oe.append(ee)
                    P.append(Pbe)
            P = (np.ascontiguousarray(np.stack(P)) if P
                 else np.zeros((0, self.B, self.n, self.n)))
            hit = (np.array(ob, dtype=np.int64), np.array(oe, dtype=np.int64), P,
                   tuple(self.groups))
            self.__dict__[key] = hit
        return hit

    def _flat(self) -> tuple:
        """(sf, wf): ``s`` and ``ws`` as (K, B n) contiguous rows (the kernels' layout)."""
        if "_flat_rows" not in self.__dict__:
            self._flat_rows = tuple(np.ascontiguousarray(a.reshape(-1, self.K).T)
                                    for a in (self.s, self.ws))
        return self._flat_rows

    def traces(self, vh: np.ndarray, D: np.ndarray) -> np.ndarray:
        """``T`` (N x K x K) at ``vh`` (N x K x K) and ``D`` (N x K), complex: compiled kernels
        (the products with ``O_b o O_e`` by BLAS), or, while they are not compiled yet, the
        same sums in numpy (:meth:`traces_numpy`)."""
        vh = np.ascontiguousarray(vh, dtype=np.complex128)
        D = np.ascontiguousarray(D, dtype=np.complex128)
        args = (vh, D, *self._flat(), self.n, *self._ordered_pairs()[:2])
        if not compiled(traces_first, args):
            if not _QUEUED:  # queues the kernels (interpreted once a process)
                _QUEUED.append(True)
                self.traces_kernels(vh[:1], D[:1])
            return self.traces_numpy(vh, D)
        return self.traces_kernels(vh, D)

    def traces_kernels(self, vh: np.ndarray, D: np.ndarray) -> np.ndarray:
        """:meth:`traces` by the kernels (compiled or not); with ``Vhat1`` symmetric at every
        point, one product with ``O_b o O_e`` a pair of groups (``Q`` is then symmetric)."""
        vh = np.ascontiguousarray(vh, dtype=np.complex128)
        D = np.ascontiguousarray(D, dtype=np.complex128)
        both = bool(np.array_equal(vh, np.swapaxes(vh, 1, 2)))
        ob, oe, P = self._ordered_pairs(both)[:3]
        sf, wf = self._flat()
        T, W = traces_first(vh, D, sf, wf, self.n, ob, oe)
        if ob.size:
            traces_second(vh, D, sf, np.matmul(W, P), self.n, ob, oe, both, T)
        return T

    def traces_numpy(self, vh: np.ndarray, D: np.ndarray) -> np.ndarray:
        """:meth:`traces` in numpy (vectorised over points and directions)."""
        K = self.K
        N = self._ninv(vh, D)
        T = np.empty((vh.shape[0], K, K), dtype=np.complex128)
        for a in range(K):
            for g in range(K):
                T[:, a, g] = np.einsum("xbi,bi->x", N[a][g], self.ws[:, :, g])
        if not self.groups:
            return T
        # Q_i = Vhat1 N_i
        Q = [[sum(vh[:, e, c, None, None] * N[c][g] for c in range(K)) for g in range(K)]
             for e in range(K)]
        for (b, e), P in self.pairs.items():
            for bb, ee in ((b, e), (e, b)) if b != e else ((b, e),):
                y = _block_matvec(P, Q[bb][ee])  # Y^{bb,ee}: (N, B, n)
                dd = D[:, bb] * D[:, ee]
                for a in range(K):
                    na = N[a][bb] * y
                    for g in range(K):
                        T[:, a, g] += dd * np.einsum("xbi,bi,xbi->x", na, self.s[:, :, g],
                                                     Q[ee][g])
                    T[:, a, ee] -= D[:, bb] * na.sum(axis=(1, 2))
        return T

    def dense(self, vh: np.ndarray, D: np.ndarray) -> np.ndarray:
        """The exact ``T`` by the dK-square inverse of each block (one point; the check)."""
        K, n = self.K, self.n
        T = np.zeros((K, K), dtype=np.complex128)
        for b in range(self.B):
            A = np.einsum("gh,gij->gihj", D[:, None] * vh, self.sig[b]).reshape(K * n, K * n)
            Kc = np.linalg.inv(np.eye(K * n) + A).reshape(K, n, K, n)
            T += np.einsum("gij,ajgi->ag", self.sig[b], Kc)
        return T


def sym_jacobian(residual, x: np.ndarray, z: np.ndarray, F0: np.ndarray) -> np.ndarray:
    """The finite-difference Jacobian of a V-part residual at ``x = (tau (K), V1 (K^2))``: it
    sees ``V1`` through ``V1 . mub1 mub1^T`` and in ``e2 = V1 - Vb``, so the columns of
    ``V1_ab`` and ``V1_ba`` differ by that identity only (K + K(K+1)/2 evaluations)."""
    q = x.shape[1]
    K = int(round((-1.0 + (1.0 + 4.0 * q) ** 0.5) / 2.0))
    J = np.empty(x.shape + (q,), dtype=np.complex128)
    cols = list(range(K)) + [K + a * K + b for a in range(K) for b in range(a, K)]
    for j in cols:
        h = 1e-7 * (1.0 + np.abs(x[:, j]))
        J[:, :, j] = (residual(x + h[:, None] * (np.arange(q) == j), z) - F0) / h[:, None]
        a, b = divmod(j - K, K)
        if j >= K and a != b:
            jt = K + b * K + a
            J[:, :, jt] = J[:, :, j]
            J[:, j, jt] -= 1.0
            J[:, jt, jt] += 1.0
    return J


class SymSolver(Solver):
    """:class:`~asymptotics.spectra.law.Solver` with the Jacobian of :func:`sym_jacobian`."""

    def _jacobian_fd(self, x: np.ndarray, z: np.ndarray, F: np.ndarray) -> np.ndarray:
        return sym_jacobian(self.residual, x, z, F)


def outside_solver(prob, alpha: float, bulk) -> Solver:
    """The features' V-part at lam = -z on the bulk outside E (module docstring) as a
    :class:`~asymptotics.spectra.law.Solver` with the unknowns of
    :func:`asymptotics.spectra.features.features_solver` (tau (K), V1 (K^2)) and its ``parts``;
    ``bulk`` a :class:`~asymptotics.network.bulk.GroupBulk` of the groups of ``prob``."""
    from asymptotics.spectra.features import features_mean

    t = prob.tables
    w, mb1, ms2 = t.weights, t.mub1, t.mus2
    pi, beta = prob.fractions, prob.beta
    K = pi.shape[0]
    tr = OutsideTraces(bulk)
    if tr.K != K:
        raise ValueError(f"the bulk outside E has {tr.K} groups, the problem {K}")
    A_ = alpha / beta
    eye = np.eye(K)
    parts = vpart_parts(w, mb1, ms2, pi, beta, A_)
    outer = np.ascontiguousarray((mb1[:, :, None] * mb1[:, None, :]).reshape(-1, K * K))
    sums = (np.ascontiguousarray(pi, dtype=np.float64), outer,
            np.ascontiguousarray(w[:, None] * outer), np.ascontiguousarray(ms2),
            np.ascontiguousarray(w[:, None] * ms2), float(A_))

    def vpart(x: np.ndarray) -> tuple:
        """(tau, V1, M, v2) of ``parts`` (its node sums compiled once they are)."""
        x = np.ascontiguousarray(x, dtype=np.complex128)
        if compiled(vpart_sums, (x, *sums)):
            M, v2 = vpart_sums(x, *sums)
            return x[:, :K], x[:, K:].reshape(-1, K, K), M, v2
        tau, V1, _, M, v2, _ = parts(x)
        return tau, V1, M, v2

    def make(trc: OutsideTraces):
        def residual(x: np.ndarray, z: np.ndarray) -> np.ndarray:
            tau, V1, M, v2 = vpart(x)
            Dv = beta * pi * tau
            T = trc.traces(M, Dv)
            e = np.einsum("xga,xag->xg", M, T) / trc.d
            Vb = Dv[:, :, None] * np.swapaxes(T, 1, 2) / (beta * trc.d)
            Vb = 0.5 * (Vb + np.swapaxes(Vb, 1, 2))
            e1 = tau * (-z[:, None] + v2 + e) - 1.0
            return np.concatenate([e1, (V1 - Vb).reshape(-1, K * K)], axis=1)
        return residual

    def start(z: np.ndarray) -> np.ndarray:
        tau = np.repeat((-1.0 / z)[:, None], K, axis=1)
        V1 = (pi * tau)[:, :, None] * eye[None]
        return np.concatenate([tau, V1.reshape(-1, K * K)], axis=1)

    scale = features_mean(prob, alpha)
    exact = SymSolver(make(tr), start, lambda x: x[:, :K] @ pi, scale=scale)
    if tr.exact and tr.d <= COARSE_BINS:
        sol = exact
    else:
        approx = SymSolver(make(tr.coarse()), start, lambda x: x[:, :K] @ pi, scale=scale)
        approx.tol = APPROX_TOL
        medium = (None if tr.exact else
                  Solver(make(tr.commuting()), start, lambda x: x[:, :K] @ pi, scale=scale))
        sol = ChordPolish(exact, approx, medium)
    sol.parts = parts
    sol.traces = tr
    return sol


class ChordPolish(SymSolver):
    """The full model ``exact`` started from the cheap model ``approx`` at the final z (as
    :class:`asymptotics.spectra.weights.PolishedSolver`), polished by a chord iteration: the
    Jacobian of the cheap model at its own end point, factored once, and one evaluation of the
    full model per step (the two Jacobians are close, so it converges linearly and fast); the
    points where it fails (not converged, or m moved by more than 10%) take the full model's
    whole path (Newton). ``medium`` (optional): a model between the two (the same directions
    without the off-diagonal parts), reached by the chord from ``approx`` first; its Jacobian
    then drives the chord to ``exact``, which converges in a few steps."""

    def __init__(self, exact: Solver, approx: Solver, medium: Solver | None = None) -> None:
        super().__init__(exact.residual, exact.start, exact.stieltjes, exact.scale)
        self.approx, self.medium = approx, medium
        self.broyden = BROYDEN

    def _chord(self, x: np.ndarray, z: np.ndarray, residual=None, model=None,
               tol: float = NEWTON_TOL) -> tuple[np.ndarray, np.ndarray]:
        """The chord iteration on ``residual`` (default: the full model) with the Jacobian of
        ``model`` (default: ``approx``) at the start ``x``, to the relative tolerance ``tol``."""
        residual = self.residual if residual is None else residual
        model = self.approx.residual if model is None else model
        x = x.copy()
        ok = np.zeros(z.shape[0], dtype=bool)
        try:
            Jinv = np.linalg.inv(sym_jacobian(model, x, z, model(x, z)))
        except np.linalg.LinAlgError:
            return x, ok
        act = np.arange(z.shape[0])
        F_old = dx_old = size_old = None
        for _ in range(NEWTON_MAX):
            F = residual(x[act], z[act])
            if self.broyden and F_old is not None:  # Broyden's update of the inverse
                H = Jinv[act]
                y = F - F_old
                Hy = np.einsum("xij,xj->xi", H, y)
                sH = np.einsum("xi,xij->xj", dx_old, H)
                den = np.einsum("xi,xi->x", dx_old, Hy)
                use = np.isfinite(den) & (np.abs(den) > 1e-30) & np.all(np.isfinite(y), axis=1)
                den = np.where(use, den, 1.0)
                upd = (dx_old - Hy)[:, :, None] * sH[:, None, :] / den[:, None, None]
                Jinv[act] = H + np.where(use[:, None, None], upd, 0.0)
            dx = -np.einsum("xij,xj->xi", Jinv[act], F)
            bad = ~np.all(np.isfinite(dx), axis=1)
            dx[bad] = 0.0
            x[act] += dx
            size = np.max(np.abs(dx), axis=1) / (1.0 + np.max(np.abs(x[act]), axis=1))
            # done: the step, or the error left after it (the step times q/(1 - q), q the
            # contraction measured from the last two steps, when below 1/2), under the tol
            q = size / size_old[act] if size_old is not None else np.ones_like(size)
            left = np.where(q < 0.5, size * q / np.maximum(1.0 - q, 0.5), size)
            done = ((size < tol) | (left < tol)) & ~bad
            ok[act[done]] = True
            keep = ~done & ~bad
            if size_old is None:
                size_old = np.full(z.shape[0], np.inf)
            size_old[act] = size
            act, F_old, dx_old = act[keep], F[keep], dx[keep]
            if act.size == 0:
                break
        return x, ok

    def solve(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        z = np.atleast_1d(np.asarray(z, dtype=np.complex128))
        zt = z.real + 1j * np.maximum(z.imag, Y_END * self.scale)
        x0, ok0 = self.approx.solve(z)
        if self.medium is None:
            x, ok = self._chord(x0, zt)
        else:
            x, ok = self._chord(x0, zt, self.medium.residual, tol=MEDIUM_TOL)
            go = np.nonzero(ok)[0]
            if go.size:
                x[go], ok[go] = self._chord(x[go], zt[go], self.residual, self.medium.residual)
        m, m0 = self.stieltjes(x), self.stieltjes(x0)
        ok &= ok0 & np.isfinite(m) & (m.imag >= -1e-9 * np.abs(m))
        ok &= np.abs(m - m0) <= 0.1 * np.abs(m0)
        bad = np.nonzero(~ok)[0]
        if bad.size and self.medium is not None:  # the medium model's path, then the chord
            xb, okb = self.medium.solve(z[bad])
            go = bad[okb]
            if go.size:
                x[go], ok[go] = self._chord(xb[okb], zt[go], self.residual,
                                            self.medium.residual)
                m = self.stieltjes(x[go])
                ok[go] &= np.isfinite(m) & (m.imag >= -1e-9 * np.abs(m))
                ok[go] &= np.abs(m - self.stieltjes(xb[okb])) <= 0.1 * np.abs(m)
            bad = np.nonzero(~ok)[0]
        if bad.size:
            xb, okb = Solver.solve(self, z[bad])
            x[bad], ok[bad] = xb, okb
        return x, ok
