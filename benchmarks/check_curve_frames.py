"""The three-step curves of ``bench_engine.py`` section 3, frame by frame, against a saved copy:
``--save FILE`` writes every curve's DataFrame (the default setting and the ``N_EXTRA`` drawn
settings of each seed given by ``--seeds``, default ``SEED`` and 4242); ``--compare FILE``
recomputes them with the code on ``PYTHONPATH``, twice (the second time from the caches), and
prints, per curve, whether both frames are bit-identical, else the largest relative difference
of any number in them (the float columns and the numbers inside the JSON columns) and any
column whose text or non-numbers differ.

Run: ``PYTHONPATH=<old tree> python benchmarks/check_curve_frames.py --save old.pkl``, then
``PYTHONPATH=<new tree> python benchmarks/check_curve_frames.py --compare old.pkl``."""

from __future__ import annotations

import json
import math
import os
import pickle
import sys

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_engine as B  # noqa: E402

import asymptotics as A  # noqa: E402


def settings(seeds: list[int]) -> list[tuple[str, dict, str]]:
    out = [("default", dict(B.STEPS_SETTING), "pm1")]
    for seed in seeds:
        for i in range(B.N_EXTRA):
            kw = B.draw_steps_setting(np.random.default_rng([seed, i]))
            out.append((f"{seed}/{i}", kw, kw.pop("readout")))
    return out


def curves(seeds: list[int]) -> dict:
    alphas = np.linspace(0.2, 5.0, 100)
    return {name: A.risk_curve(alphas, model="srf", steps=3, readout=ro, lam=0.01, **kw)
            for name, kw, ro in settings(seeds)}


def _numbers(x: object) -> list:
    """The numbers of a JSON value, in order (other leaves as they are)."""
    if isinstance(x, dict):
        return [y for k in x for y in [k, *_numbers(x[k])]]
    if isinstance(x, list):
        return [y for v in x for y in _numbers(v)]
    return [x]


def _rel(a: object, b: object) -> float:
    """Relative difference of two numbers (0 if equal, NaN-equal; inf if not comparable)."""
    if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, int | float) or \
            not isinstance(b, int | float):
        return 0.0 if a == b else math.inf
    if a == b or (math.isnan(a) and math.isnan(b)):
        return 0.0
    if not (math.isfinite(a) and math.isfinite(b)):
        return math.inf
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


def compare(old, new) -> tuple[bool, float, list]:
    """(bit-identical, largest relative difference of a number, columns differing otherwise)."""
    if list(old.columns) != list(new.columns) or len(old) != len(new):
        return False, math.inf, ["shape/columns"]
    same, worst, other = True, 0.0, []
    for c in old.columns:
        for a, b in zip(old[c].tolist(), new[c].tolist(), strict=True):
            if isinstance(a, str) and isinstance(b, str) and a[:1] in "[{" and b[:1] in "[{":
                if a == b:
                    continue
                same = False
                na, nb = _numbers(json.loads(a)), _numbers(json.loads(b))
                if len(na) != len(nb):
                    other.append(c)
                    continue
                d = max(_rel(x, y) for x, y in zip(na, nb, strict=True))
            else:
                if a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a)
                              and math.isnan(b)):
                    continue
                same = False
                d = _rel(a, b)
            if d == math.inf:
                other.append(c)
            else:
                worst = max(worst, d)
    return same, worst, sorted(set(other))


def main() -> int:
    if {"-h", "--help"} & set(sys.argv[1:]):  # the usage is the docstring
        print(__doc__)
        return 0
    seeds = [B.SEED, 4242]
    if "--seeds" in sys.argv:
        seeds = [int(s) for s in sys.argv[sys.argv.index("--seeds") + 1].split(",")]
    got = curves(seeds)
    if "--save" in sys.argv:
        with open(sys.argv[sys.argv.index("--save") + 1], "wb") as fh:
            pickle.dump(got, fh)
        print(f"saved {len(got)} curves")
        return 0
    with open(sys.argv[sys.argv.index("--compare") + 1], "rb") as fh:
        old = pickle.load(fh)
    again = curves(seeds)  # (asked again: the mapping and the tables from the caches)
    n_same, worst_all = 0, 0.0
    for name, df in got.items():
        same, worst, other = compare(old[name], df)
        same2, worst2, other2 = compare(old[name], again[name])
        same, worst, other = same and same2, max(worst, worst2), sorted({*other, *other2})
        n_same += same
        worst_all = max(worst_all, worst)
        verdict = "bit-identical" if same else f"largest relative difference {worst:.2e}"
        print(f"{name:14s}: {verdict}" + (f"; other differences in {other}" if other else ""))
    print(f"{n_same} of {len(got)} curves bit-identical; largest relative difference "
          f"{worst_all:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
