"""The network route's groups for relu with a three-value readout (docs/THEORY.md §12.4, §15):
the surrogate's rule (closed-form xi-moments on the checked graded lattice) shared by both
routes, and the network mapping (states and bulk covariances) against an independent
re-implementation (every node of the full product rule, no per-node sums, no grading, no check)
on a much finer uniform lattice."""

from __future__ import annotations

import math

import numpy as np

from asymptotics.multiindex import step_rules, xi_lines
from asymptotics.multiindex import steps as steps_mod
from asymptotics.multiindex.steps import (
    GroupState,
    evaluate,
    factor,
    mapping_inputs,
    steps_mapping,
)
from asymptotics.network import groups
from asymptotics.spiked.coefficients import tensor_rule

N7 = dict(target="z1 + z1*z2", readout={2.0: 0.25, 1.0: 0.5, -1.0: 0.25}, alpha0=16.0,
          eta=(2.0, 8.0))


def reference_step(state, cov, *, g, values, fractions, eta, alpha0, delta, k, refine, rest):
    """One network step (asymptotics.network.groups' module docstring) summed over every node
    of the product of a uniform per-axis trapezoid rule on the spike axes (steps 2 pi /
    (sqrt(80) sqrt(1 + 4 b^2)) / refine, b the steepest |M| / sqrt(c) on the axis) and a
    Gauss-Hermite rule of ``rest`` nodes per other axis, with relu's closed-form moments."""
    K = state.a.shape[0]
    q = state.L.shape[1]
    n = k + q
    S = np.hstack([state.a, state.L])
    _, sv, vt = np.linalg.svd(S, full_matrices=True)
    r = int(np.sum(sv > 1e-10 * max(1.0, sv.max(initial=0.0))))
    Mmat = S @ vt[:r].T
    if r:
        b = np.max(np.abs(Mmat) / np.sqrt(state.c)[:, None], axis=0)
        hs = np.minimum(2 * math.pi / (math.sqrt(80.0) * np.sqrt(1 + 4 * b * b)), 0.5) / refine
        U, wu = step_rules.lattice(hs, 9.0, 0.0)[:2]
    else:
        U, wu = np.zeros((1, 0)), np.ones(1)
    R, wr = tensor_rule(n - r, rest) if n > r else (np.zeros((1, 0)), np.ones(1))
    sc = np.sqrt(state.c)
    M = U @ Mmat.T
    mom = np.stack([xi_lines.relu_closed(float(sc[h]), M[:, h]) for h in range(K)], axis=-1)
    F, m1, m2, v = mom[:, 0], mom[:, 1], mom[:, 2], mom[:, 3] - mom[:, 1] ** 2
    m1p = m2 / sc[None, :]
    f = F @ (fractions * values)
    acc: dict = {}
    rows = max(1, 200_000 // R.shape[0])
    for lo in range(0, U.shape[0], rows):  # blocks of spike nodes (memory)
        sl = slice(lo, lo + rows)
        X = (U[sl] @ vt[:r])[:, None, :] + (R @ vt[r:])[None, :, :]  # (u, rest, n)
        w = wu[sl, None] * wr[None, :]
        e = evaluate(g, X[..., :k]) - f[sl, None]
        e2 = e * e + delta
        e3 = e**3 + 3 * e * delta
        e4 = e**4 + 6 * e * e * delta + 3 * delta**2
        a1, p1, v1 = m1[sl], m1p[sl], v[sl]
        part = dict(
            dX=np.einsum("ur,ug,urj->gj", w * e, a1, X),
            e_m2=np.einsum("ur,ug->g", w * e, m2[sl]),
            noise_v=np.einsum("ur,ug->g", w * e2, v1),
            noise_mm=np.einsum("ur,ug,uh->gh", w * e2, a1, a1),
            e_m1p=np.einsum("ur,ug->g", w * e, p1),
            J=np.einsum("ur,ug,uri,urj->gij", w * e, p1, X, X, optimize=True),
            NX=np.einsum("ur,ug,uri,urj->gij", w * e2, v1, X, X, optimize=True),
            T3=np.einsum("ur,ug,uh,uri->ghi", w * e2, p1, a1, X, optimize=True),
            T5=np.einsum("ur,ug,uh,uri->ghi", w * e3, v1, a1, X, optimize=True),
            T4=np.einsum("ur,ug,uh,ul->ghl", w * e3, p1, a1, a1, optimize=True),
            T6=np.einsum("ur,ug,uh,ul->ghl", w * e4, v1, a1, a1, optimize=True))
        for key, val in part.items():
            acc[key] = acc.get(key, 0.0) + val
    dX, e_m2, noise_v, noise_mm, e_m1p = (acc[x] for x in ("dX", "e_m2", "noise_v",
                                                              "noise_mm", "e_m1p"))
    J, NX, T3, T5, T4, T6 = (acc[x] for x in ("J", "NX", "T3", "T5", "T4", "T6"))
    sqrt_c = sc + eta * values * e_m2
    nz = eta**2 * values**2 * noise_v / alpha0
    fresh = factor(eta**2 * np.outer(values, values) * noise_mm / alpha0)
    outside = np.hstack([state.L + eta * values[:, None] * dX[:, k:], fresh])
    L_new = factor(outside @ outside.T)
    qf = fresh.shape[1]
    ne = n + qf
    sf = eta * values[:, None] * np.linalg.pinv(fresh).T / alpha0
    P = np.zeros((k + L_new.shape[1], ne))
    P[:k, :k] = np.eye(k)
    P[k:, k:] = np.linalg.pinv(L_new) @ outside
    out = []
    for gi in range(K):
        Jg = np.zeros((ne, ne))
        Jg[:n, :n] = J[gi]
        Jg[:n, n:] = T3[gi].T @ sf
        Jg[n:, :n] = Jg[:n, n:].T
        Jg[n:, n:] = e_m1p[gi] * np.eye(qf) + sf.T @ T4[gi] @ sf
        Lg = np.eye(ne) + eta * values[gi] * Jg
        Cg = np.zeros((ne, ne))
        Cg[:n, :n] = cov[gi]
        Cg[n:, n:] = state.c[gi] * np.eye(qf)
        Cg = Lg @ Cg @ Lg.T + nz[gi] * np.eye(ne)
        Sg = eta * values[gi] * Jg[:, n:]
        Sg[n:] -= eta * values[gi] * e_m1p[gi] * np.eye(qf)
        Cg -= state.c[gi] * Sg @ Sg.T
        nw = eta**2 * values[gi] ** 2 / alpha0
        Cg[:n, n:] += nw * T5[gi].T @ sf
        Cg[n:, :n] = Cg[:n, n:].T
        Cg[n:, n:] += nw * sf.T @ T6[gi] @ sf
        Cg[:n, :n] += nw * (NX[gi] - noise_v[gi] * np.eye(n))
        out.append(P @ Cg @ P.T)
    return (GroupState(state.step + 1, state.a + eta * values[:, None] * dX[:, :k], L_new,
                       sqrt_c**2 + nz), np.stack(out))


def reference_mapping(setting: dict, refine: float = 2.0, rest: int = 6):
    """Every state and bulk covariance of :func:`reference_step` (relu, fresh batches)."""
    m = mapping_inputs("relu", setting["target"], steps=len(setting["eta"]),
                       alpha0=setting["alpha0"], eta=setting["eta"], delta=0.0,
                       readout=setting["readout"], quad=steps_mod.Quadrature())
    K = len(m.values)
    st = GroupState(0, np.zeros((K, m.k)), np.zeros((K, 0)), np.ones(K))
    cov = np.repeat(np.eye(m.k)[None], K, axis=0)
    states, covs = [st], [cov]
    for t in range(m.steps):
        st, cov = reference_step(st, cov, g=m.g, values=m.values, fractions=m.fractions,
                                 eta=m.etas[t], alpha0=float(setting["alpha0"]), delta=0.0,
                                 k=m.k, refine=refine, rest=rest)
        states.append(st)
        covs.append(cov)
    return states, covs


def _rel(x: np.ndarray, y: np.ndarray) -> float:
    return float(np.max(np.abs(x - y)) / np.max(np.abs(y)))


def _basis_free(st: GroupState, cov: np.ndarray) -> np.ndarray:
    """The bulk covariances on E written on (z, the groups' outside parts): independent of the
    orthonormal basis of the outside span."""
    k = st.a.shape[1]
    T = np.zeros((k + st.L.shape[0], cov.shape[1]))
    T[:k, :k] = np.eye(k)
    T[k:, k:] = st.L
    return np.einsum("ia,gab,jb->gij", T, cov, T)


def test_network_and_surrogate_share_the_closed_rule():
    """The network route's states are the surrogate's (the same integrals by the same rule):
    relu, a three-value readout, three steps (one spike axis at the second, three at the
    third, where the graded lattice is refined per axis)."""
    groups.clear_cache()
    steps_mod.clear_cache()
    kw = dict(steps=3, alpha0=N7["alpha0"], eta=N7["eta"] + (8.0,), readout=N7["readout"])
    net = groups.network_groups("relu", N7["target"], **kw)
    srf = steps_mapping("relu", N7["target"], **kw)
    assert [np.linalg.matrix_rank(np.hstack([s.a, s.L]), tol=1e-10)
            for s in net.states[1:3]] == [1, 3]
    for s, t in zip(net.states[1:], srf.states[1:], strict=True):
        for x, y in ((s.a, t.a), (s.spike_gram, t.spike_gram), (s.c, t.c)):
            assert _rel(x, y) <= 1e-12


def test_network_closed_rule_agrees_with_a_finer_independent_sum():
    """N7's network mapping (states and bulk covariances at both steps) within 1e-9 of the
    reference (relative to each array's largest entry); the former 96-node xi rule on the
    default lattice was 1e-4 (the states) to 5e-3 (the covariances) off."""
    groups.clear_cache()
    kw = dict(steps=2, alpha0=N7["alpha0"], eta=N7["eta"], readout=N7["readout"])
    net = groups.network_groups("relu", N7["target"], **kw)
    states, covs = reference_mapping(N7)
    for t in (1, 2):
        s, ref = net.states[t], states[t]
        for x, y in ((s.a, ref.a), (s.spike_gram, ref.spike_gram), (s.c, ref.c)):
            assert _rel(x, y) <= 1e-9
        assert _rel(_basis_free(s, net.cov[t]), _basis_free(ref, covs[t])) <= 1e-9
