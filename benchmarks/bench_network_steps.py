"""Cost of a network-theory point beyond one step (``risk(..., model="network", steps=T)`` or
``readout=``, docs/THEORY.md §15) against the K-group surrogate's point (``model="srf"``) of the
same setting, both through ``asymptotics.risk``: warm (each route's groups cached in the process,
as every point after the first of a setting finds them) and cold (both caches cleared before
each call: the groups built and solved). Prints, per setting, the best of ``--repeat`` runs of
each and their ratios (the target: network <= 2x surrogate), and the ratio of the solves alone
(groups given).
Run: python -m benchmarks.bench_network_steps [--repeat 5]
"""

from __future__ import annotations

import argparse
import time

import asymptotics as A
from asymptotics.multiindex.steps import clear_cache as clear_srf
from asymptotics.multiindex.steps import steps_mapping
from asymptotics.multiindex.steps_risk import risk_steps
from asymptotics.network.groups import clear_cache as clear_net
from asymptotics.network.route import network_problem, risk_network

SETTINGS = [
    dict(sigma="relu", target="z1 + z1*z2", readout="pm1", alpha0=16.0, eta=(2.0, 8.0, 16.0)),
    dict(sigma="erf(z-1)", target="z1 + z1*z2", readout="constant", alpha0=16.0,
         eta=(2.0, 8.0)),
    dict(sigma="relu", target="tanh", readout="pm1", alpha0=2.0, eta=(2.0,)),
    dict(sigma="sigmoid", target="z1 + z1*z2", readout={2.0: 1 / 3, 1.0: 1 / 3, -1.0: 1 / 3},
         alpha0=16.0, eta=(2.0, 4.0)),
]
POINT = dict(lam=0.01, beta=1.0)


def best(f, repeat: int) -> float:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        out.append(time.perf_counter() - t)
    return min(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_network_steps",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    print("setting | surrogate point [s] | network point [s] | ratio (warm) | surrogate cold [s] "
          "| network cold [s] | ratio (cold) | solve-only ratio")
    for s in SETTINGS:
        T = len(s["eta"])
        kw = dict(sigma=s["sigma"], target=s["target"], alpha0=s["alpha0"],
                  eta=s["eta"] if T > 1 else s["eta"][0], readout=s["readout"], **POINT)
        if T > 1:
            kw["steps"] = T
        A.risk(2.0, model="srf", **kw)  # warm the kernels and the target's parser
        A.risk(2.0, model="network", **kw)
        t_srf = best(lambda: A.risk(2.0, model="srf", **kw), args.repeat)  # noqa: B023
        t_net = best(lambda: A.risk(2.0, model="network", **kw), args.repeat)  # noqa: B023

        def cold(model: str) -> None:
            clear_srf()
            clear_net()
            A.risk(2.0, model=model, **kw)  # noqa: B023

        c_srf = best(lambda: cold("srf"), args.repeat)
        c_net = best(lambda: cold("network"), args.repeat)
        mp = steps_mapping(s["sigma"], s["target"], steps=T, alpha0=s["alpha0"], eta=s["eta"],
                           readout=s["readout"])
        prob = network_problem(sigma=s["sigma"], target=s["target"], steps=T,
                               alpha0=s["alpha0"], eta=s["eta"], readout=s["readout"])
        t_srf_solve = best(lambda: risk_steps(  # noqa: B023
            2.0, steps=T, sigma=s["sigma"], target=s["target"], alpha0=s["alpha0"],  # noqa: B023
            eta=s["eta"], readout=s["readout"], mapping=mp, **POINT),  # noqa: B023
            args.repeat)
        t_net_solve = best(lambda: risk_network(  # noqa: B023
            2.0, sigma=s["sigma"], target=s["target"], steps=T,  # noqa: B023
            alpha0=s["alpha0"], eta=s["eta"], readout=s["readout"],  # noqa: B023
            problem=prob, **POINT), args.repeat)  # noqa: B023
        name = f"{s['sigma']} {s['target']} {s['readout']} T={T}"
        print(f"{name} | {t_srf:.3f} | {t_net:.3f} | {t_net / t_srf:.2f} | {c_srf:.3f} | "
              f"{c_net:.3f} | {c_net / c_srf:.2f} | {t_net_solve / t_srf_solve:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
