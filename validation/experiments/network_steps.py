"""The network theory of K groups after readouts and several steps (docs/THEORY.md §15) against
the trained network: the committed Monte Carlo of several steps (``multistep_risk.csv``, STEPS.md)
and of finite-support readouts (``readouts_runs.csv``, READOUTS.md), and new settings fixed
before any theory number was computed for them (:data:`SETTINGS`).

``python -m validation.experiments.network_steps simulate [--d 1000] [--seeds 3] [--only N1,N2]``
simulates the new settings (protocol of THEORY.md §1/§11/§12, an independent numpy simulator
below) as a :class:`validation.campaign.Campaign` (:func:`campaign`: one task per setting, d and
repetition, keyed by its full parameter record -- the setting, d, the repetition, the common
parameters and :data:`VERSION`), run into a SQLite store (``--store``; default beside the
exported CSV: ``validation/reports/data/network_steps_runs.sqlite`` in a checkout, else the user
cache, :func:`validation.paths.data_file`) that starts from the committed CSV and its keys file,
so stored repetitions are not rerun; every stored task is exported, sorted by setting, d and
repetition, atomically to ``network_steps_runs.csv`` with its keys file.
``python -m validation.experiments.network_steps diagnose --setting N1 --d 1000 --seeds 1,2
--steps 2`` trains one network per seed and sets its first layer against its groups (the
semi-empirical decomposition of docs/DERIVATIONS.md §9.5: :func:`diagnose`).
``python -m validation.experiments.network_steps_report [--quiet]`` computes both
theories (``model="network"`` and ``model="srf"``) for every point and writes
``validation/reports/NETWORK_STEPS.md``.

Protocol of the simulator: rows of ``W0`` uniform on the unit sphere of R^d, ``p = beta d``;
the readout ``a_j = eps_j / sqrt(p)`` frozen, with exactly ``round(pi_g p)`` rows of value
``eps_g``; ``T`` giant steps, each on a fresh batch of ``n0 = alpha0 d`` samples,
``w_j <- w_j + (eta_tilde_t eps_j / n0) sum_i (y_i - f(x_i)) sigma'(w_j . x_i) x_i``,
``f(x) = p^-1 sum_j eps_j sigma(w_j . x)``; after each step, ridge (sum loss, ``lam``) of the
readout on the first ``round(alpha d)`` samples of one fresh pool, and the test error on
``n_test`` fresh noiseless inputs, reported as ``test_error - target_power + E g^2`` (the
control variate of STEPS.md). Targets ``g(theta_1 . x, ...)`` with ``theta_j = e_j``.
"""

from __future__ import annotations

import argparse
import math
import pathlib
import sys
import time
from collections.abc import Sequence

import numpy as np

from asymptotics.coefficients.functions import get_function
from asymptotics.coefficients.targets import target_callable
from validation.campaign import Campaign, Schema, refresh_csv
from validation.campaign.store import bad_store_arg
from validation.paths import data_file

REPORTS = pathlib.Path(__file__).resolve().parents[1] / "reports"
RUNS = REPORTS / "data" / "network_steps_runs.csv"
LAM = 0.01
RIDGE_ALPHAS = (0.5, 2.0)
N_TEST = 5000
#: the protocol's version (part of every task's key): raise it when simulate_one changes
VERSION = "1"
SCHEMA = Schema.of(setting=str, d=int, repetition=int, step=int, ridge_alpha=float,
                   test_error=float, target_power=float, test_error_cv=float, sigma=str,
                   target=str, readout=str, alpha0=float, eta=str, beta=float, lam=float,
                   seconds=float)

#: the new settings, fixed before any theory number was computed for them (committed first)
SETTINGS: dict[str, dict] = {
    "N1": dict(sigma="relu", target="z1 + z1*z2", readout={1.0: 1.0}, alpha0=16.0,
               eta=(2.0, 8.0), beta=1.0),
    "N2": dict(sigma="relu", target="z1 + z1*z2", readout={1.0: 0.5, -1.0: 0.5}, alpha0=8.0,
               eta=(2.0, 4.0, 8.0), beta=1.0),
    "N3": dict(sigma="relu", target="tanh(z1)", readout={1.0: 0.5, -1.0: 0.5}, alpha0=2.0,
               eta=(2.0,), beta=2.0),
    "N4": dict(sigma="sigmoid", target="z1 + z1*z2",
               readout={2.0: 1 / 3, 1.0: 1 / 3, -1.0: 1 / 3}, alpha0=16.0, eta=(2.0, 4.0),
               beta=0.5),
    "N5": dict(sigma="erf", target="z1 + z1*z2 + z1*z2*z3", readout={1.0: 0.5, -1.0: 0.5},
               alpha0=16.0, eta=(2.0, 8.0, 16.0), beta=1.0),
    "N6": dict(sigma="sigmoid", target="tanh(z1)", readout={1.0: 1.0}, alpha0=4.0,
               eta=(1.0, 2.0), beta=2.0),
    "N7": dict(sigma="relu", target="z1 + z1*z2", readout={2.0: 0.25, 1.0: 0.5, -1.0: 0.25},
               alpha0=16.0, eta=(2.0, 8.0), beta=0.5),
    "N8": dict(sigma="erf", target="tanh(z1)", readout={2.0: 0.25, 1.0: 0.5, -1.0: 0.25},
               alpha0=2.0, eta=(3.0,), beta=1.0),
}
#: (d, seeds, settings): d = 1000 for every setting; d = 2000 first for the two relu staircases
#: (planned with 2 seeds; 2 more were added after the first report showed s.e. estimates from
#: two seeds as small as 1e-3), then for every setting with 6 seeds (fixed before any of the new
#: runs: the d = 2000 check of the issue's settings, and the s.e. of four seeds; ``simulate
#: --d 2000``)
PLAN = ((1000, 3, tuple(SETTINGS)), (2000, 6, tuple(SETTINGS)))


def readout_text(readout: dict) -> str:
    return "{" + ", ".join(f"{v:g}: {w:.6g}" for v, w in readout.items()) + "}"


def initial_layer(s: dict, d: int, rng: np.random.Generator
                  ) -> tuple[int, np.ndarray, np.ndarray]:
    """``(p, W0, eps)`` of setting ``s`` at dimension ``d``: p = round(beta d), W0 (p x d, rows
    uniform on the unit sphere, drawn from ``rng``) and the readout's value per row (the
    readout's fractions of p, rounded down, the last value taking the rest)."""
    p = int(round(s["beta"] * d))
    W = rng.standard_normal((p, d))
    W /= np.linalg.norm(W, axis=1, keepdims=True)
    vals = np.array(list(s["readout"]), dtype=np.float64)
    counts = np.floor(np.array(list(s["readout"].values())) * p).astype(int)
    counts[-1] = p - counts[:-1].sum()
    return p, W, np.repeat(vals, counts)


def simulate_one(name: str, d: int, rep: int) -> list[dict]:
    """One repetition of setting ``name`` at dimension ``d`` (module docstring)."""
    s = SETTINGS[name]
    sig = get_function(s["sigma"])
    g, k = target_callable(s["target"])
    rng = np.random.default_rng(np.random.SeedSequence([7_340_000 + d, list(SETTINGS).index(name),
                                                        rep]))
    p, W, eps = initial_layer(s, d, rng)
    n0 = int(round(s["alpha0"] * d))
    t0 = time.perf_counter()
    rows = []
    power = _target_power(s["target"])
    for t, eta in enumerate(s["eta"], start=1):
        X = rng.standard_normal((n0, d))
        y = g(X[:, :k])
        pre = X @ W.T
        act, dact = sig.value_and_derivative(pre)
        e = y - act @ eps / p
        W = W + (eta / n0) * ((e[:, None] * dact) * eps[None, :]).T @ X
        del X, pre, act, dact
        nmax = int(round(max(RIDGE_ALPHAS) * d))
        Xr = rng.standard_normal((nmax, d))
        Fr = sig(Xr @ W.T) / math.sqrt(p)
        yr = g(Xr[:, :k])
        Xt = rng.standard_normal((N_TEST, d))
        Ft = sig(Xt @ W.T) / math.sqrt(p)
        yt = g(Xt[:, :k])
        for ra in RIDGE_ALPHAS:
            n = int(round(ra * d))
            a = np.linalg.solve(Fr[:n].T @ Fr[:n] + LAM * np.eye(p), Fr[:n].T @ yr[:n])
            err = float(np.mean((yt - Ft @ a) ** 2))
            rows.append(dict(setting=name, d=d, repetition=rep, step=t, ridge_alpha=ra,
                             test_error=err, target_power=float(np.mean(yt**2)),
                             test_error_cv=err - float(np.mean(yt**2)) + power,
                             sigma=s["sigma"], target=s["target"],
                             readout=readout_text(s["readout"]), alpha0=s["alpha0"],
                             eta=",".join(f"{x:g}" for x in s["eta"]), beta=s["beta"], lam=LAM,
                             seconds=time.perf_counter() - t0))
    return rows


def _target_power(target: str) -> float:
    from validation.multistep.theory import target_power

    return target_power(target)


def _task(job: tuple[str, int, int]) -> list[dict]:
    return simulate_one(*job)


def _record(job: tuple[str, int, int]) -> dict:
    """A task's parameter record: the setting's every field and its index (which seeds the
    streams), d, the repetition and the common parameters."""
    name, d, rep = job
    return {"name": name, "index": list(SETTINGS).index(name), "setting": SETTINGS[name],
            "d": d, "repetition": rep, "lam": LAM, "ridge_alphas": RIDGE_ALPHAS,
            "n_test": N_TEST}


def campaign(d: int | None = None, seeds: int | None = None,
             only: list[str] | None = None) -> Campaign:
    """The plan (:data:`PLAN`, or its d ``d`` / its settings ``only`` / ``seeds`` repetitions
    each) as a campaign: one task per (setting, d, repetition)."""
    jobs = tuple((name, dd, rep) for dd, ss, names in PLAN if d is None or dd == d
                 for rep in range(seeds if seeds is not None else ss)
                 for name in names if not only or name in only)
    return Campaign("network_steps_runs", jobs, _task, SCHEMA,
                    key_columns=("setting", "d", "repetition"), key=lambda j: j,
                    version=VERSION, record=_record)


def paths() -> tuple[pathlib.Path, pathlib.Path]:
    """``(read, write)`` of the runs' CSV (:func:`validation.paths.data_file`)."""
    return data_file(RUNS, "validation", "reports", "data")


def simulate(d: int | None, seeds: int | None, only: list[str] | None, *,
             store: str | pathlib.Path | None = None, progress: bool = True) -> pathlib.Path:
    """Run the tasks of :func:`campaign` the store lacks and export every stored task to the
    runs' CSV (module docstring); returns the CSV written."""
    c = campaign(d, seeds, only)
    read, write = paths()
    refresh_csv(c, read, write, store=store, progress=progress)
    return write


# -- diagnosis of the misses (docs/DERIVATIONS.md §9.4): the trained layer against its groups --

DIAG_ALPHAS = RIDGE_ALPHAS
DIAG_TEST = 20000
DIAG_RIDGES = 2


def diag_risk(W: np.ndarray, sig, g, k: int, rng: np.random.Generator) -> dict[float, float]:
    """Ridge test error of the readout on the layer ``W`` (DIAG_RIDGES draws of the ridge and
    test inputs, averaged), at each ridge alpha of :data:`DIAG_ALPHAS`."""
    p, d = W.shape
    out = {}
    for ra in DIAG_ALPHAS:
        errs = []
        for _ in range(DIAG_RIDGES):
            n = int(round(ra * d))
            Xr = rng.standard_normal((n, d))
            Fr = sig(Xr @ W.T) / math.sqrt(p)
            a = np.linalg.solve(Fr.T @ Fr + LAM * np.eye(p), Fr.T @ g(Xr[:, :k]))
            Xt = rng.standard_normal((DIAG_TEST, d))
            errs.append(float(np.mean((g(Xt[:, :k]) - sig(Xt @ W.T) / math.sqrt(p) @ a) ** 2)))
        out[ra] = float(np.mean(errs))
    return out


def measured_groups(W: np.ndarray, labels: np.ndarray, k: int):
    """The groups of a layer whose target directions are the first k coordinates: (GroupState,
    each group's bulk covariance on E in absolute units (K x (k+q) x (k+q)), the basis of E
    (d x (k+q)), the bulk rows, their group means)."""
    from asymptotics.multiindex.steps import GroupState

    K = int(labels.max()) + 1
    d = W.shape[1]
    means = np.array([W[labels == j].mean(axis=0) for j in range(K)])
    B = W - means[labels]
    c = np.array([np.mean(np.sum(B[labels == j] ** 2, axis=1)) for j in range(K)])
    a = means[:, :k]
    outside = means.copy()
    outside[:, :k] = 0.0
    _, sv, vt = np.linalg.svd(outside, full_matrices=False)
    q = int(np.sum(sv > 1e-6 * max(1.0, sv.max(initial=0.0))))
    E = np.hstack([np.eye(d)[:, :k], vt[:q].T])
    cov = np.array([d * np.cov((B[labels == j] @ E).T, bias=True).reshape(k + q, k + q)
                    for j in range(K)])
    return GroupState(-1, a, outside @ vt[:q].T, c), cov, E, B, means


def semi_risk(st, E: np.ndarray, B: np.ndarray, labels: np.ndarray, s: dict, k: int,
          rng: np.random.Generator, iso_outside: bool = False) -> dict[float, float]:
    """The semi-empirical K-group theory (THEORY.md §10.3) on the bulk ``B`` of the layer
    (``iso_outside``: its part outside E replaced by isotropic Gaussian rows)."""
    from asymptotics.multiindex.steps import group_params
    from asymptotics.spiked.semi_empirical import risk_spiked_semi_empirical

    _, Q = st.spiked_model()[1:]
    S = np.hstack([st.a, st.L])
    _, _, wt = np.linalg.svd(S, full_matrices=False)
    r = st.spiked_model()[0].shape[1]
    d = B.shape[1]
    V = E @ wt[:r].T
    th = (Q.T @ np.eye(d)[:k]).T
    T = th - V @ (V.T @ th)
    nrm = np.linalg.norm(T, axis=0)
    T = np.where(nrm > 1e-12, T / np.maximum(nrm, 1e-300), 0.0)
    G = B / np.sqrt(st.c[labels])[:, None]
    if iso_outside:
        P = E @ np.linalg.pinv(E)
        Z = rng.standard_normal(G.shape) / math.sqrt(d)
        G = G @ P + Z - Z @ P
    K = st.a.shape[0]
    params = group_params(st, s["target"], [float(np.mean(labels == j)) for j in range(K)])
    params.pop("fractions")
    return {a: risk_spiked_semi_empirical(a, G=G, labels=labels, V=V, T=T, sigma=s["sigma"],
                                          lam=LAM, **params).risk for a in DIAG_ALPHAS}


def shuffled(B: np.ndarray, E: np.ndarray, labels: np.ndarray,
             rng: np.random.Generator) -> np.ndarray:
    """The bulk ``B`` with, in each group, its rows' parts outside E permuted among the group's
    rows: the spectrum outside E kept exactly, its coupling to the rows' coordinates on E
    dropped (a least-squares decorrelation would also zero the O(p^-1/2) sample correlations
    of independent columns, which the channels feel at O(1))."""
    P = E @ np.linalg.pinv(E)
    BE = B @ P
    Bp = B - BE
    out = Bp.copy()
    for j in np.unique(labels):
        idx = np.flatnonzero(labels == j)
        out[idx] = Bp[rng.permutation(idx)]
    return BE + out


def diagnose(name: str, d: int, rep: int, steps: Sequence[int]) -> list[dict]:
    """Per diagnosed step of one trained network (the protocol of :func:`simulate_one`, its own
    seed ``1000 + rep``): the ridge test error of the layer, of the layer with its bulk outside
    E replaced by isotropic Gaussian rows (``mc_iso_outside``) and with every bulk row at its
    group's mean norm (``mc_equal_norm``); the network theory on the theory's groups, on the
    measured groups and covariances (``net_measured``); the semi-empirical theory of the layer,
    of its isotropic-outside version, of its version with the rows' parts outside E permuted
    within each group (``semi_shuffled``: the coupling to E dropped) and of the equal-norm
    layer; and the network theory with the groups' anisotropic bulk outside E (``net_bulk``,
    DERIVATIONS.md §9.7) (§9.5)."""
    from asymptotics.multiindex.steps import group_params
    from asymptotics.network.device import network_bulk
    from asymptotics.network.groups import model_channels, network_groups
    from asymptotics.network.solve import risk_network_groups
    from asymptotics.spiked.readouts import parse_readout

    s = SETTINGS[name]
    sig = get_function(s["sigma"])
    g, k = target_callable(s["target"])
    rng = np.random.default_rng(1000 + rep)
    p, W, eps = initial_layer(s, d, rng)
    order = list(parse_readout(s["readout"]).values)
    labels = np.array([order.index(v) for v in eps])
    K = len(order)
    fractions = [float(np.mean(labels == j)) for j in range(K)]
    n0 = int(round(s["alpha0"] * d))
    ng = network_groups(s["sigma"], s["target"], steps=len(s["eta"]), alpha0=s["alpha0"],
                        eta=s["eta"], readout=s["readout"])
    kw = dict(sigma=s["sigma"], lam=LAM, beta=s["beta"], p=p)
    rows = []
    for t, eta in enumerate(s["eta"], start=1):
        X = rng.standard_normal((n0, d))
        pre = X @ W.T
        act, dact = sig.value_and_derivative(pre)
        e = g(X[:, :k]) - act @ eps / p
        W = W + (eta / n0) * ((e[:, None] * dact) * eps[None, :]).T @ X
        del X, pre, act, dact
        if t not in steps:
            continue
        row = {"setting": name, "d": d, "repetition": rep, "step": t}
        mc = diag_risk(W, sig, g, k, rng)
        st, cov, E, B, means = measured_groups(W, labels, k)
        th = {}
        for label, state, cv in (("net_theory", ng.states[t], ng.cov[t]),
                                 ("net_measured", st, cov)):
            params = group_params(state, s["target"], fractions)
            ch = model_channels(state, cv)
            th[label] = {a: risk_network_groups(a, channels=ch, **kw, **params).risk
                         for a in DIAG_ALPHAS}
        semi = semi_risk(st, E, B, labels, s, k, rng)
        semi_iso = semi_risk(st, E, B, labels, s, k, rng, iso_outside=True)
        semi_sh = semi_risk(st, E, shuffled(B, E, labels, np.random.default_rng(rep)), labels, s,
                        k, rng)
        ob = network_bulk(s["sigma"], s["target"], steps=t, alpha0=s["alpha0"], eta=s["eta"][:t],
                          readout=s["readout"])
        net_bulk = {a: risk_network_groups(
            a, channels=model_channels(ng.states[t], ng.cov[t]), outside=ob, **kw,
            **group_params(ng.states[t], s["target"], fractions)).risk for a in DIAG_ALPHAS}
        P = E @ np.linalg.pinv(E)
        Z = rng.standard_normal(B.shape) / math.sqrt(d - E.shape[1])
        rest = np.array([np.mean(np.sum((B[labels == j] - B[labels == j] @ P) ** 2, axis=1))
                         for j in range(K)])
        Z = (Z - Z @ P) * np.sqrt(rest)[labels][:, None]
        mc_iso = diag_risk(means[labels] + B @ P + Z, sig, g, k, rng)
        norms = np.sqrt(np.sum(B**2, axis=1))
        Bn = B / norms[:, None] * np.sqrt(st.c[labels])[:, None]
        mc_norm = diag_risk(means[labels] + Bn, sig, g, k, rng)
        semi_norm = semi_risk(st, E, Bn, labels, s, k, rng)
        for a in DIAG_ALPHAS:
            rows.append({**row, "alpha": a, "mc": mc[a], "net_theory": th["net_theory"][a],
                         "net_measured": th["net_measured"][a], "semi": semi[a],
                         "semi_iso_outside": semi_iso[a], "mc_iso_outside": mc_iso[a],
                         "semi_shuffled": semi_sh[a], "net_bulk": net_bulk[a],
                         "mc_equal_norm": mc_norm[a], "semi_equal_norm": semi_norm[a],
                         "c_measured": float(st.c[0]), "c_theory": float(ng.states[t].c[0]),
                         "norm_spread": float(np.std(norms**2) / np.mean(norms**2))})
    return rows


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m validation.experiments.network_steps",
                                 description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sim = sub.add_parser("simulate", help="simulate the new settings (resumable campaign)")
    sim.add_argument("--d", type=int, default=None, help="only this d of the plan")
    sim.add_argument("--seeds", type=int, default=None, help="repetitions per setting and d")
    sim.add_argument("--only", type=str, default=None, help="comma-separated setting names")
    sim.add_argument("--store", default=None,
                     help="the SQLite store (.sqlite; default beside the exported CSV)")
    sim.add_argument("--quiet", action="store_true", help="no progress")
    dg = sub.add_parser("diagnose", help="one trained network against its groups: the layer, "
                        "its isotropic-outside and equal-norm versions, the network and "
                        "semi-empirical theories (docs/DERIVATIONS.md §9.4)")
    dg.add_argument("--setting", required=True, help="a setting name (N1..N8)")
    dg.add_argument("--d", type=int, default=1000, help="dimension (default 1000)")
    dg.add_argument("--seeds", type=str, default="0", help="comma-separated repetitions")
    dg.add_argument("--steps", type=str, required=True, help="comma-separated steps to diagnose")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.cmd == "diagnose":
        return _diagnose_main(args)
    only = args.only.split(",") if args.only else None
    bad = [n for n in only or () if n not in SETTINGS]
    if bad:
        print(f"error: --only must name settings among {', '.join(SETTINGS)}, got "
              f"{','.join(bad)}", file=sys.stderr)
        return 2
    if args.d is not None and args.d not in [d for d, _, _ in PLAN]:
        print(f"error: --d must be one of the plan's {[d for d, _, _ in PLAN]}, got {args.d}",
              file=sys.stderr)
        return 2
    if args.seeds is not None and args.seeds < 1:
        print(f"error: --seeds must be >= 1, got {args.seeds}", file=sys.stderr)
        return 2
    if bad_store_arg(args.store):
        return 2
    out = simulate(args.d, args.seeds, only, store=args.store, progress=not args.quiet)
    print(out)
    return 0


def _diagnose_main(args: argparse.Namespace) -> int:
    if args.setting not in SETTINGS:
        print(f"error: --setting must be one of {', '.join(SETTINGS)}, got {args.setting}",
              file=sys.stderr)
        return 2
    try:
        seeds = [int(x) for x in args.seeds.split(",")]
        steps = [int(x) for x in args.steps.split(",")]
    except ValueError:
        print(f"error: --seeds and --steps must be comma-separated integers, got "
              f"{args.seeds!r} and {args.steps!r}", file=sys.stderr)
        return 2
    T = len(SETTINGS[args.setting]["eta"])
    if args.d < 10 or any(x < 0 for x in seeds) or any(not 1 <= t <= T for t in steps):
        print(f"error: need --d >= 10, --seeds >= 0 and --steps in 1..{T}, got d={args.d}, "
              f"seeds={args.seeds}, steps={args.steps}", file=sys.stderr)
        return 2
    cols = ("mc", "mc_iso_outside", "mc_equal_norm", "net_theory", "net_measured", "semi",
            "semi_iso_outside", "semi_equal_norm", "semi_shuffled", "net_bulk")
    print("| setting | d | rep | step | alpha | " + " | ".join(cols) + " |")
    print("|" + "---|" * (5 + len(cols)))
    for rep in seeds:
        for r in diagnose(args.setting, args.d, rep, steps):
            print(f"| {r['setting']} | {r['d']} | {r['repetition']} | {r['step']} | "
                  f"{r['alpha']:g} | " + " | ".join(f"{r[c]:.4f}" for c in cols) + " |",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
