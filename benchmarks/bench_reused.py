"""Theory speed of a reused-batch point against a fresh-batch point (docs/THEORY.md §14).

A point: ``asymptotics.risk(alpha, steps=2, model="srf", batch=...)`` (the steps' mapping and
the K-group equations) at one alpha, warm, best of 5, for the settings of the reused-batch
report (tanh, alpha0 = 2, eta_tilde = 1, lam = 0.01). Prints the times and the ratio
reused / fresh (target <= 2), and the same for ``step_directions`` at d = 1000.
Run: python benchmarks/bench_reused.py   (about a minute on 2 cores)
"""

from __future__ import annotations

import time

import asymptotics as A
from asymptotics.multiindex.directions import step_directions

SETTINGS = (("He3(z1)/sqrt(6)", "constant"), ("He3(z1)/sqrt(6)", "pm1"),
            ("z1 + He3(z2)/sqrt(6)", "constant"), ("z1 + He3(z2)/sqrt(6)", "pm1"),
            ("He2(z1)/sqrt(2)", "constant"))


def best_of(fn, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    kw = dict(sigma="tanh", alpha0=2.0, eta=1.0, lam=0.01, model="srf", steps=2)
    A.risk(2.0, target=SETTINGS[0][0], batch="reused", **kw)  # warm: numba, quadrature rules
    print(f"{'target':24s} {'readout':9s} {'fresh (s)':>10s} {'reused (s)':>11s} {'ratio':>6s}")
    worst = 0.0
    for target, readout in SETTINGS:
        t = {b: best_of(lambda b=b, t=target, r=readout: A.risk(2.0, target=t, readout=r,
                                                               batch=b, **kw))
             for b in ("fresh", "reused")}
        ratio = t["reused"] / t["fresh"]
        worst = max(worst, ratio)
        print(f"{target:24s} {readout:9s} {t['fresh']:10.3f} {t['reused']:11.3f} {ratio:6.2f}")
    print(f"risk point: worst ratio reused / fresh = {worst:.2f} (target <= 2)")
    for target, readout in SETTINGS[:3]:
        t = {b: best_of(lambda b=b, t=target, r=readout: step_directions(
            "tanh", t, alpha0=2.0, eta=1.0, d=1000, batch=b, readout=r), 2)
             for b in ("fresh", "reused")}
        print(f"step_directions {target:24s} {readout:9s} fresh {t['fresh']:.2f} s, reused "
              f"{t['reused']:.2f} s")


if __name__ == "__main__":
    main()
