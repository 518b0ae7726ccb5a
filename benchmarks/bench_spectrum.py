"""Speed of the predicted spectra (docs/THEORY.md §16) against one risk point, in one run.

Prints, warm (best of several): one sRF risk point ``asymptotics.risk(alpha, model="srf")`` (a
new alpha per call, past the result cache); a
300-point density of the features' law and of the weights' law (sRF and network) on a prepared
:class:`~asymptotics.SpectralLaw`; the construction of each law (support, atom, outliers at d);
and the ratios to the risk point. Run: python benchmarks/bench_spectrum.py   (about a minute)
"""

from __future__ import annotations

import time

import numpy as np

import asymptotics as A

SETTING = dict(sigma="tanh", target="tanh", alpha0=2.0, eta=1.0, beta=0.5)
ALPHA = 4.0


def best_of(fn, repeat: int = 3) -> float:
    fn()  # warm
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return min(out)


def main() -> None:
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
        t_build = best_of(lambda kw=kw: A.spectrum(d=1000, **kw), repeat=1)
        law = A.spectrum(d=1000, **kw)
        x = np.linspace(0.0, law.edge * 1.05, 300)
        t_dens = best_of(lambda law=law, x=x: law.density(x))
        print(f"{name:25s}: 300-point density {t_dens * 1e3:7.1f} ms "
              f"({t_dens / t_risk:5.1f} risk points; one density point "
              f"{t_dens / 300 / t_risk:.2f} risk points); law with support and outliers "
              f"{t_build:5.2f} s ({t_build / t_risk:5.1f} risk points)")


if __name__ == "__main__":
    main()
