"""Cost of a network-theory point beyond one step (``asymptotics.risk(alpha, model="network",
steps=T, readout=...)``, the default ``outside="coupled"``; docs/THEORY.md §15) against the
K-group surrogate's point (``model="srf"``) of the same setting, both through
``asymptotics.risk``. The target: network point <= 2x surrogate point.

Settings: the named ones of ``validation/experiments/network_steps.py`` (N1, N2, N4, N8, at the
simulated width d = 1000: ``p = beta d``) and ``--draws`` (default 12) drawn at random, seed
``--seed`` (default 20261126) from: readout uniform on {pm1, constant, three-value
{2: 1/4, 1: 1/2, -1: 1/4}}, steps uniform on {1, 2, 3}, sigma uniform on {relu, tanh, erf},
target uniform on {"z1 + z1*z2", "tanh(z1)"}, alpha0 log-uniform on [2, 16], beta log-uniform on
[0.5, 2] (rounded so that p = beta d is a multiple of 4), eta_t = e 2^t (t = 0..T-1, e uniform
on {1, 2}); lam = 0.01, p = 1000 beta, ridge alpha = 2 (and 0.5 for the named settings).
A draw that the dispatcher sends to the one-step
network theory (one step, a single-index target and the constant readout, or an odd sigma with
the ±1 readout) is redrawn: it is not this route.

Times are the process's CPU time (``time.process_time``; one BLAS thread: on a shared machine
the wall time measures the other jobs too). Per setting:
- ``warm``: the best of ``--repeat`` calls with every cache filled (the device, the groups, the
  mapping: every point of a setting after its first);
- ``cold``: the first call after every cache of both routes was cleared (the network's includes
  sampling its device: the groups' covariances outside E after T steps).
``--save FILE`` writes every risk (the named and drawn points, and with ``--check`` the 32
points of the NETWORK_STEPS protocol: N1..N8, every step, ridge alpha 0.5 and 2, d = 1000);
``--report-points N`` adds N points of the NETWORK_STEPS report's theory cache (beyond one step,
drawn across its settings and readouts, through the report's own code path);
``--compare FILE`` prints the largest relative change against a saved run.
``--warm-only`` skips the cold calls (every setting's caches filled by its first call; a
shorter run, the cold columns NaN). The script runs the package on ``sys.path``: the same file
times another checkout with ``PYTHONPATH=<checkout> python <this file>``.
Run: python -m benchmarks.bench_network_steps [--repeat 5] [--draws 12] [--check]
[--report-points 20] [--warm-only] [--save F | --compare F]
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

import asymptotics as A
from benchmarks.bench_engine import settle  # (waits for the background compiler)

THREE = {2.0: 0.25, 1.0: 0.5, -1.0: 0.25}
READOUTS = {"pm1": "pm1", "constant": "constant", "three": THREE}
SEED = 20261126
D = 1000
LAM = 0.01


def named() -> list[tuple[str, dict]]:
    from validation.experiments.network_steps import SETTINGS

    out = []
    for name in ("N1", "N2", "N4", "N8"):
        s = dict(SETTINGS[name])
        out.append((name, _kw(s.pop("sigma"), s.pop("target"), s.pop("readout"),
                              s.pop("alpha0"), tuple(s.pop("eta")), s.pop("beta"))))
    return out


def _kw(sigma, target, readout, alpha0, eta, beta) -> dict:
    p = 4 * round(float(beta) * D / 4)  # a whole number of neurons in every group
    return dict(sigma=sigma, target=target, readout=readout, alpha0=float(alpha0),
                eta=tuple(float(e) for e in eta), steps=len(eta), beta=p / D, lam=LAM,
                p=float(p))


def _one_step_route(kw: dict) -> bool:
    from asymptotics.network.route import _single_index, one_step_equivalent

    return kw["steps"] == 1 and _single_index(kw["target"]) and one_step_equivalent(
        kw["sigma"], kw["readout"], 1) is not None


def drawn(n: int, seed: int) -> list[tuple[str, dict]]:
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        ro = ("pm1", "constant", "three")[rng.integers(3)]
        T = int(rng.integers(1, 4))
        sigma = ("relu", "tanh", "erf")[rng.integers(3)]
        target = ("z1 + z1*z2", "tanh(z1)")[rng.integers(2)]
        alpha0 = float(np.exp(rng.uniform(math.log(2), math.log(16))))
        beta = float(np.exp(rng.uniform(math.log(0.5), math.log(2))))
        e = float(rng.integers(1, 3))
        kw = _kw(sigma, target, READOUTS[ro], round(alpha0, 3), [e * 2 ** t for t in range(T)],
                 round(beta, 3))
        if _one_step_route(kw):
            continue
        out.append((f"D{len(out) + 1} {sigma} {target} {ro} T={T} a0={kw['alpha0']:g} "
                    f"b={kw['beta']:g}", kw))
    return out


def clear_all() -> None:
    """Every cache of both routes (the sRF mapping, the network's groups, device and rules)."""
    from asymptotics.multiindex.steps import clear_cache as clear_srf
    from asymptotics.network import bulk, device
    from asymptotics.network.groups import clear_cache as clear_net

    clear_srf()
    clear_net()
    device._CACHE.clear()
    bulk._PREP.clear()  # (clear_net also forgets the problems and the aligned rules)


def _risk(alpha: float, model: str, kw: dict) -> float:
    r = A.risk(alpha, model=model, **kw)
    return r.risk if r.converged else math.nan


def best(f, repeat: int) -> float:
    out = []
    for _ in range(repeat):
        t = time.process_time()
        f()
        out.append(time.process_time() - t)
    return min(out)


def timed(name: str, kw: dict, repeat: int, values: dict, alphas=(2.0,)) -> tuple:
    clear_all()
    t = time.process_time()
    _risk(2.0, "srf", kw)
    c_srf = time.process_time() - t
    clear_all()
    t = time.process_time()
    _risk(2.0, "network", kw)
    c_net = time.process_time() - t
    for a in alphas:
        for m in ("srf", "network"):
            values[f"{name} | {m} | alpha={a:g}"] = _risk(a, m, kw)
    # interleaved, best of repeat: both see the same load (compiled kernels: settle)
    settle()
    w_srf, w_net = [], []
    for _ in range(repeat):
        w_srf.append(best(lambda: _risk(2.0, "srf", kw), 1))  # noqa: B023
        w_net.append(best(lambda: _risk(2.0, "network", kw), 1))  # noqa: B023
    return min(w_srf), min(w_net), c_srf, c_net


def timed_warm(name: str, kw: dict, repeat: int, values: dict, alphas=(2.0,)) -> tuple:
    """:func:`timed` without the cold calls (``--warm-only``): the caches filled by the first
    call of each route, then the warm calls as there (cold times NaN)."""
    for a in alphas:
        for m in ("srf", "network"):
            values[f"{name} | {m} | alpha={a:g}"] = _risk(a, m, kw)
    _risk(2.0, "srf", kw)
    _risk(2.0, "network", kw)
    settle()
    w_srf, w_net = [], []
    for _ in range(repeat):
        w_srf.append(best(lambda: _risk(2.0, "srf", kw), 1))  # noqa: B023
        w_net.append(best(lambda: _risk(2.0, "network", kw), 1))  # noqa: B023
    return min(w_srf), min(w_net), math.nan, math.nan


def check_points(values: dict) -> None:
    """The NETWORK_STEPS protocol's theory points (every setting, step, ridge alpha; d = 1000)."""
    from validation.experiments.network_steps import RIDGE_ALPHAS, SETTINGS

    for name, s in SETTINGS.items():
        for t in range(1, len(s["eta"]) + 1):
            kw = _kw(s["sigma"], s["target"], s["readout"], s["alpha0"], s["eta"][:t],
                     s["beta"])
            if _one_step_route(kw):
                continue
            for a in RIDGE_ALPHAS:
                values[f"check {name} step={t} | network | alpha={a:g}"] = _risk(a, "network",
                                                                                 kw)


def report_points(values: dict, n: int, seed: int = SEED) -> None:
    """``n`` points of the NETWORK_STEPS report's theory cache on the routes beyond one step,
    drawn in turn from each (sigma, target, readout) of it, through the report's own
    ``_theories`` (its network column)."""
    import pandas as pd

    from asymptotics.network.route import one_step_equivalent
    from validation.experiments import network_steps_report as R

    df = pd.read_csv(R.THEORY_CACHE)
    keep = [i for i, r in df.iterrows() if "z2" in r.target or one_step_equivalent(
        r.sigma, R._readout(r.readout), len(str(r.eta).split(","))) is None]
    groups = [list(ix) for _, ix in df.loc[keep].groupby(["sigma", "target", "readout"]).groups
              .items()]
    rng = np.random.default_rng(seed)
    pick: list[int] = []
    while len(pick) < min(n, len(keep)):
        for ix in groups:
            left = [j for j in ix if j not in pick]
            if left and len(pick) < n:
                pick.append(int(rng.choice(left)))
    for j in sorted(pick):
        r = df.loc[j]
        _, net = R._theories(r.sigma, r.target, r.readout, float(r.alpha0), str(r.eta),
                             int(r.step), float(r.alpha), float(r.beta), float(r.lam),
                             float(r.beta) * int(r.d))
        values[f"report {r.sigma} | {r.target} | {r.readout} | {r.alpha0:g} | {r.eta} | "
               f"t={r.step} | alpha={r.alpha:g} | beta={r.beta:g} | d={r.d}"] = net


def compare(values: dict, path: str) -> None:
    with open(path) as f:
        ref = json.load(f)
    worst, where, n, nan_moved = 0.0, None, 0, []
    for k, v in values.items():
        if k not in ref:
            continue
        r = ref[k]
        n += 1
        if (r is None) != (v is None or math.isnan(v)):
            nan_moved.append(k)
            continue
        if r is None:
            continue
        ch = abs(v - r) / max(abs(r), 1e-300)
        if ch > worst:
            worst, where = ch, k
    print(f"compared {n} points with {path}: largest relative change {worst:.2e} ({where}); "
          f"NaN pattern changed at {len(nan_moved)} {nan_moved}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_network_steps",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--draws", type=int, default=12)
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--only", default=None, help="comma-separated names (N1, D3, ...)")
    ap.add_argument("--check", action="store_true", help="also the 32 NETWORK_STEPS points")
    ap.add_argument("--report-points", type=int, default=0,
                    help="also N points of the NETWORK_STEPS report's theory cache")
    ap.add_argument("--warm-only", action="store_true",
                    help="no cold calls (no cache cleared): the warm columns alone")
    ap.add_argument("--save", default=None)
    ap.add_argument("--compare", default=None)
    args = ap.parse_args(argv)
    settings = [(n, kw, (0.5, 2.0)) for n, kw in named()] + \
        [(n, kw, (2.0,)) for n, kw in drawn(args.draws, args.seed)]
    if args.only:
        keep = {x.strip() for x in args.only.split(",")}
        settings = [s for s in settings if s[0].split()[0] in keep]
    for m in ("srf", "network"):  # the kernels compiled or loaded
        try:
            A.risk(2.0, model=m, **settings[0][1])
        except Exception:  # noqa: BLE001 (that setting's row reports it)
            pass
    values: dict = {}
    print("setting | K | srf warm [ms] | network warm [ms] | ratio warm | srf cold [s] | "
          "network cold [s] | ratio cold", flush=True)
    ratios = []
    for name, kw, alphas in settings:
        from asymptotics.spiked.readouts import parse_readout

        K = len(parse_readout(kw["readout"]).values)
        try:
            ws, wn, cs, cn = (timed_warm if args.warm_only else timed)(name, kw, args.repeat,
                                                                       values, alphas)
        except Exception as err:  # noqa: BLE001 (a route that raises: reported, not timed)
            print(f"{name} | {K} | raised {type(err).__name__}: {err}", flush=True)
            continue
        ratios.append(wn / ws)
        print(f"{name} | {K} | {1e3 * ws:.1f} | {1e3 * wn:.1f} | {wn / ws:.2f} | {cs:.2f} | "
              f"{cn:.2f} | {cn / cs:.2f}", flush=True)
    r = np.array(ratios)
    print(f"warm ratio: median {np.median(r):.2f}, max {r.max():.2f}, <= 2x at "
          f"{int(np.sum(r <= 2.0))}/{r.size}")
    if args.check:
        check_points(values)
    if args.report_points:
        report_points(values, args.report_points)
    if args.save:
        with open(args.save, "w") as f:
            json.dump({k: (None if v is None or math.isnan(v) else v)
                       for k, v in values.items()}, f, indent=1)
    if args.compare:
        compare(values, args.compare)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
