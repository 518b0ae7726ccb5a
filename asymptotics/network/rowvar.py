"""The rows' bulk through the giant steps with their outside scale as one more coordinate
(docs/DERIVATIONS.md §10, THEORY.md §16.9).

A row's pre-activation is ``(s_g + b_i^E).x_E + sqrt(c_i) xi`` with its *own* outside norm
``c_i``; a step maps ``(y_i, sqrt(c_i))`` by the gradient of ``Phi_g(w, s) = E[e sigma(w.x_E +
s xi)]``, so to first order in ``(y, Delta)``, ``Delta = sqrt(d) (sqrt(c_i) - sqrt(c_g))``, the
Jacobian is ``I + eta eps_g [[J_g, a_g], [a_g^T, b_g]]`` (``J_g`` the route's, ``a_g = E[e m1c
x]``, ``b_g = E[e m2c]``, the xi moments' derivatives in ``sqrt(c)`` by Stein), plus at finite
alpha0 the row-specific batch noise (10.3). The route's E block is reproduced term for term
(:func:`asymptotics.network.groups.network_groups`), the coupling feeds ``Delta`` back into it.
Outputs: ``Sig_g`` on E, the slope ``lam_ga = 2 sqrt(c_g) Cov(Delta, y_a)/(c_g Sig_aa)`` of the
rows' variance on their spike coordinates, and the channels on ``[V, S, T]`` with the scale
``S`` that the network route takes (DERIVATIONS.md §12). At one step from W0 ``a = c2 u``: the
one-step bulk-variance channel of DERIVATIONS.md §7."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from asymptotics.coefficients.functions import Function
from asymptotics.multiindex import graded
from asymptotics.multiindex.steps import (
    CHUNK,
    RANK_TOL,
    REST_NODES,
    TRAPEZOID_STEP,
    Quadrature,
    factor,
    mapping_inputs,
)
from asymptotics.multiindex.steps import evaluate as _evaluate
from asymptotics.multiindex.steps import trapezoid as _trapezoid
from asymptotics.multiindex.xi_lines import is_relu
from asymptotics.network.compiled.kinked import KEYS as KINKED_KEYS
from asymptotics.network.compiled.kinked import relu_moments
from asymptotics.network.groups import channels_on, model_basis, rest_sums
from asymptotics.spiked.coefficients import tensor_rule

#: the trapezoid rule of the xi moments (a row's own direction): spectrally accurate for a smooth
#: sigma (401 and 1601 nodes agree to 1e-15 on tanh), first order at a kink (relu: 4001 nodes)
XI_HALF, XI_NODES, XI_NODES_KINK = 10.0, 401, 4001
LINE_NODES = 2001  # the shifts of the xi moments' spline on a large spike lattice
LINE_XI = 40001  # xi nodes on those shifts at a kink (the first-order rule's error ~1e-4)
_CACHE: dict = {}
CACHE_SIZE = 64


@dataclass(frozen=True)
class RowVariance:
    """The rows' bulk after the steps with its outside scale (module docstring): ``cov[t]``
    (K x (n+1) x (n+1), d times the covariance of ``(y, Delta)``, n = k + q_t, the route's (z, h)
    coordinates), ``sig`` (K x (r+k) x (r+k): ``Sig_g`` on the model's basis ``[V, T]``, as
    :func:`asymptotics.network.groups.model_channels`), ``sig_route`` (the same without the
    scale coordinate: the route's), ``slope`` (K x r: ``lam_ga``, each spike coordinate on its
    own) and ``regression`` (K x r: the joint regression of ``c_i`` on the r spike coordinates
    ``(B v_a)_i``) and ``sig_scale`` (K x (r+1+k) x (r+1+k): ``sig`` with the scale coordinate
    ``S_i = (c_i - c_g)/(2 c_g)`` between V and T, in the same units: the network route's
    channels with the rows' outside scale, DERIVATIONS.md §12)."""

    sigma: str
    target: str
    readout: str
    alpha0: float
    eta: tuple[float, ...]
    delta: float
    steps: int
    coupled: bool
    cov: tuple[np.ndarray, ...] = field(repr=False)
    sig: np.ndarray = field(repr=False)
    sig_route: np.ndarray = field(repr=False)
    slope: np.ndarray = field(repr=False)
    regression: np.ndarray = field(repr=False)
    sig_scale: np.ndarray = field(repr=False)


def clear_cache() -> None:
    """Forget the cached results (benchmarks time a first computation)."""
    _CACHE.clear()


def _xi_table(sigma: Function, sc: float, m: np.ndarray) -> dict:
    """The xi moments at pre-activation ``m + sc xi`` (per entry of ``m``), Stein's forms for
    the derivatives in ``sc`` (only sigma and sigma' are needed). Many shifts (the spike
    lattice of r >= 2 axes): a cubic spline through :data:`LINE_NODES` shifts (each moment is
    smooth in the shift for ``sc > 0``; against the direct rule <= 1e-9 on relu and tanh)."""
    if m.size > 2 * LINE_NODES and sc > 0.0 and np.ptp(m) > 0.0:
        from scipy.interpolate import CubicSpline

        line = np.linspace(m.min(), m.max(), LINE_NODES)
        tab = _xi_direct(sigma, sc, line, LINE_XI if sigma.kinks else XI_NODES)
        return {key: CubicSpline(line, val)(m) for key, val in tab.items()}
    return _xi_direct(sigma, sc, m)


def _xi_direct(sigma: Function, sc: float, m: np.ndarray, nodes: int | None = None) -> dict:
    """:func:`_xi_table` on every shift (``nodes`` xi nodes; default by the kinks)."""
    xi = np.linspace(-XI_HALF, XI_HALF,
                     nodes or (XI_NODES_KINK if sigma.kinks else XI_NODES))
    w = np.exp(-xi**2 / 2)
    w /= w.sum()
    if sc > 0.0 and is_relu(sigma):  # (the registered relu)
        vals = relu_moments(np.ascontiguousarray(m, dtype=np.float64).ravel(), float(sc), xi, w)
        return {k: np.ascontiguousarray(vals[:, i]) for i, k in enumerate(KINKED_KEYS)}
    out = {k: np.empty(m.size) for k in KINKED_KEYS}
    step = max(1, 400_000 // xi.size)
    for lo in range(0, m.size, step):
        sl = slice(lo, lo + step)
        h = m[sl, None] + sc * xi[None, :]
        f, d1 = sigma.value_and_derivative(h)
        m1 = d1 @ w
        out["F"][sl], out["m1"][sl] = f @ w, m1
        out["m2"][sl] = d1 @ (w * xi)
        out["ex2"][sl] = d1 @ (w * xi**2)  # E[sigma' xi^2]
        out["ex3"][sl] = d1 @ (w * xi**3)
        out["s2"][sl] = (d1**2) @ w
        out["s2x"][sl] = (d1**2) @ (w * xi)
        out["s2x2"][sl] = (d1**2) @ (w * xi**2)
        a = d1 - m1[:, None]
        out["a3"][sl] = (a**3) @ w
        out["a3x"][sl] = (a**3) @ (w * xi)
        out["a4"][sl] = (a**4) @ w
    return out


def _moments(sigma: Function, c: np.ndarray, M: np.ndarray) -> dict:
    """Per trapezoid node (rows of ``M``, the groups' spike pre-activations) and group: the
    route's m1, m2, Var sigma', m1' and the scale coordinate's moments (module docstring)."""
    n, K = M.shape
    keys = ("F", "m1", "m2", "v", "m1p", "m1c", "m2c", "dv_m", "dv_c", "a2x", "axx", "a2xx",
            "a3", "a3x", "a4")
    out = {k: np.zeros((n, K)) for k in keys}
    for g in range(K):
        sc = math.sqrt(c[g])
        t = _xi_table(sigma, sc, M[:, g])
        m1, m2 = t["m1"], t["m2"]
        v = np.maximum(t["s2"] - m1 * m1, 0.0)
        m1p = m2 / sc
        m1c = (t["ex2"] - m1) / sc
        out["F"][:, g], out["m1"][:, g], out["m2"][:, g], out["v"][:, g] = t["F"], m1, m2, v
        out["m1p"][:, g], out["m1c"][:, g] = m1p, m1c
        out["m2c"][:, g] = (t["ex3"] - 2.0 * m2) / sc
        out["dv_m"][:, g] = t["s2x"] / sc - 2.0 * m1 * m1p
        out["dv_c"][:, g] = (t["s2x2"] - t["s2"]) / sc - 2.0 * m1 * m1c
        out["a2x"][:, g] = t["s2x"] - 2.0 * m1 * m2  # E[a^2 xi], a = sigma' - m1
        out["axx"][:, g] = t["ex2"] - m1  # E[a xi^2]
        out["a2xx"][:, g] = t["s2x2"] - 2.0 * m1 * t["ex2"] + m1 * m1  # E[a^2 xi^2]
        out["a3"][:, g], out["a3x"][:, g], out["a4"][:, g] = t["a3"], t["a3x"], t["a4"]
    return out


def _step(state, new_state, gam: Sequence[np.ndarray], *, sigma: Function, g,
          values: np.ndarray, fractions: np.ndarray, eta: float, alpha0: float, delta: float,
          coupled: Sequence[bool], degree: int | None = None) -> list[np.ndarray]:
    """One step of each augmented covariance ``gam[i]`` (K x (n+1) x (n+1)) on one set of
    integrals; ``coupled[i] = False`` drops the scale coordinate's terms (the E block is then
    the route's recursion on this quadrature)."""
    K, k = state.a.shape
    q = state.L.shape[1]
    n = k + q
    S = np.hstack([state.a, state.L])
    _, sv, vt = np.linalg.svd(S, full_matrices=True)
    r = int(np.sum(sv > RANK_TOL * max(1.0, sv.max(initial=0.0))))
    basis = vt.T
    U, wu = _trapezoid(r, TRAPEZOID_STEP.get(r, 0.25))
    closed = graded.closed_moments(sigma, K)  # the route's rule on the other axes
    n_rest = ((2 * degree + 1 if closed else degree + 2) if degree is not None
              else REST_NODES.get(n - r, 8))
    R, wr = tensor_rule(n - r, n_rest) if n > r else (np.zeros((1, 0)), np.ones(1))
    mo = _moments(sigma, state.c, U @ (S @ basis[:, :r]).T)
    f = mo["F"] @ (fractions * values)
    Br, Bo = basis[:, :r].T, basis[:, r:].T  # rows: the spike axes, the other axes
    m = n - r
    RR = (R[:, :, None] * R[:, None, :]).reshape(R.shape[0], m * m)
    Uz, RzT = U @ Br[:, :k], R @ Bo[:, :k]
    rows = max(1, CHUNK // max(1, 8 * R.shape[0]))
    sums = [rest_sums(_evaluate(g, Uz[lo:lo + rows, None, :] + RzT[None, :, :])
                      - f[lo:lo + rows, None], wr, R, RR, delta)
            for lo in range(0, U.shape[0], rows)]
    E0, E1, E2, N0, N1, N2, C0, C1, D0 = (np.concatenate(x) for x in zip(*sums, strict=True))

    def first(W: np.ndarray, s0: np.ndarray, s1: np.ndarray) -> np.ndarray:
        """``sum_u W_u E_rest[s x]`` (W: u x j): j x n."""
        return (W * s0[:, None]).T @ U @ Br + W.T @ s1 @ Bo

    def second(W: np.ndarray, s0, s1, s2) -> np.ndarray:
        """``sum_u W_ug E_rest[s x x^T]`` (W: u x K): K x n x n."""
        A_ = np.einsum("ug,ui,uj->gij", W * s0[:, None], U, U)
        B_ = np.einsum("ug,ui,uj->gij", W, U, s1)
        C_ = (W.T @ s2.reshape(len(s2), m * m)).reshape(K, m, m)
        return (Br.T @ A_ @ Br + Br.T @ B_ @ Bo + Bo.T @ C_ @ Bo
                + np.swapaxes(Br.T @ B_ @ Bo, 1, 2))

    def pair(X: np.ndarray, s0: np.ndarray, s1: np.ndarray) -> np.ndarray:
        """``E_rest[s X_g m1_h x]``: K x K x n."""
        P = (wu[:, None, None] * X[:, :, None] * mo["m1"][:, None, :]).reshape(-1, K * K)
        return first(P, s0, s1).reshape(K, K, n)

    wm = lambda key: wu[:, None] * mo[key]  # noqa: E731
    m1, v, m2 = mo["m1"], mo["v"], mo["m2"]
    e1, e2, e3, e4 = wu * E0, wu * N0, wu * C0, wu * D0
    acc = {
        "e_m2": e1 @ m2, "dL": first(wm("m1"), E0, E1)[:, k:], "noise_v": e2 @ v,
        "noise_mm": (m1 * e2[:, None]).T @ m1, "e_m1p": e1 @ mo["m1p"],
        "J": second(wm("m1p"), E0, E1, E2), "NX": second(wm("v"), N0, N1, N2),
        "T3": pair(mo["m1p"], N0, N1), "T4": np.einsum("u,ug,uh,ul->ghl", e3, mo["m1p"], m1, m1),
        "T5": pair(v, C0, C1), "T6": np.einsum("u,ug,uh,ul->ghl", e4, v, m1, m1),
        # the scale coordinate's (module docstring)
        "a": first(wm("m1c"), E0, E1), "b": e1 @ mo["m2c"],
        "afr": (mo["m1c"] * e2[:, None]).T @ m1, "dnz_m": first(wm("dv_m"), N0, N1),
        "dnz_c": e2 @ mo["dv_c"], "cEw": first(wm("a2x"), N0, N1),
        "cEN": first(wm("a3"), C0, C1), "czw": (mo["axx"] * e2[:, None]).T @ m1,
        "czN": (mo["a2x"] * e3[:, None]).T @ m1, "varw": e2 @ (mo["a2xx"] - m2**2),
        "cwN": e3 @ (mo["a3x"] - m2 * v), "varN": e4 @ (mo["a4"] - v * v),
    }
    A = acc
    finite = math.isfinite(alpha0)
    sqrt_c = np.sqrt(state.c) + eta * values * A["e_m2"]
    nz = eta**2 * values**2 * A["noise_v"] / alpha0 if finite else np.zeros(K)
    c_new = sqrt_c**2 + nz
    outside = state.L + eta * values[:, None] * A["dL"] if q else np.zeros((K, 0))
    fresh = np.zeros((K, 0))
    if finite:
        fresh = factor(eta**2 * np.outer(values, values) * A["noise_mm"] / alpha0)
        outside = np.hstack([outside, fresh])
    qf = fresh.shape[1]
    # the new outside coordinates: the route's pinv(L_new) [L + eta eps dL, fresh]
    Lq = new_state.L
    n_new = k + Lq.shape[1]
    ne = n + qf
    P = np.zeros((n_new, ne))
    P[:k, :k] = np.eye(k)
    if Lq.shape[1]:
        P[k:, k:] = np.linalg.pinv(Lq) @ outside
    Fp = np.linalg.pinv(fresh) if qf else np.zeros((0, K))
    def one(gam: np.ndarray, coupled: bool) -> np.ndarray:
        out = np.empty((K, n_new + 1, n_new + 1))
        for gi in range(K):
            eg = eta * values[gi]
            sf = eta * values[:, None] * Fp.T / alpha0 if qf else np.zeros((K, 0))
            Jg = np.zeros((ne, ne))
            Jg[:n, :n] = A["J"][gi]
            if qf:
                Jg[:n, n:] = np.einsum("ha,hb->ab", A["T3"][gi], sf) if n else 0.0
                Jg[n:, :n] = Jg[:n, n:].T
                Jg[n:, n:] = A["e_m1p"][gi] * np.eye(qf) + np.einsum("hl,ha,lb->ab", A["T4"][gi],
                                                                      sf, sf)
            Lg = np.eye(ne) + eg * Jg
            C = np.zeros((ne, ne))
            C[:n, :n] = gam[gi][:n, :n]
            C[n:, n:] = state.c[gi] * np.eye(qf)
            base = Lg @ C @ Lg.T
            addE = nz[gi] * np.eye(ne)
            if qf:
                Sg = eg * (Jg[:, n:] - np.vstack([np.zeros((n, qf)), A["e_m1p"][gi] * np.eye(qf)]))
                addE -= state.c[gi] * (Sg @ Sg.T)
                nw = eg**2 / alpha0
                addE[:n, n:] += nw * np.einsum("ha,hb->ab", A["T5"][gi], sf) if n else 0.0
                addE[n:, :n] = addE[:n, n:].T
                addE[n:, n:] += nw * np.einsum("hl,ha,lb->ab", A["T6"][gi], sf, sf)
            if finite:
                addE[:n, :n] += eg**2 * (A["NX"][gi] - A["noise_v"][gi] * np.eye(n)) / alpha0
            if not coupled:
                CE = base + addE
                out[gi] = 0.0
                out[gi][:n_new, :n_new] = P @ CE @ P.T
                continue
            # the augmented map on (E old, fresh, Delta)
            sc, scn = math.sqrt(state.c[gi]), math.sqrt(c_new[gi])
            a_ext = np.zeros(ne)
            a_ext[:n] = A["a"][gi]
            if qf:
                a_ext[n:] = A["afr"][gi] @ sf
            Mx = np.zeros((ne + 1, ne + 1))
            Mx[:ne, :ne] = Lg
            Mx[:ne, ne] = eg * a_ext
            dS = np.zeros(ne + 1)  # Delta_S' = Delta + eg (a.y + b Delta) (+ Z_w)
            dS[:n] = eg * A["a"][gi]
            dS[ne] = 1.0 + eg * A["b"][gi]
            dnz = np.zeros(ne + 1)
            if finite:
                dnz[:n] = eg**2 * A["dnz_m"][gi] / alpha0
                dnz[ne] = eg**2 * A["dnz_c"][gi] / alpha0
            Mx[ne] = (sqrt_c[gi] * dS + 0.5 * dnz) / scn
            G = np.zeros((ne + 1, ne + 1))
            G[:ne, :ne] = C
            G[:n, ne] = G[ne, :n] = gam[gi][:n, n]
            G[ne, ne] = gam[gi][n, n]
            new = Mx @ G @ Mx.T
            new[:ne, :ne] += addE
            if finite:
                # the step's noise on Delta: (S Z_w + Z_N/2)/sqrt(c'), and its covariances
                var_w = eg**2 * A["varw"][gi] / alpha0
                c_wn = eg**3 * A["cwN"][gi] / alpha0**2
                var_n = eg**4 * (A["varN"][gi] / alpha0**3 + 2.0 * (A["noise_v"][gi] / alpha0)**2)
                s_ = sqrt_c[gi]
                new[ne, ne] += (s_**2 * var_w + s_ * c_wn + var_n / 4.0) / c_new[gi]
                cov_e = np.zeros(ne)  # Cov(noise on (E, fresh), Delta noise)
                cov_e[:n] = (s_ * eg**2 * A["cEw"][gi] / alpha0
                             + 0.5 * eg**3 * A["cEN"][gi] / alpha0**2)
                if qf:
                    # the fresh coordinates sqrt(c) zeta (mapped by Lg) and their self-terms
                    zw = eg * A["czw"][gi] / alpha0  # Cov(sqrt(d) w.phi_h, Z_w), per h
                    zn = eg**2 * A["czN"][gi] / alpha0**2
                    cz = Fp @ (eta * values * (s_ * zw + 0.5 * zn))  # Cov(zeta_a, Delta noise)
                    cov_e += Lg[:, n:] @ (sc * cz)
                    cov_e[n:] += eg * (A["czN"][gi] @ sf) * s_ * eg / alpha0
                cov_e /= c_new[gi] ** 0.5
                new[:ne, ne] += cov_e
                new[ne, :ne] += cov_e
            Pa = np.zeros((n_new + 1, ne + 1))
            Pa[:n_new, :ne] = P
            Pa[n_new, ne] = 1.0
            out[gi] = Pa @ new @ Pa.T
        return out

    return [one(gm, cp) for gm, cp in zip(gam, coupled, strict=True)]


def row_variance(sigma: str | Function, target: str, *, steps: int, alpha0: float,
                 eta: float | Sequence[float], delta: float = 0.0,
                 readout: object = "constant", coupled: bool = True) -> RowVariance:
    """The rows' bulk with its outside scale after ``steps`` steps (module docstring), on the
    network route's states (:func:`asymptotics.network.groups.network_groups`). Cached per
    setting."""
    m = mapping_inputs(sigma, target, steps=steps, alpha0=alpha0, eta=eta, delta=delta,
                       readout=readout, quad=Quadrature())
    key = (m.sigma, target, float(alpha0), m.etas[:m.steps], m.delta, m.readout, bool(coupled))
    try:
        hit = _CACHE.get(key)
    except TypeError:  # an unhashable part: no cache
        key, hit = None, None
    if hit is not None:
        return hit
    out = _row_variance(m, sigma, target, alpha0, readout, coupled)
    if key is not None:
        _CACHE[key] = out
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
    return out


def _row_variance(m, sigma, target: str, alpha0: float, readout: object,
                  coupled: bool) -> RowVariance:
    from asymptotics.network.groups import network_groups

    ng = network_groups(sigma, target, steps=m.steps, alpha0=alpha0, eta=m.etas[:m.steps],
                        delta=m.delta, readout=readout)
    K, k = len(m.values), m.k
    gam = np.zeros((K, k + 1, k + 1))
    gam[:, :k, :k] = np.eye(k)
    covs, plain = [gam], gam  # (plain: the same recursion without the scale's terms)
    for t in range(m.steps):
        st, nst = ng.states[t], ng.states[t + 1]
        gam, plain = _step(st, nst, (gam, plain), sigma=m.sigma, g=m.g, values=m.values,
                           fractions=m.fractions, eta=m.etas[t], alpha0=float(alpha0),
                           delta=m.delta, coupled=(coupled, False), degree=m.degree)
        covs.append(gam)
    st = ng.states[-1]
    n = gam.shape[1] - 1
    B = model_basis(st)
    sig = channels_on(st, B, gam[:, :n, :n])
    sig_route = channels_on(st, B, ng.cov[-1])
    rr = B.shape[1] - k
    Bx = np.zeros((n + 1, B.shape[1] + 1))
    Bx[:n, :rr], Bx[:n, rr + 1:], Bx[n, rr] = B[:, :rr], B[:, rr:], 1.0
    # the route's E block plus what the scale's terms add on this quadrature (its own
    # quadrature error, e.g. a kink's xi rule, cancels in the difference)
    ext = gam.copy()
    ext[:, :n, :n] += ng.cov[-1] - plain[:, :n, :n]
    sig_scale = channels_on(st, Bx, ext)
    loadings = st.spiked_model()[0]
    r = np.asarray(loadings).shape[1]
    slope, joint = np.zeros((K, r)), np.zeros((K, r))
    V = B[:, :r]
    for gi in range(K):
        cg = float(st.c[gi])
        for a in range(r):
            var = float(B[:, a] @ gam[gi][:n, :n] @ B[:, a])
            cv = float(B[:, a] @ gam[gi][:n, n])
            slope[gi, a] = 2.0 * math.sqrt(cg) * cv / var if var > 0 else math.nan
        G, cv = V.T @ gam[gi][:n, :n] @ V, V.T @ gam[gi][:n, n]
        if cg > 0 and np.all(np.isfinite(G)) and np.linalg.matrix_rank(G) == r:
            joint[gi] = 2.0 * math.sqrt(cg) * np.linalg.solve(G, cv)
    return RowVariance(sigma=m.sigma.name, target=target, readout=str(readout),
                       alpha0=float(alpha0), eta=tuple(m.etas[:m.steps]), delta=m.delta,
                       steps=m.steps, coupled=coupled, cov=tuple(covs), sig=sig,
                       sig_route=sig_route, slope=slope,
                       regression=joint, sig_scale=sig_scale)
