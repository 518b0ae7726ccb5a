"""BIAS_SLOPES.md: the measured finite-d bias (c/d) of the quantities that Monte Carlo tests
compare with a d -> infinity limit, and the allowance each test takes from it.

``python -m validation.experiments.bias_slopes``: the report from the committed runs (printed;
``--out DIR`` writes ``DIR/BIAS_SLOPES.md``); ``--simulate`` first runs what the store lacks."""

from __future__ import annotations

import argparse
import pathlib

import pandas as pd

from . import (
    BY_NAME,
    DS,
    REGENERATE,
    SETTINGS,
    SLOPE_SE,
    Slope,
    fit_slopes,
    load_runs,
    quantities,
    simulate,
)

#: where the tests use a slope: (test, setting, quantities, d of the test)
USES = (
    ("test_population_device.py::test_device_bulk_against_its_draws_and_the_limit",
     ("relu-relu-0.5-3", "relu-tanh-2-1", "tanh-sin-20-1"), ("c", "bulk"), 400),
    ("test_population_device.py::test_resolvent_against_sampled_covariances",
     ("relu-relu-2-3", "erf-sin-0.5-3"), "resolvent", 600),
    ("test_population_quadrature.py::test_bulk_and_channel_against_sampled_first_batches",
     ("relu-relu-2-3", "erf-sin-0.5-3"), ("bulk", "tch"), 700),
    ("test_spiked_theory.py::test_linear_sigma_against_linear_ridge", ("linear-3groups",), None,
     400),
    ("test_spiked_theory.py::test_finite_width_against_linear_ridge", ("finite-width-2groups",),
     None, 200),
    ("test_spiked_theory.py::test_deterministic_resolvent_against_exact_p_by_p",
     ("blocks-K2r2k1-b1", "blocks-K3r2k2-b0.7", "blocks-K3r1k2-b1.5"), None, 300),
    ("test_spectrum_theory.py::test_srf_against_monte_carlo", ("srf-outliers-tanh",), None, 600),
    ("test_marchenko_pastur.py::test_empirical_measure_matches_deterministic_moments",
     ("mp-atoms-0.5",), None, 600),
    ("test_channels.py::test_from_weights_recovers_the_srf_spike_and_risk", ("srf-weights-relu",),
     None, 400),
    ("test_channels.py::test_step_covariances_match_the_sampled_first_layer",
     ("network-step-relu",), None, 600),
    ("test_channels.py::test_population_bulk_is_generalised_marchenko_pastur",
     ("gmp-bulk-two-variances",), None, 600),
)


#: the quantities of the resolvent test: the trace at every zeta and the forms
RESOLVENT = tuple(q for q in quantities(BY_NAME["relu-relu-2-3"])
                  if q not in ("c", "bulk", "tch"))


def _g(x: float, nd: int = 4) -> str:
    return f"{x:.{nd}g}"


def table(slopes: list[Slope]) -> pd.DataFrame:
    """One row per (setting, quantity): the limit, c ± s.e., the relative bias at d = 400,
    chi2/dof of the 1/d law and the intercept's z against the limit."""
    rows = []
    for s in slopes:
        rows.append({"setting": s.setting, "quantity": s.quantity, "limit": _g(s.limit, 5),
                     "c": f"{s.c:+.3g} ± {s.se:.2g}",
                     "bias at d = 400": f"{s.c / 400 / abs(s.limit):+.2%}" if s.limit else
                     f"{s.c / 400:+.2g}",
                     "chi2/dof": f"{s.chi2:.1f}/{s.dof}", "intercept z": f"{s.z_limit:+.1f}"})
    return pd.DataFrame(rows)


def uses(slopes: list[Slope]) -> pd.DataFrame:
    """The allowance (|c| + 3 s.e.)/d at the d of each test that uses it."""
    by = {(s.setting, s.quantity): s for s in slopes}
    rows = []
    for test, names, qs, d in USES:
        for n in names:
            for (sn, q), s in by.items():
                if sn == n and (qs is None or q in (RESOLVENT if qs == "resolvent" else qs)):
                    rel = s.allowance(d) / abs(s.limit) if s.limit else float("nan")
                    rows.append({"test": test.split("::")[1], "setting": n, "quantity": q, "d": d,
                                 "allowance": _g(s.allowance(d), 3),
                                 "relative": f"{rel:.2%}" if rel == rel else "-"})
    return pd.DataFrame(rows)


def markdown(df: pd.DataFrame, command: str = REGENERATE) -> str:
    from validation.campaign.report import Markdown

    every = fit_slopes(df)
    exact = sorted({f"`{s.quantity}`" for s in every if s.se == 0.0})
    slopes = [s for s in every if s.se > 0.0]
    draws = df.groupby(["setting", "d"])["rep"].nunique()
    lo, hi = int(draws.min()), int(draws.max())
    bad = [s for s in slopes if s.dof and s.chi2 / s.dof > 4.0]
    far = [s for s in slopes if abs(s.z_limit) > 4.0]
    md = Markdown("Finite-d bias of the sampled quantities the Monte Carlo tests use")
    md.para("Each quantity of the network theory's population covariance of one step "
            "(docs/DERIVATIONS.md §7) is sampled at d = "
            + ", ".join(str(d) for d in DS)
            + f" ({lo if lo == hi else f'{lo}–{hi}'} independent first batches per d, "
            "theta*.x stratified as the sampled device draws it) and its mean is compared with "
            "its d -> infinity limit: the closed-form trace for `c`, the Gauss rules of the "
            "deterministic measure for `bulk` and `tch`, the deterministic resolvent for the "
            "trace of (C - zeta)^-1 and the forms. The bias mean(d) - limit is fitted as c/d "
            "by weighted least squares (weights 1/s.e.^2 of each d's mean); s.e.(c) is inflated "
            "by sqrt(chi2/dof) where the 1/d law fits worse than the errors. `intercept z`: the "
            "intercept of the free line a + c/d against the limit in its standard errors "
            "(a check of the limit itself). The same for the K-group model with a linear "
            "activation (`linear-3groups`: the exact risk of ridge on its Gaussian features for a "
            "sampled W, d = p, against the theory at p = infinity; `finite-width-2groups`: "
            "against the theory at p = d) and for the block resolvent of the K-group model "
            "against its exact p x p evaluation (`blocks-*`, p = beta d; `quiet.`: without the "
            "spike fields); and for sampled spectra (`srf-outliers-tanh`: the sRF surrogate's "
            "outliers, divided by d, and the spike's overlap with the target against "
            "`asymptotics.spectrum` at the simulated d; `mp-atoms-0.5`: the atoms of "
            "W Pi W^T for rows on the sphere, p = d/2, against Marchenko-Pastur); and for the "
            "semi-empirical measure of sampled first layers (`srf-weights-relu`: sRF weights, "
            "`v.` with v given, `est.` with v estimated, against the sRF spike and theory; "
            "`network-step-relu`: the trained network's (F, G, H) means against the step's "
            "covariances; `gmp-bulk-two-variances`: the relative deviation of five moments of "
            "a sampled Gram matrix with two population variances from the generalised "
            "Marchenko-Pastur moments of the sampled variances, limit 0)."
            + (f" Exact in every draw (to rounding), so left out: {', '.join(exact)} (the "
               "imaginary part of the trace at a real zeta, gamma = v.theta* with v given)."
               if exact else ""))
    md.table(table(slopes))
    md.heading("Allowances of the tests")
    md.para(f"A test at dimension d adds (|c| + {SLOPE_SE:g} s.e.(c))/d to its statistical band "
            "(a Student quantile of its own draws); the tests read these fits from the committed "
            "runs, so a new measurement moves them.")
    md.table(uses(slopes))
    md.heading("Where the 1/d law does not fit")
    if bad or far:
        md.para("chi2/dof > 4 or |intercept z| > 4: the bias is not c/d alone at these d (a "
                "higher order, or a limit off by the intercept). Their s.e.(c) above is "
                "inflated by sqrt(chi2/dof), which widens the allowance accordingly.")
        md.bullets([f"{s.setting} {s.quantity}: chi2/dof = {s.chi2:.1f}/{s.dof}, intercept "
                    f"z = {s.z_limit:+.1f}" for s in dict.fromkeys(bad + far)])
    else:
        md.para("Every quantity: chi2/dof <= 4 and |intercept z| <= 4.")
    md.regenerate(command)
    return md.text()


def build_parser() -> argparse.ArgumentParser:
    from asymptotics.cli.common import add_quiet

    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--simulate", action="store_true",
                    help="run the repetitions the store lacks first (~0.15 core-hours at full "
                         "size)")
    ap.add_argument("--out", default=None, help="directory of the report (default: print only)")
    add_quiet(ap)
    return ap


def main(argv: list[str] | None = None) -> int:
    from asymptotics.cli.common import apply_quiet

    args = build_parser().parse_args(argv)
    apply_quiet(args)
    df = simulate(progress=not args.quiet) if args.simulate else load_runs()
    text = markdown(df)
    if args.out:
        out = pathlib.Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "BIAS_SLOPES.md").write_text(text)
    print(text)
    return 0


__all__ = ["SETTINGS", "main", "markdown"]
