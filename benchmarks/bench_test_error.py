"""Noise and cost of the three test-error estimators (validation.protocol.estimators) on trained
networks.

    python benchmarks/bench_test_error.py            # d = 2000, four settings, 12 test sets
    python benchmarks/bench_test_error.py --d 1000 --test-sets 20

For each setting, one repetition is trained (sample stream 1, as the validation store); then
``--test-sets`` independent test sets of ``n_test = 10^4`` inputs are drawn and every estimator is
applied to the same inputs (a paired comparison). Printed per setting: the mean over the readouts
(4 alphas x 2 lambdas) of each estimator's sd across test sets -- the test-set part of the
per-repetition spread of the validation matrix -- the ratio mc / cv, and the seconds each
estimator takes. The spread across repetitions (different networks) is the other part, and no
test-error estimator can remove it.
"""

# ruff: noqa: I001 - validation is imported first: its OpenBLAS thread setting must precede numpy
from __future__ import annotations

import validation  # noqa: F401

import argparse
import time

import numpy as np

from asymptotics.coefficients.functions import get_function
from validation.matrix.campaign import ALPHAS, LAMS
from validation.protocol.montecarlo import batches
from validation.protocol.simulator import Setting, chunk_rows, first_layer, fit_readouts
from validation.protocol.estimators import ESTIMATORS, estimate_test_error

SETTINGS = [("srf", "erf", "he2", 1.0, 2.0, 1.0), ("srf", "tanh", "tanh", 1.0, 2.0, 1.0),
            ("network", "relu", "relu", 1.0, 2.0, 3.0), ("rf", "tanh", "sin", 1.0, 2.0, 0.0)]


def bench(model: str, sigma_name: str, target_name: str, beta: float, alpha0: float, eta: float,
          d: int, test_sets: int, n_test: int = 10_000) -> dict:
    s = Setting(model, sigma_name, target_name, alpha=1.0, alpha0=alpha0, eta=eta, lam=LAMS[0],
                beta=beta, d=d, stream=1)
    sigma, target = get_function(sigma_name), get_function(target_name)
    W1, theta, rngs = first_layer(s, np.random.SeedSequence(2026), sigma, target)
    ns = [max(1, round(a * d)) for a in ALPHAS]
    A = fit_readouts(W1, theta, sigma, target, ns=ns, lams=LAMS, delta=0.0, rng=rngs["ridge"],
                     noise_rng=rngs["ridge_noise"]).reshape(s.p, -1)
    rng = np.random.default_rng(7)
    values = {e: [] for e in ESTIMATORS}
    seconds = dict.fromkeys(ESTIMATORS, 0.0)
    for _ in range(test_sets):
        X = np.concatenate(list(batches(rng, n_test, d, chunk_rows(s.p, n_test))))
        for e in ESTIMATORS:
            t0 = time.perf_counter()
            values[e].append(estimate_test_error(W1, A, theta, sigma, target, iter([X]), n_test,
                                                 e))
            seconds[e] += (time.perf_counter() - t0) / test_sets
    sd = {e: np.std(v, axis=0, ddof=1) for e, v in values.items()}
    risk = np.mean(values["cv"], axis=0)
    return dict(setting=f"{model} {sigma_name}/{target_name} beta={beta:g} alpha0={alpha0:g} "
                f"eta={eta:g}", risk=float(np.median(risk)),
                **{f"sd_{e}": float(np.mean(sd[e])) for e in ESTIMATORS},
                ratio=float(np.mean(sd["mc"] / sd["cv"])),
                **{f"s_{e}": seconds[e] for e in ESTIMATORS})


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--d", type=int, default=2000)
    p.add_argument("--test-sets", type=int, default=12)
    args = p.parse_args()
    print(f"d = {args.d}, n_test = 10^4, {args.test_sets} paired test sets; sd = test-set "
          "spread of one network's test error (mean over 8 readouts)")
    print(f"{'setting':44s} {'median R':>9s} {'sd mc':>9s} {'sd split':>9s} {'sd cv':>9s} "
          f"{'mc/cv':>6s} {'s mc':>6s} {'s split':>7s} {'s cv':>6s}")
    for spec in SETTINGS:
        r = bench(*spec, d=args.d, test_sets=args.test_sets)
        print(f"{r['setting']:44s} {r['risk']:9.4f} {r['sd_mc']:9.2e} {r['sd_split']:9.2e} "
              f"{r['sd_cv']:9.2e} {r['ratio']:6.1f} {r['s_mc']:6.2f} {r['s_split']:7.2f} "
              f"{r['s_cv']:6.2f}", flush=True)


if __name__ == "__main__":
    main()
