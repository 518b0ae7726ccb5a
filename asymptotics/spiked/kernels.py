"""Numba kernels of the K-group, r-spike equations (docs/THEORY.md §10.3-§10.5).

Unknowns: V1, Q1 (K x K), V2, Q2, m (K), zeta (K x r), psi (K x k); the state vector is the
concatenation (Q1, Q2, V1, V2, zeta, psi, m), row-major (offsets: ``sizes``). On every kappa node,
    V(k) = mub1^T V1 mub1 + mus2 . V2,   q(k) = mub1^T Q1 mub1 + mus2 . Q2,
    b(k) = mu0 . m + sum_g mub1_g zeta_g . k,
    E(k) = h2 - 2 b h + b^2 - 2 sum_g mub1_g psi_g . h1 + q(k)   (E + Delta in the conjugates).
The deterministic resolvent (§10.4; its kernels in ``asymptotics.equations.small_dense``):
tau_g = 1/(lam + Vhat2_g + [Vhat1 (I + D Vhat1)^-1]_gg), D = diag(beta pi_g tau_g);
V2_g = pi_g tau_g, V1 = beta^-1 D (I + Vhat1 D)^-1; Q = -dV[X] along
X = (Qhat1 + beta Psi, Qhat2 + beta |zetahat_g|^2 + p mhat_g^2); zeta_g = beta pi_g tau_g zetahat_g,
psi_g = beta sum_h V1_hg psihat_h; m from its K x K least-squares problem (§10.5, §10.6).
"""

from __future__ import annotations

import numpy as np

from asymptotics.core.coldstart import kernel
from asymptotics.equations.mean_lsq import mean_elimination2
from asymptotics.equations.node_sums import q_sums, v_parts
from asymptotics.equations.node_sums_k import q_sums_k, v_parts_k, v_sums3, v_sums4
from asymptotics.equations.paired.half_sums import q_sums_half, v_parts_half
from asymptotics.equations.small_dense import (  # noqa: F401  (the resolvent's kernels, here too)
    along_into,
    along_work,
    dresolvent,
    dresolvent_along,
    dresolvent_parts,
    pair_gram,
    resolvent,
    tau_solve,
)

#: the Q-system I - L Kq (entries O(1)) is singular at the interpolation peak of ridgeless
#: regression; a determinant below DET_MIN (a risk ~ 1/det above ~1e10) is no physical solution
DET_MIN = 1e-10


@kernel(cache=True, error_model="numpy")
def sizes(K: int, r: int, k: int) -> tuple:
    """Offsets (Q1, Q2, V1, V2, zeta, psi, m, end) of the state vector."""
    o_q1 = 0
    o_q2 = o_q1 + K * K
    o_v1 = o_q2 + K
    o_v2 = o_v1 + K * K
    o_z = o_v2 + K
    o_p = o_z + K * r
    o_m = o_p + K * k
    return o_q1, o_q2, o_v1, o_v2, o_z, o_p, o_m, o_m + K


@kernel(cache=True, error_model="numpy")
def channel_v(V1: np.ndarray, V2: np.ndarray, mb1: np.ndarray, ms2: np.ndarray) -> np.ndarray:
    """Kernel: V(k) = mub1^T V1 mub1 + mus2 . V2 on every node (each node's sum in the order
    g, then (g, h) for h, as one loop per term over the nodes)."""
    n, K = mb1.shape
    out = np.zeros(n)
    for g in range(K):
        v2 = V2[g]
        for j in range(n):
            out[j] += ms2[j, g] * v2
        for h in range(K):
            v1 = V1[g, h]
            for j in range(n):
                out[j] += mb1[j, g] * v1 * mb1[j, h]
    return out


@kernel(cache=True, error_model="numpy")
def vhats(iv: np.ndarray, w: np.ndarray, mb1: np.ndarray, ms2: np.ndarray, A: float) -> tuple:
    """Kernel: Vhat1 = A E[mub1 mub1^T/(1+V)], Vhat2 = A E[mus2/(1+V)] (iv = 1/(1+V)); each
    entry summed over the nodes in order, up to four entries a pass (independent chains)."""
    n, K = mb1.shape
    M = np.zeros((K, K))
    v2 = np.zeros(K)
    a = np.empty(n)
    for j in range(n):
        a[j] = w[j] * iv[j]
    for g in range(K):
        for h0 in range(0, K, 4):
            nh = min(4, K - h0)
            h1 = h0 + 1 if nh > 1 else h0
            h2 = h0 + 2 if nh > 2 else h0
            h3 = h0 + 3 if nh > 3 else h0
            s0, s1, s2, s3, sv = 0.0, 0.0, 0.0, 0.0, 0.0
            for j in range(n):
                ag = a[j] * mb1[j, g]
                s0 += ag * mb1[j, h0]
                s1 += ag * mb1[j, h1]
                s2 += ag * mb1[j, h2]
                s3 += ag * mb1[j, h3]
                sv += a[j] * ms2[j, g]
            for i, sm in enumerate((s0, s1, s2, s3)):
                if i < nh:
                    M[g, h0 + i] = sm
            if h0 == 0:
                v2[g] = sv
    return A * M, A * v2


@kernel(cache=True, error_model="numpy")
def v_map(x: np.ndarray, w: np.ndarray, mb1: np.ndarray, ms2: np.ndarray, A: float, lam: float,
          beta: float, pi: np.ndarray) -> np.ndarray:
    """Kernel: the closed (V1, V2) subsystem, x = (V1 flat, V2) -> resolvent(Vhat(x)); for
    three or four groups the sums in one pass (``equations.node_sums_k.v_sums3``, ``v_sums4``:
    the numbers of ``channel_v`` and ``vhats``, bit for bit)."""
    K = pi.shape[0]
    if K == 3 or K == 4:  # (node_sums_k: the same numbers, a block of nodes at a time)
        n = mb1.shape[0]  # (every node; node_sums.v_sums' signature of v_sums3 / v_sums4)
        M, v2 = v_sums3(x, w, mb1, ms2, n) if K == 3 else v_sums4(x, w, mb1, ms2, n)
        tau, nV1, nV2 = resolvent(A * M, lam + A * v2, beta, pi)
    else:
        iv = 1.0 / (1.0 + channel_v(x[:K * K].reshape((K, K)), x[K * K:], mb1, ms2))
        M, v2 = vhats(iv, w, mb1, ms2, A)
        tau, nV1, nV2 = resolvent(M, lam + v2, beta, pi)
    out = np.empty(K * K + K)
    out[:K * K] = nV1.ravel()
    out[K * K:] = nV2
    return out


@kernel(cache=True, error_model="numpy")
def mean_parts(state: np.ndarray, kap: np.ndarray, mu0: np.ndarray, mb1: np.ndarray,
               h: np.ndarray, h1: np.ndarray, h2: np.ndarray) -> tuple:
    """Kernel: per node (b, E0): the mean prediction and E(k) - q(k) (noiseless)."""
    n, K = mb1.shape
    r = kap.shape[1]
    k = h1.shape[1]
    o_q1, o_q2, o_v1, o_v2, o_z, o_p, o_m, _ = sizes(K, r, k)
    Z = state[o_z:o_p].reshape((K, r))
    P = state[o_p:o_m].reshape((K, k))
    m = state[o_m:]
    zk = kap @ Z.T  # (n, K): zeta_g . kappa
    ph = h1 @ P.T  # (n, K): psi_g . h1
    b = np.zeros(n)
    E0 = np.zeros(n)
    for j in range(n):
        bj = 0.0
        c = 0.0
        for g in range(K):
            bj += mu0[j, g] * m[g] + mb1[j, g] * zk[j, g]
            c += mb1[j, g] * ph[j, g]
        b[j] = bj
        E0[j] = h2[j] - 2.0 * bj * h[j] + bj * bj - 2.0 * c
    return b, E0


@kernel(cache=True, error_model="numpy")
def error_parts(state: np.ndarray, kap: np.ndarray, mu0: np.ndarray, mb1: np.ndarray,
                ms2: np.ndarray, h: np.ndarray, h1: np.ndarray, h2: np.ndarray) -> tuple:
    """Kernel: per node (b, E0, q, V): E(k) = E0 + q (noiseless), b the mean prediction."""
    n, K = mb1.shape
    o_q1, o_q2, o_v1, o_v2, o_z, _, _, _ = sizes(K, kap.shape[1], h1.shape[1])
    b, E0 = mean_parts(state, kap, mu0, mb1, h, h1, h2)
    q = channel_v(state[o_q1:o_q2].reshape((K, K)), state[o_q2:o_v1], mb1, ms2)
    V = channel_v(state[o_v1:o_v2].reshape((K, K)), state[o_v2:o_z], mb1, ms2)
    return b, E0, q, V


@kernel(cache=True, error_model="numpy")
def mean_design(iv, w, kap, mu0, mb1, h, eps) -> tuple:
    """Kernel: the weighted designs of the mean channel, sq = sqrt(w/(1+V)):
    Phi = [sq mu0; diag(sqrt(eps))] ((n + K) x K), Psi = [sq mub1_g k_a; 0] ((n + K) x K r) and
    [sq h; 0], so that Phi^T Phi = E[mu0 mu0^T/(1+V)] + diag(eps) and the mean channel is a
    least-squares problem solved stably (docs/THEORY.md §10.5)."""
    n, K = mb1.shape
    r = kap.shape[1]
    Phi = np.zeros((n + K, K))
    Psi = np.zeros((n + K, K * r))
    ht = np.zeros(n + K)
    for j in range(n):
        sq = np.sqrt(w[j] * iv[j])
        ht[j] = sq * h[j]
        for g in range(K):
            Phi[j, g] = sq * mu0[j, g]
            for i in range(r):
                Psi[j, g * r + i] = sq * mb1[j, g] * kap[j, i]
    for g in range(K):
        Phi[n + g, g] = np.sqrt(eps[g])
    return Phi, Psi, ht


@kernel(cache=True, error_model="numpy")
def mean_lstsq(Phi: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Kernel: minimum-norm least-squares m (singular values below 1e-12 of the largest: a
    null space, where only mu0(k) . m, which alone enters, is determined)."""
    K = Phi.shape[1]
    if np.max(np.abs(Phi)) == 0.0:
        return np.zeros(K)
    return np.linalg.lstsq(Phi, rhs, 1e-12)[0]


@kernel(cache=True, error_model="numpy")
def hats_of(state, w, kap, mu0, mb1, ms2, h, h1, h2, A, delta):
    """Kernel: all conjugates at a state: (Vhat1, Vhat2, Qhat1, Qhat2, zetahat, psihat, E, V)."""
    n, K = mb1.shape
    r = kap.shape[1]
    k = h1.shape[1]
    b, E0, q, V = error_parts(state, kap, mu0, mb1, ms2, h, h1, h2)
    iv = 1.0 / (1.0 + V)
    M, v2 = vhats(iv, w, mb1, ms2, A)
    Q1h, Q2h = vhats(iv * iv * (E0 + q + delta), w, mb1, ms2, A)
    zh = np.zeros((K, r))
    ph = np.zeros((K, k))
    for j in range(n):
        a = w[j] * iv[j]
        res = h[j] - b[j]
        for g in range(K):
            for i in range(r):
                zh[g, i] += a * mb1[j, g] * kap[j, i] * res
            for i in range(k):
                ph[g, i] += a * mb1[j, g] * h1[j, i]
    return M, v2, Q1h, Q2h, A * zh, A * ph, E0 + q, V


@kernel(cache=True, error_model="numpy")
def full_map(state, w, kap, mu0, mb1, ms2, h, h1, h2, A, lam, delta, beta, pi, p_inv):
    """Kernel: the literal map of all unknowns (its residual at the answer is what is reported)."""
    return full_map_e(state, w, kap, mu0, mb1, ms2, h, h1, h2, A, lam, delta, beta, pi, p_inv)[0]


@kernel(cache=True, error_model="numpy")
def full_map_e(state, w, kap, mu0, mb1, ms2, h, h1, h2, A, lam, delta, beta, pi, p_inv):
    """Kernel: (:func:`full_map`, E(k) = E0 + q at ``state``: :func:`risk_of` is sum w E)."""
    n, K = mb1.shape
    r = kap.shape[1]
    k = h1.shape[1]
    o_q1, o_q2, o_v1, o_v2, o_z, o_p, o_m, end = sizes(K, r, k)
    M, v2, Q1h, Q2h, zh, ph, E, V = hats_of(state, w, kap, mu0, mb1, ms2, h, h1, h2, A, delta)
    tau, V1, V2 = resolvent(M, lam + v2, beta, pi)
    zeta = np.empty((K, r))
    for g in range(K):
        zeta[g] = beta * pi[g] * tau[g] * zh[g]
    psi = beta * (V1.T @ ph)
    eps = np.zeros(K)
    if p_inv > 0.0:
        eps = p_inv / (A * V2)
    Phi, Psi, ht = mean_design(1.0 / (1.0 + V), w, kap, mu0, mb1, h, eps)
    m = mean_lstsq(Phi, ht - Psi @ zeta.ravel())
    X1 = Q1h + beta * (ph @ ph.T)
    X2 = Q2h.copy()
    for g in range(K):
        X2[g] += beta * np.sum(zh[g] ** 2) + m[g] * m[g] * p_inv / (V2[g] * V2[g])
    dV1, dV2 = dresolvent(M, tau, beta, pi, X1, X2)
    out = np.empty(end)
    out[o_q1:o_q2] = -dV1.ravel()
    out[o_q2:o_v1] = -dV2
    out[o_v1:o_v2] = V1.ravel()
    out[o_v2:o_z] = V2
    out[o_z:o_p] = zeta.ravel()
    out[o_p:o_m] = psi.ravel()
    out[o_m:] = m
    return out, E


@kernel(cache=True, error_model="numpy")
def complete(v, w, kap, mu0, mb1, ms2, h, h1, h2, A, lam, delta, beta, pi, p_inv):
    """Kernel: given (V1, V2), the rest of the state solved exactly: (zeta, m) from their linear
    system (the -b feedback of zetahat; m eliminated by projecting on the complement of the mu0
    design), psi, then (Q1, Q2) from theirs (Qhat is affine in Q). Returns (state, ok, the mean
    design's singular values, the target's power along them, its total power); ok False where
    the Q-system has no physical solution (det <= DET_MIN or a non-positive diagonal)."""
    return complete_parts(v, w, kap, mu0, mb1, ms2, h, h1, h2, A, lam, delta, beta, pi,
                          p_inv)[:5]


@kernel(cache=True, error_model="numpy")
def complete_parts(v, w, kap, mu0, mb1, ms2, h, h1, h2, A, lam, delta, beta, pi, p_inv,
                   half=False):
    """Kernel: :func:`complete`'s five results, then what the literal map at its state shares
    with it (the same (V1, V2)): (iv, Vhat1, Vhat2, tau, V1, V2, A psihat, the mean design
    (Phi, Psi, ht) and its thin SVD (U, sv, Vt) with the rank nk kept, the per-node mean parts
    (b, E0) of the state); the Q-system's node sums in one pass (``equations.node_sums``);
    ``half``: the tables odd and even in the pairs of mirrored nodes, the sums over the pairs
    and the mean design on the first half's rows (``equations.paired.half_sums``)."""
    n, K = mb1.shape
    r = kap.shape[1]
    k = h1.shape[1]
    o_q1, o_q2, o_v1, o_v2, o_z, o_p, o_m, end = sizes(K, r, k)
    V1in = v[:K * K].reshape((K, K))
    V2in = v[K * K:]
    tot = 0.0  # (half: the target's power over every node)
    if half:  # (the same sums and normal equations, to round-off)
        iv, M, v2, ph, Phi, Psi, ht, tot = v_parts_half(v, w, kap, mu0, mb1, ms2, h, h1)
    elif K <= 2:  # (node_sums: the same numbers in one pass)
        iv, M, v2, ph, Phi, Psi, ht = v_parts(v, w, kap, mu0, mb1, ms2, h, h1)
    else:
        iv, M, v2, ph, Phi, Psi, ht = v_parts_k(v, w, kap, mu0, mb1, ms2, h, h1)
    M = A * M
    v2 = A * v2
    tau, V1, V2 = resolvent(M, lam + v2, beta, pi)
    if p_inv > 0.0:
        eps = p_inv / (A * V2)
        for g in range(K):
            Phi[Phi.shape[0] - K + g, g] = np.sqrt(eps[g])
    ph *= A
    # eliminate m: with Qb an orthonormal basis of range(Phi), Psi_r = (I - Qb Qb^T) Psi, the
    # (zeta, m) system is (I + A delta Psi_r^T Psi_r) zeta = A delta Psi_r^T ht (well conditioned
    # however collinear the mu0_g are), then m = lstsq(Phi, ht - Psi zeta) (as in full_map)
    fast = False
    if K == 2:  # Cholesky QR of the two-column design (equations.mean_lsq: equal to round-off)
        fast, zeta, m, zh, U, sv, Vt, power, total = mean_elimination2(Phi, Psi, ht, A, beta,
                                                                       pi, tau, r)
        nk = 2
    if not fast:
        U, sv, Vt = np.linalg.svd(Phi, full_matrices=False)
        nk = 0
        for i in range(sv.shape[0]):
            if sv[i] > 1e-12 * sv[0]:
                nk += 1
        Qb = np.ascontiguousarray(U[:, :nk])
        Psr = Psi - Qb @ (Qb.T @ Psi)
        htr = ht - Qb @ (Qb.T @ ht)
        Sys = Psr.T @ Psr
        rhs = Psr.T @ htr
        for g in range(K):
            dl = A * beta * pi[g] * tau[g]
            for i in range(r):
                gi = g * r + i
                Sys[gi, :] *= dl
                rhs[gi] *= dl
                Sys[gi, gi] += 1.0
        zeta = np.linalg.solve(Sys, rhs)
        # mean_lstsq, by this SVD (the C copy is the one numba's '@' would make of the slice)
        m = np.ascontiguousarray(Vt[:nk].T) @ ((Qb.T @ (ht - Psi @ zeta)) / sv[:nk])
        zh = A * (Psi.T @ (ht - Psi @ zeta - Phi @ m))
        power = (U.T @ ht) ** 2
        total = float(ht @ ht)
    if half:
        total = tot
    state = np.zeros(end)
    state[o_v1:o_v2] = V1in.ravel()
    state[o_v2:o_z] = V2in
    state[o_z:o_p] = zeta
    state[o_p:o_m] = (beta * (V1.T @ ph)).ravel()
    state[o_m:] = m
    # Q: Qhat = r0 + Kq Q, Q = L(Qhat + extra), L = -dV
    if half:
        b, E0, R1, R2, G = q_sums_half(kap[:n // 2] @ state[o_z:o_p].reshape((K, r)).T,
                                       h1 @ state[o_p:o_m].reshape((K, k)).T, m, iv, delta,
                                       w, mu0, mb1, ms2, h, h2)
    elif K <= 2:  # (node_sums: the same sums in one pass)
        b, E0, R1, R2, G = q_sums(np.ascontiguousarray(state[o_z:o_p]).reshape((K, r)),
                                  np.ascontiguousarray(state[o_p:o_m]).reshape((K, k)), m,
                                  iv, delta, w, kap, mu0, mb1, ms2, h, h1, h2)
    else:  # (mean_parts' products, then node_sums_k: its numbers and vhats', pair_gram's)
        b, E0, R1, R2, G = q_sums_k(kap @ state[o_z:o_p].reshape((K, r)).T,
                                    h1 @ state[o_p:o_m].reshape((K, k)).T, m, iv, delta, w,
                                    mu0, mb1, ms2, h, h2)
    R1 = A * R1
    R2 = A * R2
    X1 = R1 + beta * (ph @ ph.T)
    X2 = R2.copy()
    for g in range(K):
        zz = 0.0
        for i in range(r):
            zz += zh[g * r + i] ** 2
        X2[g] += beta * zz + m[g] * m[g] * p_inv / (V2[g] * V2[g])
    nq = K * K + K
    parts = dresolvent_parts(M, tau, beta, pi)
    work = along_work(parts, beta, pi)
    e1, e2 = np.empty((K, K)), np.empty(K)
    along_into(parts, work, M, tau, beta, pi, X1, X2, e1, e2)
    c0 = np.empty(nq)
    for i in range(K * K):
        c0[i] = -e1[i // K, i % K]
    for g in range(K):
        c0[K * K + g] = -e2[g]
    G *= A  # Vhat along every direction of the Q-system (the columns of pair_gram)
    L = K * (K + 1) // 2
    idx = np.empty((K, K), dtype=np.int64)
    c = 0
    for i in range(K):
        for j in range(i, K):
            idx[i, j], idx[j, i] = c, c
            c += 1
    E, K1, K2 = np.zeros((nq, nq)), np.empty((K, K)), np.empty(K)
    for col in range(nq):
        pc = idx[col // K, col % K] if col < K * K else L + col - K * K
        for g in range(K):
            K2[g] = G[pc, L + g]
            for h in range(K):
                K1[g, h] = G[pc, idx[g, h]]
        along_into(parts, work, M, tau, beta, pi, K1, K2, e1, e2)
        for i in range(K * K):
            E[i, col] = e1[i // K, i % K]
        for g in range(K):
            E[K * K + g, col] = e2[g]
    Mq = np.eye(nq) + E
    ok = np.linalg.det(Mq) > DET_MIN
    for i in range(nq):
        ok = ok and Mq[i, i] > 0.0
    qv = np.linalg.solve(Mq, c0)
    state[o_q1:o_q2] = qv[:K * K]
    state[o_q2:o_v1] = qv[K * K:]
    return (state, ok, sv, power, total, iv, M, v2, tau, V1, V2, ph, Phi,
            Psi, ht, U, sv, Vt, nk, b, E0)


@kernel(cache=True, error_model="numpy")
def risk_of(state, w, kap, mu0, mb1, ms2, h, h1, h2) -> float:
    """Kernel: R = E_k E(k) (noiseless test error)."""
    b, E0, q, V = error_parts(state, kap, mu0, mb1, ms2, h, h1, h2)
    return float(np.sum(w * (E0 + q)))
