"""Cost of a network-theory point (``risk(..., model="network")``) against an sRF point.

The network theory's population measure (docs/DERIVATIONS.md §7) is evaluated by a sampled,
fixed-seed device that is cached per setting, so a point costs differently depending on what is
already cached. Prints, per first batch alpha0 (settings of the d = 2000 validation matrix), best
of ``--repeat`` runs on this process's cores:
- sRF point (warm kernels);
- network, first point of a new (sigma, target, alpha0, eta): draws, M and Q, eigenproblems;
- network, new eta at a known (sigma, target, alpha0): M and Q cached, eigenproblems only;
- network, a further point of a known setting (any alpha, lam, beta, p);
and each as a ratio to the sRF point (the target of the issue: first point <= 10x).
Run: python -m benchmarks.bench_network_theory [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

import asymptotics as A
from asymptotics import network

SETTINGS = [("relu", "relu", 0.5, 3.0), ("relu", "tanh", 2.0, 1.0), ("relu", "relu", 2.0, 3.0),
            ("tanh", "sin", 20.0, 1.0), ("relu", "relu", 20.0, 3.0)]
POINT = dict(alpha=1.0, lam=0.01, beta=1.0)


def clear(samples: bool) -> None:
    network._population_atoms.cache_clear()
    if samples and hasattr(network, "_population_samples"):
        network._population_samples.cache_clear()


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
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    A.risk(sigma="relu", target="tanh", alpha0=2.0, eta=1.0, model="network", **POINT)
    print("| sigma/target alpha0 eta | sRF point | network first point | ratio | new eta "
          "| ratio | cached point | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for s, g, a0, eta in SETTINGS:
        kw = dict(sigma=s, target=g, alpha0=a0, eta=eta, **POINT)
        A.risk(**kw)
        t_srf = best(lambda kw=kw: A.risk(**kw), 5 * args.repeat)

        def net(kw=kw) -> None:
            A.risk(model="network", **kw)

        t_first = best(net, args.repeat, before=lambda: clear(True))
        t_eta = best(net, args.repeat, before=lambda: clear(False))
        net()
        t_cached = best(lambda kw=kw: A.risk(model="network", **dict(kw, alpha=2.0)),
                        5 * args.repeat)
        print(f"| {s}/{g} {a0:g} {eta:g} | {t_srf * 1e3:.2f} ms | {t_first * 1e3:.1f} ms | "
              f"{t_first / t_srf:.0f}x | {t_eta * 1e3:.1f} ms | {t_eta / t_srf:.0f}x | "
              f"{t_cached * 1e3:.2f} ms | {t_cached / t_srf:.1f}x |")


if __name__ == "__main__":
    main()
