"""The trained network's features beyond one step (docs/THEORY.md §16.8): the K-group network
route of THEORY.md §15 (the groups of the steps, each group's bulk covariance ``c_g Sig_g`` on
the span E = [V, T] of the spikes and of the unlearned target directions, identity elsewhere).

Bulk: the route's closed (V1, V2) subsystem does not see the channels, so the features' law is
the K-group V-part of :func:`asymptotics.spectra.features.features_solver` at lam = -z on the
route's groups. Outliers: the columns of the bulk on E are a finite number of p-vectors,
``q_{g,j} = P_g B e_j/sqrt(c_g)`` (Gram ``beta pi_g Sig_g`` within group g, zero across groups;
independent of the bulk outside E), each with the left vector ``mub1_g(kappa) x_j``
(``x_j = kappa_j`` on V, a standard normal ``omega_j`` independent of kappa on T). With the
means (left ``mu0_g``, right ``1_g``) the channel system of §16.3 becomes

    Phi1 = (n/p) E[psi psi^T/(1+V)]  (the T rows: delta_jl E[mub1_g mub1_h/(1+V)]),
    Phi2 = blockdiag_g(-tau_g Gram_g),

and the outliers are the roots of det(I - Phi1 Phi2) above the bulk. ``Sig_g = I`` is the sRF
surrogate (the T channels then give no outlier: ``1 + beta tau_g M_gg > 0`` above the bulk)."""

from __future__ import annotations

import math

import numpy as np

from asymptotics.spectra.bbp import Cached, outlier_locations, signed_overlaps
from asymptotics.spectra.branch import real_solution
from asymptotics.spectra.law import Outlier, Solver
from asymptotics.spiked.problem import SpikedProblem

#: the keys of the route's problem this law reads (any other key is a part of the route it
#: does not cover, and is refused)
KNOWN = frozenset({"loadings", "bulk", "fractions", "overlaps", "target", "channels"})
DIAG_TOL = 1e-12  # a target direction with Sig_jj below this (inside V) carries no channel


def network_steps_params(sigma, target: str, *, steps: int, alpha0: float, eta, delta: float,
                         readout: object) -> tuple[dict, np.ndarray, tuple]:
    """(the K-group parameters, the channels ``Sig`` (K x (r+k) x (r+k)), the readout's
    values) of the network route after ``steps`` steps
    (:func:`asymptotics.network.route.network_problem`)."""
    from asymptotics.network.route import network_problem
    from asymptotics.spiked.readouts import parse_readout

    params = dict(network_problem(sigma=sigma, target=target, steps=steps, alpha0=alpha0,
                                  eta=eta, delta=delta, readout=readout))
    extra = sorted(set(params) - KNOWN)
    if extra:
        raise ValueError(f"model='network' features beyond one step do not cover the route's "
                         f"{', '.join(extra)}; use model='srf'")
    sig = np.asarray(params.pop("channels"), dtype=np.float64)
    return params, sig, parse_readout(readout).values


def network_steps_outside(sigma, target: str, *, steps: int, alpha0: float, eta,
                          delta: float, readout: object):
    """The route's bulk outside E with its coupling (a
    :class:`asymptotics.network.coupling.CoupledChannels`, the risk's ``outside="coupled"``,
    :func:`asymptotics.network.route.outside_kw`), or None where the route's bulk outside E is
    isotropic (``alpha0 = inf``)."""
    from asymptotics.network.route import outside_kw

    return outside_kw(sigma, target, steps=steps, alpha0=alpha0, eta=eta, delta=delta,
                      readout=readout, outside="coupled").get("coupled")


def coupled_on(coupled, sig: np.ndarray):
    """The coupling ``coupled`` with the columns' total covariance on E set to ``sig`` (K x
    (r+k) x (r+k); DERIVATIONS.md §10.6): the part the coupling explains,
    ``mean_b a_b Sig_b a_b^T``, is kept and the residual becomes ``Ecov = sig - explained``
    (clipped to be positive semi-definite). The device's own ``Ecov`` is the route's ``Sig``
    minus the same part, so the route's ``Sig`` gives ``coupled`` back."""
    from asymptotics.network.coupling import CoupledChannels

    sig = np.asarray(sig, dtype=np.float64)
    a, S = coupled.a, coupled.bulk.sig
    expl = np.einsum("bgen,bgnm,bgfm->gef", a, S, a) / a.shape[0]
    ecov = np.empty_like(sig)
    for g in range(sig.shape[0]):
        ev, evec = np.linalg.eigh(0.5 * (sig[g] + sig[g].T) - expl[g])
        ecov[g] = (evec * np.maximum(ev, 0.0)) @ evec.T
    return CoupledChannels(coupled.bulk, a, ecov, coupled.r, coupled.k)


def channel_dirs(sig: np.ndarray, r: int) -> list[int]:
    """The directions of [V, T] that carry a channel: V, and the T directions outside V."""
    k = sig.shape[1] - r
    return list(range(r)) + [r + j for j in range(k)
                             if float(np.max(sig[:, r + j, r + j])) > DIAG_TOL]


def network_steps_outliers(prob: SpikedProblem, alpha: float, sol: Solver, edge: float,
                           d: float | None, sig: np.ndarray, values: tuple,
                           row_slope: np.ndarray | None = None, coupled=None
                           ) -> list[Outlier]:
    """The outliers of F^T F (module docstring) at the user's d (None: the limit, where the
    means diverge and the E channels act with the means projected out), with the squared
    overlaps of the eigenvector with 1_p (``mean``), the readout vector (``readout``, K > 1),
    the span of the learned columns ``P_g B V`` (``learned span (B V)``), of the target columns
    ``P_g B t`` (``target (B t)``) and with each channel's right vector. ``row_slope``
    (K x r, optional): the regression lam of the rows' bulk variances on their coordinates
    along V, d Cov(c_i - c_g, (B v_a)_i)/(c_g Sig_aa), which adds the bulk-variance channel
    ``sqrt(c_g) lam_ga nu_g(kappa)`` (nu = d mu0/dc) to the learned channels' left vectors as
    after one step (§16.2); the route does not provide it (None: no such channel).
    ``coupled`` (a :class:`asymptotics.network.coupling.CoupledChannels`, optional): the
    columns on E are coupled to the bulk outside E (``b_E = A_g b_perp + eps``), so their block
    of Phi2 is ``-Acal`` (DERIVATIONS.md §9.8) instead of ``-tau_g Gram_g``, with the columns'
    covariance on E set to ``sig`` (:func:`coupled_on`, §10.6: the coupling's explained part
    kept, the residual from ``sig``)."""
    t = prob.tables
    K, r = prob.loadings.shape
    pi, beta = prob.fractions, prob.beta
    if coupled is not None:
        coupled = coupled_on(coupled, sig)
    dirs = channel_dirs(sig, r)
    nd = len(dirs)
    # channels: K means, then (g, j) for g in groups, j in dirs
    sp = [(g, j) for g in range(K) for j in dirs]
    nch = K + len(sp)
    names = ([f"mean{'' if K == 1 else f' (group {g + 1})'}" for g in range(K)]
             + [(f"learned {j + 1} (B v)" if j < r else f"target {j - r + 1} (B t)")
                + ("" if K == 1 else f" (group {g + 1})") for g, j in sp])
    kap_cols = [i for i, (g, j) in enumerate(sp) if j < r]
    left = np.concatenate([t.mu0] + [t.mub1[:, g:g + 1] * t.kappa[:, j:j + 1]
                                     for g, j in sp if j < r], axis=1)
    if row_slope is not None:
        from asymptotics.spiked.coefficients import feature_tables

        h = 1e-4 * prob.bulk
        nu = (feature_tables(prob.sigma, t.kappa, prob.loadings, prob.bulk + h)[0]
              - feature_tables(prob.sigma, t.kappa, prob.loadings, prob.bulk - h)[0]) / (2 * h)
        for col, i in enumerate(kap_cols):
            g, j = sp[i]
            left[:, K + col] += math.sqrt(prob.bulk[g]) * row_slope[g][j] * nu[:, g]
    gram = np.zeros((nch, nch))  # the right vectors' Gram matrix (|1_g|^2 = p pi_g: finite d)
    for g in range(K):
        blk = slice(K + g * nd, K + (g + 1) * nd)
        gram[blk, blk] = beta * pi[g] * sig[g][np.ix_(dirs, dirs)]
    group = np.array(list(range(K)) + [g for g, _ in sp])
    is_t = np.array([False] * K + [j >= r for _, j in sp])

    m_e = r + (sig.shape[1] - r)
    e_idx = np.array([g * m_e + j for g, j in sp], dtype=np.int64)

    def phi2(x: np.ndarray, gr: np.ndarray) -> np.ndarray:
        """Phi2 = Q^T (lam - F_perp^T F_perp)^-1 Q on all channels (Gram ``gr``)."""
        out = -x[0, :K].real[group][:, None] * gr
        if coupled is not None:
            M = sol.parts(x)[3][0].real
            Ac = coupled.acal(M, beta * pi * x[0, :K].real)
            out[K:, K:] = -Ac[np.ix_(e_idx, e_idx)]
        return out

    def avg(lam: float) -> tuple[np.ndarray, np.ndarray]:
        """(n/p) E[psi psi^T/(1+V)] over all channels and the solution x at lam."""
        x, _ = real_solution(sol, lam)
        _, _, V, _, _, _ = sol.parts(x)
        iv = t.weights / (1.0 + V[0].real)
        E = np.zeros((nch, nch))
        idx = list(range(K)) + [K + i for i in kap_cols]
        E[np.ix_(idx, idx)] = np.einsum("j,ja,jb->ab", iv, left, left)
        mb = np.einsum("j,jg,jh->gh", iv, t.mub1, t.mub1)
        for a in range(nch):
            for b in range(nch):
                if is_t[a] and is_t[b] and sp[a - K][1] == sp[b - K][1]:
                    E[a, b] = mb[group[a], group[b]]
        return alpha / beta * E, x

    out: list[Outlier] = []
    if d is None:
        for g in range(K):
            if float(t.weights @ t.mu0[:, g] ** 2) > 1e-14:
                out.append(Outlier(math.inf, names[g], {"mean": 1.0}))
        si = np.arange(K, nch)
        mi = np.arange(K)

        def phis_(lam: float) -> tuple[np.ndarray, np.ndarray]:
            E, x = avg(lam)
            S = (E[np.ix_(si, si)] - E[np.ix_(si, mi)]
                 @ np.linalg.pinv(E[np.ix_(mi, mi)], rcond=1e-12) @ E[np.ix_(mi, si)])
            return S, phi2(x, gram)[np.ix_(si, si)]

        phis = Cached(phis_)

        for lam in outlier_locations(phis, edge, len(si)):
            c, _ = signed_overlaps(phis, lam)
            ov = _overlaps(np.concatenate([np.full(K, np.nan), c]), gram, K, names, pi, values,
                           is_t, limit=True)
            out.append(Outlier(lam, _dominant(ov, names[K:]), ov))
        return out
    p = beta * d
    gram_d = gram.copy()
    gram_d[np.arange(K), np.arange(K)] = p * pi

    def phis_d_(lam: float) -> tuple[np.ndarray, np.ndarray]:
        E, x = avg(lam)
        return E, phi2(x, gram_d)

    phis_d = Cached(phis_d_)

    for lam in outlier_locations(phis_d, edge, nch):
        c, _ = signed_overlaps(phis_d, lam)
        ov = _overlaps(c, gram_d, K, names, pi, values, is_t, p=p)
        out.append(Outlier(lam, _dominant(ov, names), ov))
    return out


def _overlaps(c: np.ndarray, gram: np.ndarray, K: int, names: list, pi: np.ndarray,
              values: tuple, is_t: np.ndarray, p: float | None = None,
              limit: bool = False) -> dict:
    """The squared overlaps from the signed projections ``c = Q^T v`` on the channels' right
    vectors (Gram ``gram``): spans by ``c_S^T G_SS^-1 c_S``, single channels by c^2/|q|^2."""
    ov = {}
    if not limit:
        vals = np.asarray(values[:K], dtype=np.float64) if len(values) >= K else np.ones(K)
        ov["mean"] = float(np.sum(c[:K]) ** 2 / p)
        if K > 1:
            ov["readout"] = float((vals @ c[:K]) ** 2 / (p * float(pi @ vals ** 2)))
    nch = c.size
    for label, sel in (("learned span (B V)", ~is_t), ("target (B t)", is_t)):
        idx = np.array([i for i in range(K, nch) if sel[i]], dtype=int)
        if idx.size:
            cs = c[idx]
            ov[label] = float(cs @ np.linalg.pinv(gram[np.ix_(idx, idx)], rcond=1e-12) @ cs)
    for i in range(0 if not limit else K, nch):
        ov[names[i]] = float(c[i] ** 2 / gram[i, i]) if gram[i, i] > 0 else math.nan
    return ov


def _dominant(ov: dict, names: list) -> str:
    cands = {k: v for k, v in ov.items() if k in names and math.isfinite(v)}
    return max(cands, key=lambda k: cands[k]) if cands else "spike"


def network_steps_weights(s, target: str, *, alpha0: float, eta, delta: float, beta: float,
                          readout: object, steps: int, d: float | None,
                          channels: np.ndarray | None = None
                          ) -> tuple[Solver, list, float, list[Outlier], dict]:
    """W W^T after ``steps`` steps for the network route (docs/THEORY.md §16.6): row i of group
    g is ``s_g + b_i`` with ``b_i`` of covariance ``c_g I/d`` outside E = [V, T] and
    ``c_g Sig_g/d`` on E (:func:`asymptotics.network.groups.network_groups`). With W_perp the
    rows outside E, ``W W^T = W_perp W_perp^T + L L^T`` exactly (W_perp E = 0), L (p x (r+k))
    the rows' coordinates on E: ``l_i = (loadings_g, 0) + b_i^E``. The outliers solve
    ``det(I - Lambda(lam)) = 0``,
        Lambda = L^T (lam - W_perp W_perp^T)^-1 L = (p/lam) sum_g pi_g
                 (lbar_g lbar_g^T + c_g Sig_g/d)/(1 + c_g m_t(lam)),
    the eigenvector u = R L x (Lambda x = x, |u|^2 = -x^T Lambda' x = 1) and the right one's
    coordinates on E are ``x/sqrt(lam)``. ``Sig_g = I`` gives the outliers of
    :func:`asymptotics.spectra.weights.steps_weights` (the isotropic groups). ``channels``:
    the groups' ``Sig_g`` on ``[V, T]`` to use instead of the route's (a diagnosis: e.g. the
    bulk covariance measured on trained layers); default: ``Sig_g`` of
    :func:`asymptotics.network.rowvar.row_variance` (the route's recursion with each row's
    outside scale as one more coordinate)."""
    from asymptotics.network.groups import network_groups
    from asymptotics.network.rowvar import row_variance
    from asymptotics.spectra.weights import diverging_outliers, rowvar_bulk, rowvar_top

    ng = network_groups(s, target, steps=steps, alpha0=alpha0, eta=eta, delta=delta,
                        readout=readout)
    state = ng.states[-1]
    if channels is None:  # the route's Sig with the rows' outside scale coupled (§16.9)
        sig = row_variance(s, target, steps=steps, alpha0=alpha0, eta=eta, delta=delta,
                           readout=readout).sig
    else:
        sig = np.asarray(channels, float)
    fr = np.asarray(ng.readout.weights, float)
    eps = np.asarray(ng.readout.values, float)
    c = np.asarray(state.c, float)
    loadings, overlaps, rot = state.spiked_model()
    L = np.asarray(loadings, float)
    K, r = L.shape
    k = sig.shape[1] - r
    gam_r = np.asarray(overlaps, float)  # r x k, rotated targets
    rho = np.sqrt(np.maximum(1.0 - np.sum(gam_r ** 2, axis=0), 0.0))
    th_rot = np.vstack([gam_r, np.diag(rho)])  # rotated thetas on [V, T]
    theta = th_rot @ np.asarray(rot, float).T  # original thetas on [V, T]
    sol, support, atom = rowvar_bulk(c, fr, beta)
    params = dict(bulk=c.tolist(), fractions=fr.tolist(), loadings=L.tolist(),
                  learned_target_overlaps=(gam_r @ np.asarray(rot).T).tolist(),
                  channels=sig.tolist())
    if not np.any(L != 0.0):
        return sol, support, atom, [], params
    if d is None:
        return sol, support, atom, diverging_outliers(np.asarray(theta)[:r, :k]), params
    edge, mt = rowvar_top(c, fr, beta)
    p = beta * d
    lbar = np.hstack([L, np.zeros((K, k))])
    second = np.einsum("ga,gb->gab", lbar, lbar) + (c / d)[:, None, None] * sig

    def lam_of(lam: float) -> np.ndarray:
        m = mt(lam)
        if not math.isfinite(m):
            return np.full((r + k, r + k), np.nan)
        return (p / lam) * np.einsum("g,gab->ab", fr / (1.0 + c * m), second)

    def phis_(lam: float) -> tuple[np.ndarray, np.ndarray]:
        return lam_of(lam), np.eye(r + k)

    phis = Cached(phis_)

    outs = []
    for lam in outlier_locations(phis, edge, r + k):
        w, V = np.linalg.eigh(lam_of(lam))
        x = V[:, int(np.argmin(np.abs(w - 1.0)))]
        h = 1e-6 * lam
        dlam = (lam_of(lam + h) - lam_of(lam - h)) / (2.0 * h)
        x = x / math.sqrt(-(x @ dlam @ x))
        m = mt(lam)
        e_v = x / math.sqrt(lam)  # the right vector's coordinates on E
        g_u = p * fr * (lbar @ x) / (lam * (1.0 + c * m))  # 1_g^T u
        ov = {"mean": float(np.sum(g_u) ** 2 / p),
              "readout": float((eps @ g_u) ** 2 / (p * float(fr @ eps ** 2)))}
        ov.update({f"learned {a + 1}": float(e_v[a] ** 2) for a in range(r)})
        ov["learned span"] = float(e_v[:r] @ e_v[:r])
        ov.update({f"target {j + 1}": float((theta[:, j] @ e_v) ** 2) for j in range(k)})
        a_top = int(np.argmax(np.abs(e_v[:r])))
        outs.append(Outlier(float(lam), f"learned {a_top + 1}", ov))
    return sol, support, atom, outs, params
