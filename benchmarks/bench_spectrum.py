"""Speed of the predicted spectra (docs/THEORY.md §16) against one risk point, in one run.

Prints, warm (best of several): one sRF risk point ``asymptotics.risk(alpha, model="srf")`` (a
new alpha per call, past the result cache); a
300-point density of the features' law and of the weights' law (sRF and network) on a prepared
:class:`~asymptotics.SpectralLaw`; the construction of each law (support, atom, outliers at d);
and the ratios to the risk point. Then the network's features after steps against a warm risk
point of the same setting (``SAME``: relu with the +-1 readout, K = 2 groups; the three-value
readout, K = 3), CPU time (``time.process_time``: the machine may be shared; it counts every
thread, so with two BLAS threads it can be up to twice the wall time) and the density's wall
time beside it. Run:
python benchmarks/bench_spectrum.py   (a few minutes; ``--same``: only the second part;
``--ab``: the network densities of ``SAME`` with the path model's subsets, carried inverses,
the chord's reused inverse and the node sums by feature off (the code before them) and on,
interleaved in one process, CPU time, best and median of 7 each)
"""

from __future__ import annotations

import sys
import time

import numpy as np

import asymptotics as A

SETTING = dict(sigma="tanh", target="tanh", alpha0=2.0, eta=1.0, beta=0.5)
ALPHA = 4.0
#: network features after steps, timed against a risk point of the same setting (alpha, kw)
SAME = {"relu, +-1 readout (K = 2)": (1.08, dict(sigma="relu", readout="pm1", steps=2,
                                                 alpha0=1.24, beta=1.18, eta=1.0,
                                                 target="tanh(z1)")),
        "tanh, three-value (K = 3)": (4.0, dict(sigma="tanh",
                                                readout={1.0: 0.25, -1.0: 0.5, 2.0: 0.25},
                                                steps=2, alpha0=2.0, beta=0.5, eta=1.0,
                                                target="tanh(z1)"))}


def best_of(fn, repeat: int = 3, clock=time.perf_counter) -> float:
    """The best of ``repeat`` calls after one warm call, on ``clock``."""
    fn()  # warm
    out = []
    for _ in range(repeat):
        t = clock()
        fn()
        out.append(clock() - t)
    return min(out)


def cpu_best(fn, repeat: int = 3) -> float:
    return best_of(fn, repeat, time.process_time)


def _uncached(*args, **kw):
    """A law computed again (the caches below ``spectrum`` warm, its own law cache cleared)."""
    from asymptotics.spectra import clear_cache

    clear_cache()
    return A.spectrum(*args, **kw)


def same_setting() -> None:
    """300-point densities of the network's features after steps, the law's construction
    (support, atom, outliers; warm) and a warm risk point of the same setting (model, steps,
    readout), CPU seconds, in one run."""
    for name, (alpha, kw) in SAME.items():
        law = A.spectrum("features", alpha, d=1000, **kw)
        x = np.linspace(0.0, law.edge * 1.05, 300)
        t_dens = cpu_best(lambda law=law, x=x: law.density(x))
        t_wall = best_of(lambda law=law, x=x: law.density(x))
        t_law = cpu_best(lambda alpha=alpha, kw=kw: _uncached("features", alpha, d=1000, **kw),
                         repeat=1)
        alphas = iter(alpha * (1.0 + 1e-6 * k) for k in range(1, 100))
        t_risk = cpu_best(lambda kw=kw, alphas=alphas, m=law.model: A.risk(next(alphas), model=m,
                                                                           **kw))
        print(f"features, {name} ({law.model}): 300-point density {t_dens * 1e3:7.1f} ms "
              f"CPU ({t_wall * 1e3:.1f} ms wall; target <= 300 ms); law {t_law:5.2f} s; "
              f"warm risk point of the same "
              f"setting {t_risk * 1e3:7.1f} ms; density / risk point {t_dens / t_risk:5.2f}; "
              f"law / risk point {t_law / t_risk:5.1f}", flush=True)


def same_ab(reps: int = 7) -> None:
    """Before/after of the path model's speed-ups (docs/THEORY.md §16.8, sixth pass) on the same
    law object, interleaved; the densities' largest difference relative to their maximum."""
    from asymptotics.spectra import netbulk
    from asymptotics.spectra.traces import net_chord

    for name, (alpha, kw) in SAME.items():
        law = A.spectrum("features", alpha, d=1000, **kw)
        sol = law._solver
        if not isinstance(getattr(sol, "approx", None), net_chord.PathSolver):
            print(f"features, {name}: no path model")
            continue
        x = np.linspace(0.0, law.edge * 1.05, 300)

        def mode(on: bool, sol=sol) -> None:
            sol.approx.__class__ = net_chord.PathSolver if on else net_chord.SymSolver
            sol.approx.last_inverse = None
            net_chord.CARRY = net_chord.REUSE_INVERSE = netbulk.NODE_FEATURES = on

        t: dict = {False: [], True: []}
        d = {}
        try:
            for on in (False, True):
                mode(on)
                d[on] = law.density(x)
            for r in range(reps):
                for on in ((False, True) if r % 2 == 0 else (True, False)):
                    mode(on)
                    t0 = time.process_time()
                    law.density(x)
                    t[on].append(time.process_time() - t0)
        finally:
            mode(True)
        b, a = min(t[False]), min(t[True])
        diff = float(np.nanmax(np.abs(d[True] - d[False])) / np.nanmax(d[False]))
        print(f"features, {name}: 300-point density before {b * 1e3:6.1f} ms, after "
              f"{a * 1e3:6.1f} ms CPU (best of {reps}; ratio {a / b:.2f}; medians "
              f"{np.median(t[False]) * 1e3:.1f} / {np.median(t[True]) * 1e3:.1f} ms); densities "
              f"max|diff|/max {diff:.1e}", flush=True)


def main() -> None:
    if {"-h", "--help"} & set(sys.argv[1:]):  # the usage is the docstring
        print(__doc__)
        return
    if "--ab" in sys.argv[1:]:
        same_ab()
        return
    if "--same" in sys.argv[1:]:
        same_setting()
        return
    # a new alpha per call: results are cached per parameter set
    alphas = iter(ALPHA * (1.0 + 1e-6 * k) for k in range(1, 100))
    t_risk = best_of(lambda: A.risk(next(alphas), model="srf", lam=0.01, **SETTING), repeat=5)
    print(f"one sRF risk point: {t_risk * 1e3:.1f} ms")
    cases = {"features (sRF)": dict(of="features", alpha=ALPHA, model="srf"),
             "features (network)": dict(of="features", alpha=ALPHA, model="network"),
             "weights (sRF)": dict(of="weights", model="srf"),
             "weights (network)": dict(of="weights", model="network"),
             "weights (3 steps, pm1)": dict(of="weights", model="srf", steps=3, readout="pm1",
                                            target="tanh(z1)"),
             "weights (3 steps, net)": dict(of="weights", model="network", steps=3,
                                            readout="pm1", target="tanh(z1)"),
             "features (2 steps, net)": dict(of="features", alpha=ALPHA, model="network",
                                             steps=2, readout="constant", target="tanh(z1)"),
             "features (2 st, pm1, net)": dict(of="features", alpha=ALPHA, model="network",
                                               steps=2, readout="pm1", target="tanh(z1)"),
             "weights (2 steps, a_t)": dict(of="weights", steps=2, readout="gaussian",
                                            exponents=(0.35, 0.3), eta=(1.0, 3.0),
                                            sigma="tanh(z+0.5)", target="linear",
                                            alpha0=1.0)}
    for name, kw in cases.items():
        kw = {**SETTING, **kw}
        t_build = best_of(lambda kw=kw: _uncached(d=1000, **kw), repeat=1)
        law = A.spectrum(d=1000, **kw)
        x = np.linspace(0.0, law.edge * 1.05, 300)
        t_dens = best_of(lambda law=law, x=x: law.density(x))
        print(f"{name:25s}: 300-point density {t_dens * 1e3:7.1f} ms "
              f"({t_dens / t_risk:5.1f} risk points; one density point "
              f"{t_dens / 300 / t_risk:.2f} risk points); law with support and outliers "
              f"{t_build:5.2f} s ({t_build / t_risk:5.1f} risk points)")
    same_setting()


if __name__ == "__main__":
    main()
