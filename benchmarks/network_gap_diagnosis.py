"""Diagnosis of the gap between the trained network and its (semi-empirical) theory at large
alpha0 for odd activations: the bulk-variance channel (docs/DERIVATIONS.md §7).

For each repetition, ONE network first layer W1 (the giant step of THEORY.md §1) and the sRF first
layer of the same seed (same W0 and theta*), then, on the SAME ridge inputs and the SAME test
inputs (paired comparisons), the test error of the ridge readout on:

- ``net``            the network's features sigma(W1 x);
- ``net_get``        their conditional Gaussian equivalent given kappa = <v, x> (THEORY.md §4):
                     mu0(k) + mu1(k) ((W1 v - r)_k k + (W1 Pi x)_k) + mu_star(k) xi_k, with the
                     (r, c) of from_weights(W1) and xi i.i.d. N(0, 1): the object the
                     semi-empirical theory solves;
- ``net_get_het``    the same plus the per-neuron bulk variance to first order,
                     + (c_k - c) d mu0/dc (k); ``_v``: only the part lam_v (Bv)_k of c_k - c,
                     ``_vt``: the parts along Bv and Bt (least squares over neurons);
- ``net_rot``        sigma(O W1 x), O a Haar rotation of neuron space that fixes 1, W1 v and W1 t
                     (Omega's spectrum and the three channels unchanged, entrywise structure
                     scrambled);
- ``net_renorm``     the network's rows rescaled so that every row has the bulk norm sqrt(c)
                     outside v (spike (W1 v)_k kept): removes the row-norm spread only;
- ``srf``, ``srf_get`` the same two for the sRF first layer; ``srf_gauss``: sRF with Gaussian
                     instead of spherical rows (a norm spread not aligned with anything);
                     ``srf_scaled``: sRF with the predicted rescaling 1 + eta c2 s |u| (w0_k . v)
                     of the rows (asymptotics.step.row_channel);

and the semi-empirical theory of each first layer (``risk(..., measure=from_weights(W1, v,
theta))``), for the network also with the bulk-variance channel at the measured lam_v
(``net_semi_row``). Also prints the per-neuron spread of the first layers (sd of c_k, its
correlation with (W v)_k and (W theta*)_k, lam_v, lam_t, |eps|^2, the top eigenvalues of Omega).

Run: python -m benchmarks.network_gap_diagnosis [--d 1000 --seeds 2 --variants ...]; cost at the
default setting: about 1.5 core-minutes per repetition at d = 1000 with every variant, 5 at
d = 2000 with six.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

import asymptotics as A
import asymptotics.step.row_channel  # noqa: F401  (A.row_channel)
from asymptotics.coefficients.functions import get_function
from validation.protocol.simulator import Setting, first_layer

CHUNK = 4000
VARIANTS = ("net", "net_get", "net_get_het", "net_get_het_v", "net_get_het_vt", "net_rot",
            "net_renorm", "srf", "srf_get", "srf_gauss", "srf_scaled")


def _tables(sigma, r: float, c: float, kmax: float = 9.0, nk: int = 3601, nq: int = 121):
    """mu0, mu1, mu_star on a kappa grid (THEORY.md §4) by Gauss-Hermite in z."""
    z, w = np.polynomial.hermite_e.hermegauss(nq)
    w = w / w.sum()
    k = np.linspace(-kmax, kmax, nk)
    pre = r * k[:, None] + math.sqrt(c) * z[None, :]
    s = sigma(pre)
    mu0 = s @ w
    mu1 = (s * z[None, :]) @ w / math.sqrt(c)
    m2 = (s * s) @ w
    mus = np.sqrt(np.maximum(m2 - mu0**2 - c * mu1**2, 0.0))
    return k, mu0, mu1, mus


class Features:
    """Feature map of one variant: ``kind`` 'exact' (sigma(W x)) or 'get' (cGET given kappa)."""

    def __init__(self, W: np.ndarray, sigma, kind: str, v: np.ndarray, seed: int = 0,
                 het: str = "", t: np.ndarray | None = None):
        self.W, self.sigma, self.kind, self.v = W, sigma, kind, v
        self.p = W.shape[0]
        if kind == "get":
            Wv = W @ v
            self.r = float(Wv.mean())
            self.delta = Wv - self.r
            WP = W - np.outer(Wv, v)
            self.c = float(np.einsum("ij,ij->", WP, WP) / self.p)
            self.Wv = Wv
            self.tab = _tables(sigma, self.r, self.c)
            # per-neuron bulk variance c_k = |Pi w_k|^2: first order in c_k - c of mu0(k; c_k)
            self.eps = np.einsum("ij,ij->i", WP, WP) - self.c if het else None
            if het in ("v", "vt"):  # only the part of eps along Bv (and Bt): row_channel()
                lv, lt, _ = row_channel(W, v, t)
                self.eps = lv * self.delta + (lt * (W @ t) if het == "vt" else 0.0)
            if het:
                h = 1e-3 * self.c
                up, dn = _tables(sigma, self.r, self.c + h), _tables(sigma, self.r, self.c - h)
                self.dmu0 = (up[1] - dn[1]) / (2 * h)
            self.rng = np.random.default_rng(seed)

    def __call__(self, X: np.ndarray) -> np.ndarray:
        H = X @ self.W.T
        if self.kind == "exact":
            F = self.sigma(H)
        else:
            kap = X @ self.v
            H -= np.outer(kap, self.Wv)  # (W Pi x)_k
            H += np.outer(kap, self.delta)  # + (W v - r)_k kappa
            k, t0, t1, ts = self.tab
            m0, m1, ms = (np.interp(kap, k, t) for t in (t0, t1, ts))
            F = m0[:, None] + m1[:, None] * H
            if self.eps is not None:
                F += np.outer(np.interp(kap, k, self.dmu0), self.eps)
            F += ms[:, None] * self.rng.standard_normal(H.shape)
        return F / math.sqrt(self.p)


def ridge_and_test(feat: Features, Xr, yr, Xt, gt, lam: float) -> float:
    p = feat.p
    G, b = np.zeros((p, p)), np.zeros(p)
    for i in range(0, Xr.shape[0], CHUNK):
        F = feat(Xr[i:i + CHUNK])
        G += F.T @ F
        b += F.T @ yr[i:i + CHUNK]
    G[np.diag_indices(p)] += lam
    a = np.linalg.solve(G, b)
    se = 0.0
    for i in range(0, Xt.shape[0], CHUNK):
        res = gt[i:i + CHUNK] - feat(Xt[i:i + CHUNK]) @ a
        se += float(res @ res)
    return se / Xt.shape[0]


def rotate_fixing(W: np.ndarray, keep: list[np.ndarray], rng) -> np.ndarray:
    """O W with O Haar on the orthogonal complement of span(keep) in R^p, identity on it."""
    p = W.shape[0]
    U, _ = np.linalg.qr(np.column_stack(keep))
    Qf, _ = np.linalg.qr(np.column_stack([U, rng.standard_normal((p, p - U.shape[1]))]))
    C = Qf[:, U.shape[1]:]
    R, rr = np.linalg.qr(rng.standard_normal((p - U.shape[1],) * 2))
    R *= np.sign(np.diag(rr))
    return U @ (U.T @ W) + C @ (R @ (C.T @ W))


def renormalise(W: np.ndarray, v: np.ndarray) -> np.ndarray:
    Wv = W @ v
    B = W - np.outer(Wv, v)
    n2 = np.einsum("ij,ij->i", B, B)
    B *= np.sqrt(n2.mean() / n2)[:, None]
    return B + np.outer(Wv, v)


def row_channel(W: np.ndarray, v: np.ndarray, t: np.ndarray) -> tuple[float, float, float]:
    """Least squares eps_k = lam_v (Bv)_k + lam_t (Bt)_k + eps_perp,k of the bulk variances
    eps_k = c_k - c on the two channel vectors; returns (lam_v, lam_t, p |eps_perp|^2/... as
    sum eps_perp^2)."""
    Wv = W @ v
    B = W - np.outer(Wv, v)
    eps = np.einsum("ij,ij->i", B, B)
    eps -= eps.mean()
    X = np.column_stack([Wv - Wv.mean(), W @ t])
    coef, *_ = np.linalg.lstsq(X, eps, rcond=None)
    res = eps - X @ coef
    return float(coef[0]), float(coef[1]), float(res @ res)


def row_channel_risk(alpha: float, kw: dict, measure, lam_v: float) -> float:
    """Semi-empirical theory with the bulk-variance channel folded into the v channel: the
    mean function k mu1(k) of the Bv channel becomes k mu1(k) + lam_v nu(k), nu = d mu0/dc =
    E sigma''(r k + sqrt(c) z)/2 (the kernels use kappa only through kappa mu1, so this is
    kappa -> kappa + lam_v nu/mu1). Ignores the part of eps along Bt and orthogonal to both."""
    from dataclasses import replace

    prob = A.build_problem(measure=measure, **kw)
    k, sp = prob.coefficients, prob.spike
    h = 1e-4 * sp.c
    up, dn = (A.conditional_coefficients(prob.sigma, prob.target, r=sp.r, c=sp.c + s,
                                         gamma=sp.gamma) for s in (h, -h))
    if not (np.allclose(up.kappa, k.kappa) and np.allclose(dn.kappa, k.kappa)):
        raise RuntimeError("kappa nodes differ between c and c +- h")
    nu = (up.mu0 - dn.mu0) / (2 * h)
    ratio = np.divide(nu, k.mu1, out=np.zeros_like(nu), where=np.abs(k.mu1) > 1e-200)
    kap = k.kappa + lam_v * ratio
    prob = replace(prob, coefficients=replace(k, kappa=kap))
    return A.solve_point(prob, alpha).risk


def spread(W: np.ndarray, v: np.ndarray, theta: np.ndarray) -> dict:
    """Per-neuron spread: spike (W v)_k, teacher projection (W theta)_k, bulk variance
    c_k = |Pi w_k|^2, and the regression slope of c_k on (W theta)_k with its correlation."""
    Wv, Wth = W @ v, W @ theta
    B = W - np.outer(Wv, v)
    n2 = np.einsum("ij,ij->i", B, B)
    out = {"r": float(Wv.mean()), "sd(Wv)": float(Wv.std()), "sd(Wtheta)": float(Wth.std()),
           "c": float(n2.mean()), "sd(c_k)": float(n2.std())}
    y = n2 - n2.mean()
    for name, x in (("Wv", Wv), ("Wtheta", Wth)):
        x = x - x.mean()
        out[f"corr c_k,{name}"] = float(x @ y / math.sqrt((x @ x) * (y @ y)))
    return out


def row_scale_slope(sigma, target, alpha0: float, eta: float) -> float:
    """Predicted slope of c_k against (W0 v)_k: 2 a, a = eta c2 s |u| (asymptotics.step.row_channel:
    the He2 part of sigma' makes the step add a (w0_k . v) w0_k to row k)."""
    from asymptotics.step.row_channel import he2_coefficient

    sp = A.srf_mapping(sigma, target, alpha0=alpha0, eta=eta)
    return 2.0 * eta * he2_coefficient(sigma) * sp.scale * sp.u_norm


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sigma", default="erf")
    ap.add_argument("--target", default="sin")
    ap.add_argument("--beta", type=float, default=2.0)
    ap.add_argument("--alpha0", type=float, default=20.0)
    ap.add_argument("--eta", type=float, default=3.0)
    ap.add_argument("--alpha", type=float, default=5.0)
    ap.add_argument("--lam", type=float, default=0.01)
    ap.add_argument("--d", type=int, default=1000)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-test", type=int, default=20000)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    args = ap.parse_args(argv)
    variants = args.variants.split(",")
    sig, tgt = get_function(args.sigma), get_function(args.target)
    base = dict(sigma=args.sigma, target=args.target, alpha=args.alpha, alpha0=args.alpha0,
                eta=args.eta, lam=args.lam, beta=args.beta, d=args.d)
    kw = dict(sigma=args.sigma, target=args.target, alpha0=args.alpha0, eta=args.eta,
              lam=args.lam, beta=args.beta)
    th_srf = A.risk(args.alpha, model="srf", **kw).risk
    th_net = A.risk(args.alpha, model="network", **kw).risk
    th_net_p = A.risk(args.alpha, model="network", p=args.beta * args.d, **kw).risk
    lam_v = A.row_channel.row_variance_slope(sig, tgt, alpha0=args.alpha0, eta=args.eta)
    print(f"predicted: slope of c_k on (W0 v)_k 2 eta c2 s |u| = "
          f"{row_scale_slope(sig, tgt, args.alpha0, args.eta):.4f}, lam_v = {lam_v:.4f}")
    print(f"{args.sigma}/{args.target} beta={args.beta} alpha0={args.alpha0} eta={args.eta} "
          f"alpha={args.alpha} lam={args.lam} d={args.d}: sRF theory {th_srf:.5f}, "
          f"network theory {th_net:.5f} (p = beta d: {th_net_p:.5f})")
    rows = []
    for i in range(args.seeds):
        t0 = time.perf_counter()

        def child(i=i):  # repetition i of simulate(seed=args.seed) (spawn is stateful: anew)
            return np.random.SeedSequence(args.seed).spawn(args.seeds)[i]

        W1, theta, _ = first_layer(Setting(model="network", **base), child(), sig, tgt)
        W1s, theta_s, _ = first_layer(Setting(model="srf", **base), child(), sig, tgt)
        assert np.allclose(theta, theta_s)
        rng = np.random.default_rng([args.seed, i, 7])
        n = int(round(args.alpha * args.d))
        Xr = rng.standard_normal((n, args.d))
        yr = tgt(Xr @ theta)
        Xt = rng.standard_normal((args.n_test, args.d))
        gt = tgt(Xt @ theta)
        row = {"seed": i}
        for name, W in (("net", W1), ("srf", W1s)):
            v = W.mean(axis=0)
            v /= np.linalg.norm(v)
            row[f"{name}_semi"] = A.risk(args.alpha, measure=A.from_weights(W, v, theta),
                                         **kw).risk
            for key, val in spread(W, v, theta).items():
                row[f"{name}:{key}"] = val
            rho = np.linalg.eigvalsh((W - np.outer(W @ v, v)) @ (W - np.outer(W @ v, v)).T)
            row[f"{name}:top3/c"] = np.round(rho[-3:] / row[f"{name}:c"], 2).tolist()
            if name in variants:
                row[name] = ridge_and_test(Features(W, sig, "exact", v), Xr, yr, Xt, gt,
                                           args.lam)
            t = theta - (theta @ v) * v
            t /= np.linalg.norm(t)
            lv, lt, eperp = row_channel(W, v, t)
            row[f"{name}:lam_v"], row[f"{name}:lam_t"] = lv, lt
            row[f"{name}:|eps|^2"] = float(np.var(np.einsum("ij,ij->i", W, W)
                                                  - (W @ v) ** 2) * W.shape[0])
            row[f"{name}:|eps_perp|^2"] = eperp
            if name == "net":
                row["net_semi_row"] = row_channel_risk(
                    args.alpha, kw, A.from_weights(W, v, theta), lv)
            for het in ("", "v", "vt"):
                key = f"{name}_get_het{het and '_' + het}"
                if key in variants:
                    row[key] = ridge_and_test(Features(W, sig, "get", v, seed=i,
                                                       het=het or "full", t=t),
                                              Xr, yr, Xt, gt, args.lam)
            if name == "srf" and "srf_scaled" in variants:
                # sRF with the predicted row scaling 1 + a (w0_k . v): the mechanism alone
                a = row_scale_slope(sig, tgt, args.alpha0, args.eta) / 2.0
                W0 = (W - np.outer(np.full(W.shape[0], row["srf:r"]), v))  # sqrt(c) W0 (+ O(1/d))
                Wsc = (1.0 + a * (W0 @ v) / math.sqrt(row["srf:c"]))[:, None] * W0
                Wsc += np.outer(np.full(W.shape[0], row["srf:r"]), v)
                row["srf_scaled_semi"] = A.risk(args.alpha, measure=A.from_weights(Wsc, v, theta),
                                                **kw).risk
                row["srf_scaled"] = ridge_and_test(Features(Wsc, sig, "exact", v), Xr, yr, Xt, gt,
                                                   args.lam)
                for key, val in spread(Wsc, v, theta).items():
                    row[f"srf_scaled:{key}"] = val
            if name == "srf" and "srf_gauss" in variants:  # Gaussian rows instead of spherical
                Wg = math.sqrt(row["srf:c"]) * rng.standard_normal(W.shape) / math.sqrt(args.d)
                Wg += np.outer(np.full(W.shape[0], row["srf:r"]), v)
                row["srf_gauss_semi"] = A.risk(args.alpha, measure=A.from_weights(Wg, v, theta),
                                               **kw).risk
                row["srf_gauss"] = ridge_and_test(Features(Wg, sig, "exact", v), Xr, yr, Xt, gt,
                                                  args.lam)
            if f"{name}_get" in variants:
                row[f"{name}_get"] = ridge_and_test(Features(W, sig, "get", v, seed=i), Xr, yr,
                                                    Xt, gt, args.lam)
            if name == "net":
                if "net_rot" in variants:
                    Wr = rotate_fixing(W, [np.ones(W.shape[0]), W @ v, W @ t], rng)
                    row["net_rot"] = ridge_and_test(Features(Wr, sig, "exact", v), Xr, yr, Xt,
                                                    gt, args.lam)
                    row["net_rot_semi"] = A.risk(args.alpha,
                                                 measure=A.from_weights(Wr, v, theta), **kw).risk
                    for key, val in spread(Wr, v, theta).items():
                        row[f"net_rot:{key}"] = val
                if "net_renorm" in variants:
                    Wn = renormalise(W, v)
                    row["net_renorm"] = ridge_and_test(Features(Wn, sig, "exact", v), Xr, yr,
                                                       Xt, gt, args.lam)
        row["sec"] = time.perf_counter() - t0
        rows.append(row)
        print({k: (round(x, 5) if isinstance(x, float) else x) for k, x in row.items()},
              flush=True)
    keys = [k for k in rows[0] if isinstance(rows[0][k], float) and k != "sec"]
    print(f"\n{'quantity':<22} {'mean':>9} {'s.e.':>9}   (seeds {args.seed}/{args.seeds})")
    for k in keys:
        x = np.array([r[k] for r in rows])
        se = x.std(ddof=1) / math.sqrt(x.size) if x.size > 1 else float("nan")
        print(f"{k:<22} {x.mean():9.5f} {se:9.5f}")
    for a, b in (("net", "net_get"), ("net", "net_semi"), ("net", "net_rot"),
                 ("net", "net_renorm"), ("net", "net_get_het"), ("net", "net_get_het_vt"),
                 ("net", "net_get_het_v"), ("net", "net_semi_row"), ("srf", "srf_get"),
                 ("srf", "srf_gauss"), ("srf_gauss", "srf_gauss_semi"), ("srf", "srf_scaled"),
                 ("srf_scaled", "srf_scaled_semi"), ("net", "srf")):
        if a in rows[0] and b in rows[0]:
            dlt = np.array([r[a] - r[b] for r in rows])
            se = dlt.std(ddof=1) / math.sqrt(dlt.size) if dlt.size > 1 else float("nan")
            print(f"paired {a} - {b}: {dlt.mean():+.5f} +- {se:.5f}")


if __name__ == "__main__":
    main()
