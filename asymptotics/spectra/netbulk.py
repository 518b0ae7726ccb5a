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

import contextlib

import numpy as np

from asymptotics.core.meta import blas_limit
from asymptotics.spectra.features import vpart_parts
from asymptotics.spectra.law import Solver
from asymptotics.spectra.parallel.split import by_points, rows_of
from asymptotics.spectra.traces import outside_kernels as kern
from asymptotics.spectra.traces.net_branch import attach
from asymptotics.spectra.traces.net_chord import ChordPolish, PathSolver, SymSolver, sym_jacobian
from asymptotics.spectra.traces.net_jacobian import node_tables, ready, vpart_jacobian
from asymptotics.spectra.traces.outside_kernels import compiled, traces_first, traces_second
from asymptotics.spectra.traces.outside_scalar import first3_block, second3_block

#: off-diagonal parts of Sig_g (in Sig_1's eigenbasis) below this fraction of the diagonal's
#: size are exactly zero (commuting covariances: the expansion is exact)
COMMUTE_TOL = 1e-12
#: from this many points on, the traces with pairs go one block of directions at a time (fewer:
#: all blocks in one kernel call, the calls' overhead dominates)
BLOCK_MIN = 8
#: the directions of the path's commuting model (:meth:`OutsideTraces.coarse`)
COARSE_BINS = 48
#: the directions of largest s kept as single atoms in it (they set the bulk's edge)
COARSE_TOP = 16

#: Newton's tolerance on the path's commuting model (its end point only starts the chord)
APPROX_TOL = 1e-9
#: the commuting models' Jacobians analytic for K = 2, 3
#: (:mod:`asymptotics.spectra.traces.net_jacobian`; False: difference quotients, the reference)
ANALYTIC = True
#: the path's model solves a subset of the points at the stages of large Im z
#: (:class:`~asymptotics.spectra.traces.net_chord.PathSolver`; False: every point, the reference)
PATH_SUBSETS = True
#: the node sums laid out by feature, in real arithmetic (K = 2, 3;
#: :func:`~asymptotics.spectra.traces.outside_kernels.vpart_sums_t`; False: by node)
NODE_FEATURES = True
#: K = 3's block sums: ``D_e s_g Q[e, g] = (s_g/s_e) (delta_eg - N[e, g])`` (``U Q = I - N``), not
#: ``Vhat1[e] . N[:, g]`` (some ``s <= 0`` in a block, or False: the rows, the former sums)
Q_IDENTITY = True
#: the solver's path and the traces' per-block products (~2N x n x n, n ~ 100) on this many
#: BLAS threads (None: the process's): more save no wall time and cost CPU (§16.8)
BLAS_THREADS: int | None = 1

_CACHE: dict[int, tuple] = {}
_QUEUED: list = []
_QUEUED_SUMS: list = []


def blas_threads():
    """A context in which BLAS runs on :data:`BLAS_THREADS` threads (no-op when None)."""
    return blas_limit(BLAS_THREADS)


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
            Ut = np.swapaxes(U, 1, 2)[:, None]  # U^T Sig_g U: two products (einsum: n^4)
            X = np.matmul(np.matmul(Ut, sig), U[:, None])
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
        self.wt = np.ones(self.s.shape[:2])  # each direction's weight

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
        out.wt = np.array(weights, dtype=np.float64)[None]
        out.ws = out.s * out.wt[:, :, None]
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

    def weights_flat(self) -> np.ndarray:
        """The directions' weights in the order of :meth:`_flat`'s rows."""
        return np.ascontiguousarray(self.wt.reshape(-1))

    def traces(self, vh: np.ndarray, D: np.ndarray) -> np.ndarray:
        """``T`` (N x K x K) at ``vh`` (N x K x K) and ``D`` (N x K), complex: compiled kernels
        (the products with ``O_b o O_e`` by BLAS), or, while they are not compiled yet, the
        same sums in numpy (:meth:`traces_numpy`)."""
        vh = np.ascontiguousarray(vh, dtype=np.complex128)
        D = np.ascontiguousarray(D, dtype=np.complex128)
        args = (vh, D, *self._flat(), self.n, *self._ordered_pairs()[:2])
        blk = None  # the block kernels' arguments (K = 3 with three pairs), one point, block
        if self.K == 3 and len(self.groups) == 2:
            sfb, wfb = self._blocks(True)[0][:2]
            W = np.zeros((3, 2, self.n))
            blk = (vh[:1], D[:1], sfb, wfb, np.zeros((1, 3, 3), dtype=np.complex128), W)
        if not compiled(traces_first, args) or (blk and not compiled(first3_block, blk)):
            if (kind := "block" if blk else "traces") not in _QUEUED:  # (once a process and kind)
                _QUEUED.append(kind)  # queues the kernels: interpreted once, on one point
                self.traces_kernels(vh[:1], D[:1])
                if blk:
                    first3_block(*blk)
                    second3_block(*blk[:3], blk[5], blk[4], True)
            return self.traces_numpy(vh, D)
        return self.traces_kernels(vh, D)

    def traces_kernels(self, vh: np.ndarray, D: np.ndarray) -> np.ndarray:
        """:meth:`traces` by the kernels (compiled or not); with ``Vhat1`` symmetric at every
        point, one product with ``O_b o O_e`` a pair of groups (``Q`` is then symmetric). With
        pairs and :data:`BLOCK_MIN` points or more, one block of directions at a time (its ``W``
        and ``Y`` stay in cache); K = 3 with the three pairs of groups 1, 2 by the block kernels
        without branches. BLAS on :data:`BLAS_THREADS` threads; the points in parts at once
        (:func:`~asymptotics.spectra.parallel.split.by_points`)."""
        vh = np.ascontiguousarray(vh, dtype=np.complex128)
        D = np.ascontiguousarray(D, dtype=np.complex128)
        both = bool(np.array_equal(vh, np.swapaxes(vh, 1, 2)))
        ob, oe = self._ordered_pairs(both)[:2]
        way = ("whole" if not ob.size or vh.shape[0] < BLOCK_MIN  # (W fits in cache whole)
               else "three" if self.K == 3 and both and ob.tolist() == [1, 1, 2]
               and oe.tolist() == [1, 2, 2] else "blocks")
        T = np.zeros((vh.shape[0], self.K, self.K), dtype=np.complex128)
        kernels = ((first3_block, second3_block) if way == "three" else
                   (traces_first, traces_second)[:1 + bool(ob.size)])
        cost = vh.shape[0] * self.B * self.n * self.K ** 2 * (6e-9 if ob.size else 1e-9)  # (s)
        with blas_threads() if self.groups else contextlib.nullcontext():
            by_points(lambda *a: self._traces_rows(*a, both, way), (vh, D, T), kernels, cost=cost)
        return T

    def _traces_rows(self, vh: np.ndarray, D: np.ndarray, T: np.ndarray, both: bool,
                     way: str) -> None:
        """``T`` (zeros in) of the points ``vh``, ``D`` by :meth:`traces_kernels`'s ``way``."""
        ob, oe = self._ordered_pairs(both)[:2]
        if way == "three":
            W = np.empty((3, 2 * vh.shape[0], self.n))
            Y = np.empty_like(W)
            for sfb, wfb, Pb, pos in self._blocks(both):
                first3_block(vh, D, sfb, wfb, T, W)
                np.matmul(W, Pb, out=Y)
                second3_block(vh, D, sfb, Y, T, Q_IDENTITY and pos)
            return
        for sfb, wfb, Pb in ([(*self._flat(), self._ordered_pairs(both)[2])] if way == "whole"
                             else [(b[0], b[1], b[2][:, None]) for b in self._blocks(both)]):
            Tb, W = traces_first(vh, D, sfb, wfb, self.n, ob, oe)
            if ob.size:
                traces_second(vh, D, sfb, np.matmul(W, Pb), self.n, ob, oe, both, Tb)
            T[...] = Tb if way == "whole" else T + Tb

    def _blocks(self, both: bool) -> list:
        """Per block of directions: ``s``, ``ws`` (K x n), the pairs' ``O_b o O_e`` (pairs x
        n x n), contiguous, and whether the later groups' ``s`` are > 0 (:data:`Q_IDENTITY`)."""
        key = "_blocks_both" if both else "_blocks_ordered"
        if key not in self.__dict__:
            P = self._ordered_pairs(both)[2]
            sf, wf = self._flat()
            n = self.n
            self.__dict__[key] = [(np.ascontiguousarray(sf[:, b * n:(b + 1) * n]),
                                   np.ascontiguousarray(wf[:, b * n:(b + 1) * n]),
                                   np.ascontiguousarray(P[:, b]),
                                   bool(np.all(sf[1:, b * n:(b + 1) * n] > 0.0)))
                                  for b in range(self.B)]
        return self.__dict__[key]

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

    tables = node_tables(*sums)
    # the node sums' features by feature (K = 2, 3: :func:`vpart_sums_t`)
    feats = ((np.ascontiguousarray(tables[3].T), np.ascontiguousarray(tables[4].T))
             if K in (2, 3) else ())

    def vpart(x: np.ndarray) -> tuple:
        """(tau, V1, M, v2) of ``parts`` (its node sums compiled once they are)."""
        x = np.ascontiguousarray(x, dtype=np.complex128)
        fn, args = ((kern.vpart_sums_t, (x, sums[0], *feats, sums[5]))
                    if feats and NODE_FEATURES else (kern.vpart_sums, (x, *sums)))
        if compiled(fn, args):
            M, v2 = rows_of(fn, *args, cost=0.7e-9 * x.shape[0] * outer.size)  # (seconds)
            return x[:, :K], x[:, K:].reshape(-1, K, K), M, v2
        if not _QUEUED_SUMS:  # queues the kernel (interpreted once a process, on one point)
            _QUEUED_SUMS.append(True)
            fn(x[:1], *args[1:])
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

    def jac_of(trc: OutsideTraces, residual):
        """The analytic Jacobian of a commuting model (None: the difference quotients; also
        while its kernel is not compiled)."""
        if not ANALYTIC or trc.groups or K not in (2, 3):  # (scalar kernels for K = 2, 3)
            return None

        def jac(x: np.ndarray, z: np.ndarray) -> np.ndarray:
            if not ready(trc._flat()[0], trc.weights_flat()):
                return sym_jacobian(residual, x, z, residual(x, z))
            return vpart_jacobian(x, z, tables, trc, beta)
        return jac

    def solver(trc: OutsideTraces, kind: type = SymSolver) -> SymSolver:
        res = make(trc)
        out = kind(res, start, lambda x: x[:, :K] @ pi, scale=scale)
        out.jac = jac_of(trc, res)
        return out

    def start(z: np.ndarray) -> np.ndarray:
        tau = np.repeat((-1.0 / z)[:, None], K, axis=1)
        V1 = (pi * tau)[:, :, None] * eye[None]
        return np.concatenate([tau, V1.reshape(-1, K * K)], axis=1)

    scale = features_mean(prob, alpha)
    exact = solver(tr)
    if tr.exact and tr.d <= COARSE_BINS:
        sol = exact
    else:
        approx = solver(tr.coarse(), PathSolver if PATH_SUBSETS else SymSolver)
        approx.tol = APPROX_TOL
        medium = None if tr.exact else solver(tr.commuting())
        sol = ChordPolish(exact, approx, medium)
    sol.parts, sol.traces = parts, tr
    attach(sol, pi, BLOCK_MIN)  # the real branch's exact Jacobian (§16.10)
    sol.solve = _limited(sol.solve)  # (the path's products on BLAS_THREADS threads)
    return sol


def _limited(solve):
    """``solve`` on :data:`BLAS_THREADS` BLAS threads."""
    def inner(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        with blas_threads():
            return solve(z)
    return inner


__all__ = ["ChordPolish", "OutsideTraces", "SymSolver", "outside_solver", "sym_jacobian"]
