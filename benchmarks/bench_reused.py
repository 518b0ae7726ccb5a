"""Theory speed of a reused-batch point against a fresh-batch point (docs/THEORY.md §14).

A point: ``asymptotics.risk(alpha, steps=2, model="srf", batch=...)`` (the steps' mapping and
the K-group equations) at one alpha, warm, best of 9 (fresh and reused alternated), for the
settings of the reused-batch report (tanh, alpha0 = 2, eta_tilde = 1, lam = 0.01), then at 10
settings drawn at random (seeded: sigma in tanh, relu, erf; the three targets; both readouts;
alpha0 in [1, 8], eta_tilde in [0.5, 4]) with their median and max. Prints the times and the
ratio reused / fresh (target <= 2), and the same for ``step_directions`` at d = 1000.
Run: python benchmarks/bench_reused.py   (about a minute on 2 cores)
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import asymptotics as A
from asymptotics.multiindex.directions import step_directions

SETTINGS = (("He3(z1)/sqrt(6)", "constant"), ("He3(z1)/sqrt(6)", "pm1"),
            ("z1 + He3(z2)/sqrt(6)", "constant"), ("z1 + He3(z2)/sqrt(6)", "pm1"),
            ("He2(z1)/sqrt(2)", "constant"))


def best_of(fn, repeat: int = 9) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def interleaved(fns: dict, repeat: int = 9) -> dict:
    """Best time of each function, the calls alternated (a change of the machine's load hits
    both alike)."""
    times = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    return {name: min(v) for name, v in times.items()}


def random_settings(count: int = 10, seed: int = 20261125) -> list[dict]:
    """Settings drawn at random (seeded) over the activations, targets, readouts, alpha0, eta."""
    rng = np.random.default_rng(seed)
    return [dict(sigma=str(rng.choice(["tanh", "relu", "erf"])),
                 target=str(rng.choice([t for t, _ in SETTINGS[::2]])),
                 readout=str(rng.choice(["constant", "pm1"])), alpha0=float(rng.uniform(1, 8)),
                 eta=float(rng.uniform(0.5, 4))) for _ in range(count)]


def ratios(settings: list[dict]) -> list[float]:
    """Time a risk point fresh and reused at each setting; print a row each."""
    out = []
    for s in settings:
        kw = dict(lam=0.01, model="srf", steps=2, **s)
        A.risk(2.0, batch="reused", **kw)
        t = interleaved({b: lambda b=b, kw=kw: A.risk(2.0, batch=b, **kw)
                         for b in ("fresh", "reused")})
        out.append(t["reused"] / t["fresh"])
        print(f"{s['sigma']:5s} {s['target']:22s} {s['readout']:9s} {s['alpha0']:6.2f} "
              f"{s['eta']:5.2f} {t['fresh']:10.3f} {t['reused']:11.3f} {out[-1]:6.2f}")
    return out


def main() -> None:
    argparse.ArgumentParser(description=__doc__,  # (no options: --help prints the docstring)
                            formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    head = (f"{'sigma':5s} {'target':22s} {'readout':9s} {'alpha0':>6s} {'eta':>5s} "
            f"{'fresh (s)':>10s} {'reused (s)':>11s} {'ratio':>6s}")
    print(head)
    fixed = ratios([dict(sigma="tanh", target=t, readout=r, alpha0=2.0, eta=1.0)
                    for t, r in SETTINGS])
    print(f"risk point: worst ratio reused / fresh = {max(fixed):.2f} (target <= 2)")
    drawn = ratios(random_settings())
    print(f"random settings: median ratio {np.median(drawn):.2f}, max {max(drawn):.2f} "
          "(target <= 2)")
    for target, readout in SETTINGS[:3]:
        t = {b: best_of(lambda b=b, t=target, r=readout: step_directions(
            "tanh", t, alpha0=2.0, eta=1.0, d=1000, batch=b, readout=r), 2)
             for b in ("fresh", "reused")}
        print(f"step_directions {target:24s} {readout:9s} fresh {t['fresh']:.2f} s, reused "
              f"{t['reused']:.2f} s")


if __name__ == "__main__":
    main()
