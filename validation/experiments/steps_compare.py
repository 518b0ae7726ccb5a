"""Theory against simulation after several giant steps, in one call (docs/THEORY.md §12).

:func:`compare_steps` computes, at every ridge sample ratio ``alpha`` and after every step
``t = 0..steps`` (0: random features), the risk of both K-group theories of the steps, the
network theory of the groups (``asymptotics.risk(..., steps=T)``, ``model="network"``, THEORY.md
§15) and their sRF surrogate (``model="srf"``, §12; :func:`asymptotics.risk_by_step`), and the
Monte Carlo of the protocol (:mod:`validation.multistep`: the trained network, the readout frozen
during the steps, then ridge on ``alpha d`` fresh samples), with the same parameter names and
defaults as the theory (``asymptotics.core.parameters``: tanh, tanh, ``alpha0 = 2``,
``eta = 1``, ``lam = 0.01``, ``beta = 1``; ``readout="constant"``; ``d = 1000``,
``seeds = 10``). One row per ``(alpha, step)``, with the per-step overlaps and group statistics
as columns.

``python -m validation steps ...`` (or ``python -m validation.experiments.steps_compare``) is
the command line: the table as CSV on stdout, progress on stderr, ``--quiet``, ``--out``.

Randomness: repetition ``i`` is child ``i`` of ``SeedSequence(seed)`` (the streams of
:func:`validation.multistep.run_once`), whatever ``n_jobs``; every ``alpha`` of a repetition
uses the first ``round(alpha d)`` samples of one ridge pool and the same test inputs, so the
estimates at different ``alpha`` of one repetition are correlated (each is unbiased).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Sequence

import numpy as np
import pandas as pd

from asymptotics.core import checks
from asymptotics.core.parameters import STEPS_EXAMPLE, default

#: the readouts the simulation covers; "hypercube" is the simulator's older name of "pm1"
READOUTS = ("constant", "pm1", "hypercube")
#: the theories beside the simulation: the network theory of the groups (THEORY.md §15, the
#: default model) and their sRF surrogate (§12); columns ``theory_<model>``, ``z_<model>``, ...
THEORY_MODELS = ("network", "srf")
SIMULATED = "network"
LEAD = ["alpha", "step", "theory_network", "theory_srf", "theory_network_p", "theory_srf_p",
        "sim_mean", "sim_se", "z_network", "z_srf", "z_network_p", "z_srf_p", "rel_gap_network",
        "rel_gap_srf"]


def readout_name(readout: object) -> str:
    """The theory's name of a readout the simulation covers (``"hypercube"`` is ``"pm1"``)."""
    if isinstance(readout, str) and readout in READOUTS:
        return "pm1" if readout == "hypercube" else readout
    raise ValueError(f"readout must be one of {', '.join(READOUTS)} for the simulation "
                     f"(a mapping value -> weight is theory only: asymptotics.risk_by_step), "
                     f"got {readout!r}")


def simulator_target(target: object) -> str:
    """The target as text in ``z1..zk`` that the simulator parses: a multi-index expression as
    it is, a registered name (``"tanh"``) or an expression in ``z`` as the same function of
    ``z1`` (checked on a grid to 1e-12)."""
    from asymptotics.coefficients.functions import get_function
    from asymptotics.coefficients.targets import target_callable

    if not isinstance(target, str):
        raise TypeError(f"target must be text (a name or an expression in z1..zk) for the "
                        f"simulation, got {target!r}")
    try:
        target_callable(target)
        return target
    except ValueError as first:
        try:
            f = get_function(target)
        except (ValueError, TypeError):
            raise ValueError(f"target: {first}") from None
    z = np.linspace(-4.0, 4.0, 33)
    for text in (f"{target}(z1)", getattr(f, "expression", None)):
        if not text:
            continue
        try:
            g, k = target_callable(text)
        except ValueError:
            continue
        if k == 1 and np.allclose(g(z[:, None]), f(z), rtol=1e-12, atol=1e-12):
            return text
    raise ValueError(f"target {target!r} has no expression in z1 the simulator can parse; "
                     "write it as one (e.g. 'tanh(z1)')")


def _etas(eta: object, steps: int) -> tuple[float, ...]:
    if isinstance(eta, (str, bytes)):
        raise TypeError(f"eta must be a number >= 0 or one per step, got {eta!r}")
    values = np.atleast_1d(np.asarray(eta, dtype=object)).tolist()
    out = tuple(checks.real("eta", e, 0.0) for e in values)
    if len(out) == 1:
        out = out * steps
    if len(out) != steps:
        raise ValueError(f"eta needs one value or one per step (steps={steps}), got {len(out)}")
    return out


def _theory_rows(alphas: Sequence[float], *, steps: int, sigma: str, target: str, alpha0: float,
                 eta: tuple[float, ...], lam: float, beta: float, delta: float, readout: str,
                 d: int, progress: bool | None) -> pd.DataFrame:
    """Both theories at p -> infinity and at the simulated width p = beta d (the sRF surrogate
    point by point as ``risk(steps=t, model="srf")``, the network theory as
    :func:`asymptotics.risk_by_step`), and the groups' state (the same in both)."""
    from asymptotics.api.by_step import risk_by_step
    from asymptotics.core.progress import Progress
    from asymptotics.multiindex.steps import steps_mapping
    from asymptotics.spiked.solve import risk_spiked

    mp = steps_mapping(sigma, target, steps=steps, alpha0=alpha0, eta=eta, delta=delta,
                       readout=readout)
    fractions = mp.readout.weights
    net = {}
    for col, p in (("theory_network", None), ("theory_network_p", beta * d)):
        df = risk_by_step(alphas, steps=steps, sigma=sigma, target=target, alpha0=alpha0,
                          eta=eta, lam=lam, beta=beta, delta=delta, readout=readout, p=p,
                          model="network", progress=progress)
        net[col] = {(float(r.alpha), int(r.step)): (r.risk, r.converged)
                    for r in df.itertuples()}
    rows = []
    with Progress(2 * (steps + 1) * len(alphas), "steps theory (srf)", unit="pt",
                  enabled=progress) as bar:
        for t, st in enumerate(mp.states):
            params = mp.spiked_params(t)
            stats: dict[str, float] = {}
            for j, v in enumerate(st.mean_overlaps(fractions)):
                stats[f"overlap_{j + 1}"] = float(v)
            for g in range(len(fractions)):
                for j in range(mp.k):
                    stats[f"a_g{g}_j{j + 1}"] = float(st.a[g, j])
                stats[f"c_g{g}"] = float(st.c[g])
            for a in alphas:
                out = {}
                for col, p in (("theory_srf", None), ("theory_srf_p", beta * d)):
                    res = risk_spiked(a, sigma=sigma, lam=lam, beta=beta, delta=delta, p=p,
                                      **params)
                    out[col] = res.risk if res.converged else math.nan
                    out[f"{col}_status"] = "converged" if res.converged else str(res.status)
                    bar.update()
                for col, values in net.items():
                    risk, conv = values[(float(a), t)]
                    out[col] = float(risk) if conv else math.nan
                    out[f"{col}_status"] = "converged" if conv else "not converged"
                rows.append(dict(alpha=float(a), step=t, **out, **stats))
    return pd.DataFrame(rows)


def _simulation_rows(alphas: Sequence[float], *, steps: int, sigma: str, target: str,
                     alpha0: float, eta: tuple[float, ...], lam: float, beta: float,
                     delta: float, readout: str, d: int, seeds: int, seed: int, n_test: int,
                     n_jobs: int, progress: bool | None) -> pd.DataFrame:
    """Mean and standard error over repetitions of the test error (control variate, module
    :mod:`validation.multistep.theory`), the mean overlaps and the group statistics."""
    from validation.multistep.simulator import MultiStepConfig, run_repetitions
    from validation.multistep.theory import target_power

    cfg = MultiStepConfig(d=d, target=target, sigma=sigma, steps=steps, alpha0=alpha0,
                          beta=beta, eta=eta, readout=readout, delta=delta, lam=lam,
                          n_test=n_test, ridge_alphas=tuple(alphas), groups=True)
    runs = run_repetitions(cfg, np.random.SeedSequence(seed).spawn(seeds), range(seeds), n_jobs,
                           progress=progress)
    exact = target_power(target)
    # (repetitions, steps + 1, alphas): the raw error and the control-variate estimate
    raw = np.stack([r.test_errors for r in runs])
    cv = raw - np.array([r.target_power for r in runs])[:, None, None] + exact
    over = np.stack([r.overlaps.mean(axis=1) for r in runs])  # (reps, T + 1, k)
    G = len(runs[0].groups[0].n)
    a = np.stack([[st.a for st in r.groups] for r in runs])  # (reps, T + 1, G, k)
    c = np.stack([[st.c for st in r.groups] for r in runs])  # (reps, T + 1, G)

    def mean_se(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        se = x.std(axis=0, ddof=1) / math.sqrt(len(x)) if len(x) > 1 else np.full(x.shape[1:],
                                                                                    math.nan)
        return x.mean(axis=0), se

    (m, s), (mr, sr) = mean_se(cv), mean_se(raw)
    (om, os_), (am, as_), (cm, cs) = mean_se(over), mean_se(a), mean_se(c)
    rows = []
    for t in range(steps + 1):
        stats: dict[str, float] = {}
        for j in range(over.shape[2]):
            stats[f"sim_overlap_{j + 1}"] = float(om[t, j])
            stats[f"sim_overlap_{j + 1}_se"] = float(os_[t, j])
        for g in range(G):
            for j in range(a.shape[3]):
                stats[f"sim_a_g{g}_j{j + 1}"] = float(am[t, g, j])
                stats[f"sim_a_g{g}_j{j + 1}_se"] = float(as_[t, g, j])
            stats[f"sim_c_g{g}"] = float(cm[t, g])
            stats[f"sim_c_g{g}_se"] = float(cs[t, g])
        for i, al in enumerate(alphas):
            rows.append(dict(alpha=float(al), step=t, sim_mean=float(m[t, i]),
                             sim_se=float(s[t, i]), sim_mean_raw=float(mr[t, i]),
                             sim_se_raw=float(sr[t, i]), **stats))
    return pd.DataFrame(rows)


def compare_steps(alpha: float | Sequence[float], *, steps: int = STEPS_EXAMPLE["steps"],
                  sigma: str = default("sigma"), target: str = default("target"),
                  alpha0: float = default("alpha0"),
                  eta: float | Sequence[float] = default("eta"), lam: float = default("lam"),
                  beta: float = default("beta"), delta: float = default("delta"),
                  readout: str = "constant", d: int = default("d"),
                  seeds: int = default("seeds"), seed: int = 0, n_test: int = 10_000,
                  n_jobs: int = 1, progress: bool | None = None) -> pd.DataFrame:
    """Both theories of ``steps`` giant steps, the network theory of the groups (THEORY.md §15,
    ``model="network"``) and their sRF surrogate (§12, ``model="srf"``), against the Monte Carlo
    of the trained network, after every step ``t = 0..steps``, at every ``alpha``.

    Parameters are those of ``asymptotics.risk(alpha, steps=steps, ...)`` with the
    same defaults; ``eta`` is eta_tilde, one number or one per step; ``readout`` is
    ``"constant"`` or ``"pm1"`` (``"hypercube"``: the same as ``"pm1"``); ``d``, ``seeds``,
    ``seed``, ``n_test`` (fresh noiseless test inputs) and ``n_jobs`` set the simulation.

    Returns one row per ``(alpha, step)``: for each model ``m`` in ``network, srf``:
    ``theory_<m>`` (``p -> infinity``), ``theory_<m>_p`` (at the simulated width ``p = beta d``)
    with their ``*_status`` (step 0, random features, is the same number in both); ``sim_mean``,
    ``sim_se`` (the test error with the control variate ``test_error - target_power + E g^2``,
    the estimator of ``validation/reports/STEPS.md``), ``sim_mean_raw``, ``sim_se_raw`` (the raw
    test error); ``z_<m> = (sim_mean - theory_<m>) / sim_se``, ``z_<m>_p`` (against
    ``theory_<m>_p``), ``rel_gap_<m> = (theory_<m> - sim_mean) / sim_mean``; the mean overlaps
    ``|<w_i, theta_j>| / |w_i|`` over the neurons, theory ``overlap_<j>`` (d -> infinity: 0 for
    a direction not learned) and simulation ``sim_overlap_<j>`` (``_se``; about ``sqrt(2/(pi
    d))`` at initialisation); the readout groups' mean projections on ``theta_j`` and bulk
    variances, theory ``a_g<g>_j<j>``, ``c_g<g>`` and simulation ``sim_a_g<g>_j<j>``,
    ``sim_c_g<g>`` (group 0: readout +, group 1: readout -); and every parameter (``eta`` as
    text, one value per step)."""
    steps = checks.integer("steps", steps, 1)
    alphas = sorted({checks.positive("alpha", a) for a in np.atleast_1d(alpha).tolist()})
    if not alphas:
        raise ValueError("alpha must hold at least one sample ratio > 0, got none")
    name = readout_name(readout)
    sim_readout = "pm1" if name == "pm1" else "constant"
    etas = _etas(eta, steps)
    for par, value in (("alpha0", alpha0), ("beta", beta)):
        checks.real(par, value, 0.0, lo_open=True)
    lam = checks.real("lam", lam, 0.0)
    delta = checks.real("delta", delta, 0.0)
    d = checks.integer("d", d, 8)
    seeds = checks.integer("seeds", seeds, 1)
    seed = checks.integer("seed", seed, 0)
    n_test = checks.integer("n_test", n_test, 1)
    n_jobs = checks.integer("n_jobs", n_jobs, 1)
    if not isinstance(sigma, str):
        raise TypeError(f"sigma must be text (a name or an expression in z) for the simulation, "
                        f"got {sigma!r}")
    _check_memory(d, float(beta), n_jobs)
    sim_target = simulator_target(target)
    theory = _theory_rows(alphas, steps=steps, sigma=sigma, target=target, alpha0=alpha0,
                          eta=etas, lam=lam, beta=beta, delta=delta, readout=name, d=d,
                          progress=progress)
    sims = _simulation_rows(alphas, steps=steps, sigma=sigma, target=sim_target, alpha0=alpha0,
                            eta=etas, lam=lam, beta=beta, delta=delta, readout=sim_readout, d=d,
                            seeds=seeds, seed=seed, n_test=n_test, n_jobs=n_jobs,
                            progress=progress)
    df = theory.merge(sims, on=["alpha", "step"], how="left", validate="one_to_one")
    for m in THEORY_MODELS:
        df[f"z_{m}"] = (df["sim_mean"] - df[f"theory_{m}"]) / df["sim_se"]
        df[f"z_{m}_p"] = (df["sim_mean"] - df[f"theory_{m}_p"]) / df["sim_se"]
        df[f"rel_gap_{m}"] = (df[f"theory_{m}"] - df["sim_mean"]) / df["sim_mean"]
    params = dict(simulated=SIMULATED, steps=steps, sigma=sigma,
                  target=target, readout=name, alpha0=float(alpha0),
                  eta=",".join(f"{e:g}" for e in etas), lam=lam, beta=float(beta), delta=delta,
                  d=d, p=int(round(beta * d)), seeds=seeds, seed=seed, n_test=n_test)
    lead = LEAD
    for k, v in params.items():
        if k not in df:
            df[k] = v
    rest = [c for c in df.columns if c not in lead]
    return df[lead + rest].sort_values(["alpha", "step"], ignore_index=True)


def _check_memory(d: int, beta: float, n_jobs: int) -> None:
    """Refuse, before any work, a simulation whose weights (W0, W1, the step: p x d each) and
    p x p Gram with its Cholesky copy cannot fit in the machine's memory (the parts that must
    fit whole, as in ``validation.protocol.simulator.check_memory``; the samples stream)."""
    p = max(1, round(beta * d))
    need = 8.0 * (3.0 * p * d + 2.0 * p * p) * n_jobs
    try:
        have = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return
    if need > 0.9 * have:
        raise ValueError(f"d = {d} (p = {p}) needs about {need / 2**30:.3g} GiB for the weights "
                         f"and the Gram (x{n_jobs} workers), more than the machine's "
                         f"{have / 2**30:.3g} GiB; lower d, beta or n_jobs")


# ------------------------------------------------------------------------------------------------
# command line

SUMMARY = ["alpha", "step", "theory_network", "theory_srf", "sim_mean", "sim_se",
           "z_network", "z_srf"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``python -m validation steps``."""
    from asymptotics.cli.common import add_quiet, integer, parse_grid, real, real_list
    from asymptotics.core.parameters import help_text

    p.add_argument("--alpha", type=lambda s: parse_grid(s, "alpha"), default=[0.5, 2.0, 4.0],
                   help="ridge sample ratios n/d: a list or START:STOP:NUM (default 0.5,2,4)")
    p.add_argument("--steps", type=integer("--steps", 1, 8), default=STEPS_EXAMPLE["steps"],
                   help=f"number of giant steps T, 1..8 (default {STEPS_EXAMPLE['steps']})")
    p.add_argument("--sigma", default=default("sigma"),
                   help=f"activation: a name or an expression in z (default {default('sigma')})")
    p.add_argument("--target", default=default("target"),
                   help="target: a name, an expression in z, or in z1..zk for a multi-index "
                        f"target, e.g. 'z1 + z1*z2' (default {default('target')})")
    p.add_argument("--alpha0", type=real("--alpha0", 0.0, strict_lo=True),
                   default=default("alpha0"), help=help_text("alpha0"))
    p.add_argument("--eta", type=real_list("--eta", 0.0), default=[default("eta")],
                   help="eta_tilde: one value, or one per step, e.g. 2,8,16 (default 1)")
    p.add_argument("--lam", type=real("--lam", 0.0), default=default("lam"),
                   help=help_text("lam"))
    p.add_argument("--beta", type=real("--beta", 0.0, strict_lo=True), default=default("beta"),
                   help=help_text("beta"))
    p.add_argument("--delta", type=real("--delta", 0.0), default=default("delta"),
                   help=help_text("delta"))
    p.add_argument("--readout", choices=READOUTS, default="constant",
                   help="the frozen second layer: constant 1/sqrt(p), or pm1: +-1/sqrt(p) on two "
                        "halves (hypercube: the same as pm1; default constant)")
    p.add_argument("--d", type=integer("--d", 8), default=default("d"),
                   help=f"input dimension of the simulation, >= 8 (default {default('d')})")
    p.add_argument("--seeds", type=integer("--seeds", 1), default=default("seeds"),
                   help=f"repetitions (default {default('seeds')})")
    p.add_argument("--seed", type=integer("--seed", 0), default=0,
                   help="root seed: repetition i is child i of SeedSequence(seed) (default 0)")
    p.add_argument("--n-test", type=integer("--n-test", 1), default=10_000,
                   help="fresh noiseless test inputs (default 10000)")
    p.add_argument("--n-jobs", type=integer("--n-jobs", 1), default=1,
                   help="worker processes (results do not depend on it; default 1)")
    p.add_argument("--out", help="write every column to this CSV")
    add_quiet(p)


def add_subparser(subparsers) -> argparse.ArgumentParser:
    """Register ``steps`` on the subparsers of ``python -m validation``."""
    p = subparsers.add_parser(
        "steps", help="several giant steps: the theory against the trained network",
        description="Both K-group theories of several giant steps, the network theory of "
                    "the groups (docs/THEORY.md §15) and their sRF surrogate (§12), against the "
                    "Monte Carlo of the trained network after each step "
                    "t = 0..T (0: random features), at every ridge alpha. Prints "
                    f"{','.join(SUMMARY)} and the mean overlaps (CSV); --out writes every column.")
    add_arguments(p)
    p.set_defaults(func=run_cli)
    return p


def run_cli(args: argparse.Namespace) -> int:
    """Run, print the summary CSV; bad input: one line on stderr, exit status 2."""
    from asymptotics.cli.common import apply_quiet, check_writable, fail

    quiet = apply_quiet(args)
    try:
        check_writable(args.out, "--out", suffixes=(".csv",))
        df = compare_steps(args.alpha, steps=args.steps, sigma=args.sigma, target=args.target,
                           alpha0=args.alpha0, eta=args.eta, lam=args.lam, beta=args.beta,
                           delta=args.delta, readout=args.readout, d=args.d, seeds=args.seeds,
                           seed=args.seed, n_test=args.n_test, n_jobs=args.n_jobs,
                           progress=not quiet)
    except (ValueError, TypeError, FloatingPointError, MemoryError) as exc:
        return fail(str(exc))
    if args.out:
        df.to_csv(args.out, index=False, float_format="%.10g")
    cols = SUMMARY + [c for c in df.columns if c.startswith(("overlap_", "sim_overlap_"))
                      and not c.endswith("_se")]
    sys.stdout.write(df[cols].to_csv(index=False, float_format="%.6g"))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    from asymptotics.cli.common import Parser
    from asymptotics.core.meta import one_line_warnings

    parser = Parser(prog="python -m validation.experiments.steps_compare",
                    description="Several giant steps: the theory against the trained network "
                                "(the same as python -m validation steps).")
    add_arguments(parser)
    args = parser.parse_args(argv)
    one_line_warnings()
    return run_cli(args)


if __name__ == "__main__":
    sys.exit(main())
