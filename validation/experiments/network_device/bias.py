"""``python -m validation.experiments.network_device.bias --setting D1 --sizes 25 50 100 200 400
--seeds 0 1 2 [--pair]`` (docs/DERIVATIONS.md §9.9): the network theory's risk (the route's
default, ``outside="coupled"`` with the rows' scale; the plain device, no extrapolation) on
devices of blocks of n directions at a fixed total d = B n (default 3200), several device
seeds: the device's finite-n bias. ``--pair``: per size n also the split device (2B blocks of
n/2 from the same draws, ``split`` in the CSV) and the extrapolation ``2 r(n) - r(n/2)``
(``rich``). Prints one CSV row per (setting, n, seed, alpha)."""

from __future__ import annotations

import argparse
import sys
import time

from asymptotics.network import device as dv
from asymptotics.network.route import network_problem, with_row_scale
from asymptotics.network.solve import risk_network_groups_curve

#: D1: the drawn setting D1 of benchmarks/bench_network_steps.py; N1, N2: those of
#: validation/experiments/network_steps.py (p = d = 1000); SD, SB, SE: settings D, B, E of
#: validation/multistep/risk.py (STEPS.md: erf(z-1), three steps, p = d = 1000)
SETTINGS = {
    "D1": dict(sigma="relu", target="z1 + z1*z2", readout="pm1", alpha0=5.267,
               eta=(2.0, 4.0, 8.0), steps=3, beta=0.776, p=776.0),
    "N1": dict(sigma="relu", target="z1 + z1*z2", readout="constant", alpha0=16.0,
               eta=(2.0, 8.0), steps=2, beta=1.0, p=1000.0),
    "N2": dict(sigma="relu", target="z1 + z1*z2", readout="pm1", alpha0=8.0,
               eta=(2.0, 4.0, 8.0), steps=3, beta=1.0, p=1000.0),
    "SD": dict(sigma="erf(z-1)", target="z1 + z1*z2", readout="constant", alpha0=16.0,
               eta=(2.0, 8.0, 16.0), steps=3, beta=1.0, p=1000.0),
    "SB": dict(sigma="erf(z-1)", target="z1 + z1*z2 + z1*z2*z3", readout="hypercube",
               alpha0=16.0, eta=(2.0, 8.0, 16.0), steps=3, beta=1.0, p=1000.0),
    "SE": dict(sigma="erf(z-1)", target="z1 + z1*z2", readout="hypercube", alpha0=64.0,
               eta=(2.0, 8.0, 16.0), steps=3, beta=1.0, p=1000.0),
}


def risks(name: str, size: int, blocks: int, seed: int, alphas, clear: bool = True,
          **dev_kw) -> list[float]:
    """The route's risks of setting ``name`` on the device ``blocks x size``, seed ``seed``."""
    s = dict(SETTINGS[name])
    beta, p = s.pop("beta"), s.pop("p")
    sigma, target = s.pop("sigma"), s.pop("target")
    params = network_problem(sigma=sigma, target=target, **s)
    cc = dv.network_coupled(sigma, target, size=size, blocks=blocks, seed=seed, **s, **dev_kw)
    params, kw = with_row_scale(params, {"coupled": cc}, sigma, target, **s)
    out = risk_network_groups_curve(alphas, sigma=sigma, lam=0.01, beta=beta, p=p,
                                    progress=False, **kw, **params)
    if clear:
        dv._CACHE.clear()
    return [r.risk if r.converged else float("nan") for r in out]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--setting", nargs="+", default=["D1"], choices=sorted(SETTINGS))
    ap.add_argument("--sizes", type=int, nargs="+", default=[25, 50, 100, 200, 400])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--d", type=int, default=3200)
    ap.add_argument("--alphas", type=float, nargs="+", default=[0.5, 2.0, 4.0])
    ap.add_argument("--pair", action="store_true")
    a = ap.parse_args(argv)
    if a.pair:
        print("setting,n,blocks,seed,alpha,risk,split,rich,seconds", flush=True)
        for name in a.setting:
            for n in a.sizes:
                for seed in a.seeds:
                    t = time.process_time()
                    hs = risks(name, n, a.d // n, seed, a.alphas, clear=False, split=True)
                    rs = risks(name, n, a.d // n, seed, a.alphas)
                    dt = time.process_time() - t
                    for al, r, h in zip(a.alphas, rs, hs, strict=True):
                        print(f"{name},{n},{a.d // n},{seed},{al},{r:.6f},{h:.6f},"
                              f"{2 * r - h:.6f},{dt:.1f}", flush=True)
        return 0
    print("setting,n,blocks,seed,alpha,risk,seconds", flush=True)
    for name in a.setting:
        for n in a.sizes:
            for seed in a.seeds:
                t = time.process_time()
                rs = risks(name, n, max(1, a.d // n), seed, a.alphas)
                dt = time.process_time() - t
                for al, r in zip(a.alphas, rs, strict=True):
                    print(f"{name},{n},{a.d // n},{seed},{al},{r:.6f},{dt:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
