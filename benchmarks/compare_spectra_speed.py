"""Before/after of the network features' spectra after two steps (tanh constant, tanh +-1,
relu +-1; d = 1000 and 2000: the settings of validation/reports/SPECTRA_THEORY.md): the
300-point density on [0, 8.925], outliers, their overlaps and the support to an npz, with CPU
times (warm, best of 3). Run under two checkouts, then compare the two files:
``python benchmarks/compare_spectra_speed.py OUT.npz [names]`` and
``python benchmarks/compare_spectra_speed.py --diff OLD.npz NEW.npz``."""

from __future__ import annotations

import sys
import time

import numpy as np

import asymptotics as A

CASES = {
    "tanh_const": dict(sigma="tanh", target="tanh(z1)", alpha=4.0, alpha0=2.0,
                       readout="constant"),
    "tanh_pm1": dict(sigma="tanh", target="tanh(z1)", alpha=4.0, alpha0=2.0, readout="pm1"),
    "relu_pm1": dict(sigma="relu", target="relu(z1)", alpha=2.0, alpha0=1.0, readout="pm1"),
}


def run(out: str, names: list[str]) -> None:
    res = {}
    for name in names:
        kw = CASES[name]
        for d in (1000, 2000):
            t = time.process_time()
            law = A.spectrum("features", steps=2, eta=1.0, beta=0.5, d=d, **kw)
            tb = time.process_time() - t
            x = np.linspace(0, 8.5 * 1.05, 300)
            law.density(x)
            ts = []
            for _ in range(3):
                t = time.process_time()
                dens = law.density(x)
                ts.append(time.process_time() - t)
            res[f"{name}_{d}_dens"] = dens
            res[f"{name}_{d}_out"] = np.array([o.location for o in law.outliers])
            res[f"{name}_{d}_ov"] = np.array([v for o in law.outliers
                                              for v in o.overlaps.values()])
            res[f"{name}_{d}_sup"] = np.array(law.support).ravel()
            print(name, d, f"law {tb:.2f} s, 300-point density {min(ts):.3f} s", law.support,
                  [round(o.location, 4) for o in law.outliers], flush=True)
    np.savez(out, **res)


def diff(old: str, new: str) -> None:
    o, n = np.load(old), np.load(new)
    for k in o.files:
        a, b = o[k], n[k]
        if a.shape != b.shape:
            print(k, "shapes differ", a.shape, b.shape)
        else:
            print(k, "max abs diff", float(np.max(np.abs(a - b))) if a.size else 0.0)


if __name__ == "__main__":
    if len(sys.argv) < 2 or {"-h", "--help"} & set(sys.argv[1:]):  # the usage is the docstring
        print(__doc__)
    elif sys.argv[1] == "--diff":
        diff(sys.argv[2], sys.argv[3])
    else:
        run(sys.argv[1], sys.argv[2].split(",") if len(sys.argv) > 2 else list(CASES))
