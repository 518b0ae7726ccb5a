"""The sRF surrogate's features spectra (model="srf", one step, finite-support readouts: the
K-group V-part of docs/THEORY.md §16.1) before and after the compiled V-part
(asymptotics/spectra/traces/srf_kernels.py), measured in one run: per setting, with the numpy
path (``srf_solver.KERNELS = False``) and with the kernels, the law's construction (warm: the
second call), a 300-point density on [0, 1.05 edge] (best of 3 after one call), one warm risk
point ``asymptotics.risk(alpha (1 + 1e-6 k), ..., model="srf")`` (best of 3), the ratios, and
the largest relative differences of the two laws (density, support, outlier locations and
overlaps). ``--grid``: before = the component search on the full grid
(``srf_scan.COARSE = 1``) and the real branch's forward-difference Jacobian
(``srf_solver.EXACT_BRANCH = False``), the former law; after = the coarse first pass and the
exact Jacobian (docs/THEORY.md §16.10); both with the kernels. CPU time
(``time.process_time``). Rows are appended to benchmarks/data/bench_spectrum_srf.txt by hand
with the git revision.
Run: ``python -u benchmarks/bench_spectrum_srf.py [--grid]`` (a few seconds a setting)."""

from __future__ import annotations

import argparse
import math

import numpy as np
from bench_spectrum_random import best, cpu  # the same CPU timers (run as a script)

import asymptotics as A
from asymptotics.spectra import clear_cache
from asymptotics.spectra.traces import srf_scan, srf_solver

COARSE = srf_scan.COARSE

TV = {1.0: 0.25, -1.0: 0.5, 2.0: 0.25}  # bench_spectrum_random's three-value readout
TV2 = {1.0: 0.5, -1.0: 0.3, 2.0: 0.2}
#: the five sRF features settings of bench_spectrum_random (seed 20261126: #0, 4, 13, 16, 17),
#: then seven more (other readouts, sigma, d = None and d = 300, a constant readout, K = 1)
SETTINGS = [
    ("relu", TV, 1.3168, 0.96915, 0.66729, 1000.0),
    ("erf", "pm1", 2.4511, 1.5546, 0.39271, 1000.0),
    ("tanh", TV, 2.8719, 1.7526, 1.4039, 1000.0),
    ("tanh", "pm1", 0.63181, 1.3718, 0.37574, 1000.0),
    ("erf", "pm1", 3.1177, 0.51007, 0.78735, 1000.0),
    ("relu", "pm1", 1.5, 2.0, 1.0, None),
    ("sigmoid", TV2, 0.8, 1.2, 1.2, 1000.0),
    ("relu", TV2, 2.0, 3.0, 0.5, None),
    ("tanh", TV2, 1.0, 0.7, 0.9, 300.0),
    ("erf", TV, 0.6, 2.5, 0.5, None),
    ("relu", "constant", 1.2, 1.5, 0.8, 1000.0),
    ("sigmoid", "pm1", 3.5, 0.8, 1.4, 1000.0),
]


def measure(alpha: float, kw: dict, kernels: bool, coarse: int = COARSE,
            exact: bool = True) -> tuple:
    """(law warm s, density s, law, density values) with or without the kernels, with the
    component search's coarse pass ``coarse`` (1: the full grid) and the real branch's exact
    Jacobian (``exact``; else forward differences)."""
    srf_solver.KERNELS = kernels
    srf_solver.EXACT_BRANCH = exact
    srf_scan.COARSE = coarse
    try:
        A.spectrum("features", alpha, **kw)
        clear_cache()  # the law computed again (not spectrum's cached law)
        tl, law = cpu(lambda: A.spectrum("features", alpha, **kw))
        x = np.linspace(0.0, 1.05 * law.edge, 300)
        td = best(lambda: law.density(x))
        return tl, td, law, law.density(x)
    finally:
        srf_solver.KERNELS = True
        srf_scan.COARSE = COARSE
        srf_solver.EXACT_BRANCH = True


def rel(a: float, b: float) -> float:
    return 0.0 if a == b else abs(a - b) / max(abs(a), abs(b))


def differences(old, new, dold: np.ndarray, dnew: np.ndarray) -> tuple[float, float, float]:
    """(density/support/locations, overlaps) largest relative differences; density relative
    to its maximum."""
    dd = float(np.max(np.abs(dnew - dold)) / np.max(dold))
    ds = max((rel(a, b) for u, v in zip(old.support, new.support, strict=True)
              for a, b in zip(u, v, strict=True)), default=0.0)
    dl = max((rel(o.location, p.location) for o, p in zip(old.outliers, new.outliers,
                                                            strict=True)
              if math.isfinite(o.location)), default=0.0)
    dv = max((rel(o.overlaps[k], p.overlaps[k]) for o, p in zip(old.outliers, new.outliers,
                                                                 strict=True)
              for k in o.overlaps if o.overlaps[k] > 1e-12), default=0.0)
    return max(dd, ds, dl), dv, dd


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=len(SETTINGS), help="settings (default all 12)")
    ap.add_argument("--grid", action="store_true",
                    help="before/after: the former law's construction and the new one")
    args = ap.parse_args(argv)
    print("| # | sigma | readout | alpha | alpha0 | beta | d | K | law before / after s | "
          "density before / after s | risk warm s | law / risk before / after | "
          "density / risk before / after | max rel diff (density, support, outliers) | "
          "overlaps |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for i, (sigma, ro, alpha, alpha0, beta, d) in enumerate(SETTINGS[:args.n]):
        kw = dict(sigma=sigma, readout=ro, alpha0=alpha0, beta=beta, eta=1.0,
                  target="tanh(z1)", steps=1, model="srf", d=d)
        before = (True, 1, False) if args.grid else (False, COARSE, True)
        tl0, td0, old, dold = measure(alpha, kw, *before)
        tl1, td1, new, dnew = measure(alpha, kw, True)
        rk = {k: v for k, v in kw.items() if k != "d"}
        alphas = iter(alpha * (1.0 + 1e-6 * k) for k in range(1, 100))
        rw = best(lambda: A.risk(next(alphas), **rk))  # noqa: B023
        diff, dv, _ = differences(old, new, dold, dnew)
        name = ro if isinstance(ro, str) else "three-value"
        K = len(new.params["fractions"])
        rows.append((tl0, tl1, td0, td1, rw))
        print(f"| {i} | {sigma} | {name} | {alpha:.3g} | {alpha0:.3g} | {beta:.3g} | {d} | {K} "
              f"| {tl0:.3f} / {tl1:.3f} | {td0:.3f} / {td1:.3f} | {rw * 1e3:.2f} ms | "
              f"{tl0 / rw:.0f} / {tl1 / rw:.0f} | {td0 / rw:.0f} / {td1 / rw:.0f} | "
              f"{diff:.1e} | {dv:.1e} |", flush=True)
    tl0, tl1, td0, td1, rw = (np.array(c) for c in zip(*rows, strict=True))
    print(f"\nlaw (warm): median {np.median(tl0):.3f} -> {np.median(tl1):.3f} s "
          f"(speed-up median {np.median(tl0 / tl1):.1f}x); density (300 points): median "
          f"{np.median(td0):.3f} -> {np.median(td1):.3f} s, largest {td0.max():.3f} -> "
          f"{td1.max():.3f} s (speed-up median {np.median(td0 / td1):.1f}x); law / warm risk "
          f"point median {np.median(tl0 / rw):.0f} -> {np.median(tl1 / rw):.0f}, max "
          f"{np.max(tl0 / rw):.0f} -> {np.max(tl1 / rw):.0f}; density / risk median "
          f"{np.median(td0 / rw):.0f} -> {np.median(td1 / rw):.0f}")


if __name__ == "__main__":
    main()
