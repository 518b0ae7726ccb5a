"""Cost of a network-theory point (``risk(..., model="network")``) against an sRF point.

The network theory's population measure (docs/DERIVATIONS.md §7) is built once per setting
(sigma, target, alpha0, eta, delta) and cached; a point costs differently depending on what is
already cached. Prints, per first batch alpha0 (settings of the d = 2000 validation matrix), best
of ``--repeat`` runs on this process's cores:
- sRF point (warm kernels, the cGET tables of the pair built);
- network, first point of a new setting with the deterministic measure (the default,
  ``population_measure(method='resolvent')``): every network cache cleared (the Gauss rules of
  the measure, the bulk-variance channel's slope and tables);
- with ``--device``, the same with the sampled device of earlier releases
  (``method='device'``: draws, M and Q, eigenproblems);
- network, a further point of a known setting (any alpha, lam, beta, p);
and each as a ratio to the sRF point measured in the same run (the target of the issue: a
deterministic network point <= 10x an sRF point).
Run: python -m benchmarks.bench_network_theory [--repeat 5] [--device]
"""

from __future__ import annotations

import argparse
import time

import asymptotics as A
from asymptotics.measures import population as network
from asymptotics.measures import population_quadrature
from asymptotics.step import plane, row_channel

SETTINGS = [("relu", "relu", 0.5, 3.0), ("relu", "tanh", 2.0, 1.0), ("relu", "relu", 2.0, 3.0),
            ("erf", "sin", 20.0, 3.0), ("tanh", "sin", 20.0, 1.0), ("relu", "relu", 20.0, 3.0),
            ("tanh", "he2", 0.5, 3.0)]
POINT = dict(alpha=1.0, lam=0.01, beta=1.0)


def clear() -> None:
    """Every cache that belongs to the network theory of one setting."""
    population_quadrature.population_rules.cache_clear()
    network._population_atoms.cache_clear()
    network._population_samples.cache_clear()
    row_channel._slope.cache_clear()
    row_channel._nu.cache_clear()
    plane._step_plane.cache_clear()


def best(fn, repeat: int, before=None) -> float:
    out = []
    for _ in range(repeat):
        if before is not None:
            before()
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return min(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--device", action="store_true",
                    help="also time the sampled device (BLAS-bound: its time depends on the "
                         "threads and the load of the machine)")
    args = ap.parse_args()
    A.risk(sigma="relu", target="tanh", alpha0=2.0, eta=1.0, model="network", **POINT)
    print("| sigma/target alpha0 eta | sRF point | network first point | ratio | with the "
          "sampled device | ratio | cached point | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    ratios = []
    for s, g, a0, eta in SETTINGS:
        kw = dict(sigma=s, target=g, alpha0=a0, eta=eta, **POINT)
        A.risk(model="srf", **kw)
        t_srf = best(lambda kw=kw: A.risk(model="srf", **kw), 5 * args.repeat)

        def net(kw=kw) -> None:
            A.risk(model="network", **kw)

        def dev(kw=kw) -> None:
            m = network.population_measure(kw["sigma"], kw["target"], alpha0=kw["alpha0"],
                                           eta=kw["eta"], beta=kw["beta"], method="device")
            A.risk(model="network", measure=m, **kw)

        net()
        t_first = best(net, args.repeat, before=clear)
        t_dev = best(dev, 2, before=clear) if args.device else float("nan")
        net()
        t_cached = best(lambda kw=kw: A.risk(model="network", **dict(kw, alpha=2.0)),
                        5 * args.repeat)
        ratios.append(t_first / t_srf)
        print(f"| {s}/{g} {a0:g} {eta:g} | {t_srf * 1e3:.2f} ms | {t_first * 1e3:.2f} ms | "
              f"{t_first / t_srf:.1f}x | {t_dev * 1e3:.1f} ms | {t_dev / t_srf:.0f}x | "
              f"{t_cached * 1e3:.2f} ms | {t_cached / t_srf:.1f}x |")
    print(f"\nfirst network point / sRF point: {min(ratios):.1f}x to {max(ratios):.1f}x "
          f"(target <= 10x)")


if __name__ == "__main__":
    main()
