"""``python -m asymptotics steps``: the risk of the ridge readout after each of T giant steps
with fresh batches (docs/THEORY.md §12), along alpha, for a multi-index target: the network theory
of the groups (``--model network``, the default of the parameter table, §15) or their sRF
surrogate (``--model srf``), the numbers of ``asymptotics.risk_by_step``."""

from __future__ import annotations

import argparse
import math
import sys

from asymptotics.cli.common import (
    PLOT_SUFFIXES,
    add_quiet,
    apply_quiet,
    check_writable,
    integer,
    parse_grid,
    real,
    real_list,
    write_output,
)
from asymptotics.core.parameters import STEPS_EXAMPLE, default

#: what each model of the table is (its first line, the figure's title)
MODEL_TEXT = {"network": "the network theory of the groups (docs/THEORY.md §15)",
              "srf": "the sRF surrogate of the groups (docs/THEORY.md §12)"}


def _alpha0(text: str) -> float:
    """argparse type of --alpha0: a number > 0 or inf."""
    if text.strip().lower() in ("inf", "infinity"):
        return math.inf
    return real("--alpha0", 0.0, strict_lo=True)(text)


def add_subparser(subparsers) -> argparse.ArgumentParser:
    """Register ``steps`` on an argparse subparsers object."""
    p = subparsers.add_parser(
        "steps", help="risk after each of T giant steps (fresh batches; multi-index targets)",
        description="Risk of ridge on the readout after t = 0..T giant steps, each on a fresh "
                    "batch of alpha0 d samples with learning rate eta_tilde_t p (docs/THEORY.md "
                    "§12: the K-group model of the steps; t = 0 is random features), by the "
                    "network theory of the groups (--model network, the default, as "
                    "asymptotics.risk(steps=T), §15) or their sRF surrogate (--model srf).")
    ex = STEPS_EXAMPLE  # the defaults of risk_by_step too (the parameter table)
    p.add_argument("--steps", type=integer("--steps", 1, 8), default=ex["steps"],
                   help=f"number of giant steps T (1..8, default {ex['steps']})")
    p.add_argument("--target", default=ex["target"],
                   help=f"target g(z1..zk), an expression (default '{ex['target']}')")
    p.add_argument("--sigma", default=ex["sigma"], help=f"activation (default '{ex['sigma']}')")
    p.add_argument("--alpha0", type=_alpha0, default=ex["alpha0"],
                   help="batch size of every step over d (inf: the large-batch limit; "
                        f"default {ex['alpha0']:g})")
    eta = ",".join(f"{e:g}" for e in ex["eta"])
    p.add_argument("--eta", type=real_list("--eta", 0.0), default=None,
                   help=f"eta_tilde: one value, or one per step (default {eta}, the last "
                        "repeated)")
    p.add_argument("--readout", choices=("constant", "pm1"), default=ex["readout"],
                   help="the frozen second layer: constant 1/sqrt(p), or +-1/sqrt(p) on two "
                         f"halves (default {ex['readout']})")
    p.add_argument("--model", choices=("network", "srf"), default=default("model"),
                   help="network: the trained network's theory of the groups (THEORY.md §15); "
                        "srf: their spiked-random-features surrogate (§12); default "
                        f"{default('model')}, as asymptotics.risk")
    p.add_argument("--batch", choices=("fresh", "reused"), default="fresh",
                   help="fresh: a new batch every step (default); reused: every step on the "
                        "same batch (docs/THEORY.md §14; --steps <= 2, --delta 0, "
                        "--model srf)")
    p.add_argument("--alpha", type=lambda s: parse_grid(s, "alpha"),
                   default=parse_grid(ex["alpha"]),
                   help=f"ridge sample ratios n/d: a list or START:STOP:NUM (default "
                        f"{ex['alpha']})")
    p.add_argument("--lam", type=real("--lam", 0.0), default=ex["lam"],
                   help=f"ridge penalty, sum convention (default {ex['lam']:g})")
    p.add_argument("--beta", type=real("--beta", 0.0, strict_lo=True), default=ex["beta"],
                   help=f"width ratio p/d (default {ex['beta']:g})")
    p.add_argument("--delta", type=real("--delta", 0.0), default=ex["delta"],
                   help=f"label noise variance (default {ex['delta']:g})")
    p.add_argument("--out", help="write the full CSV to this file")
    p.add_argument("--plot", help="write a figure (.png, .svg or .pdf): risk vs alpha per step")
    add_quiet(p)
    p.set_defaults(func=run_cli)
    return p


def _plot(df, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from asymptotics.cli.common import save_figure

    fig, ax = plt.subplots(figsize=(5.5, 3.8), constrained_layout=True)
    for t, g in df.groupby("step"):
        ax.plot(g["alpha"], g["risk"], marker="o", ms=3,
                label="random features (t = 0)" if t == 0 else f"after step {t}")
    r = df.iloc[0]
    ax.set_xlabel(r"$\alpha = n/d$")
    ax.set_ylabel("test error")
    ax.set_title(f"{MODEL_TEXT[r['model']]}\n"
                 rf"$g$={r['target']}, $\sigma$={r['sigma']}, readout {r['readout']}, "
                 rf"{r.get('batch', 'fresh')} batch, "
                 rf"$\alpha_0$={r['alpha0']:g}, $\tilde\eta$=({r['eta']})", fontsize=8)
    ax.legend(frameon=False, fontsize=8)
    ax.grid(alpha=0.3)
    save_figure(fig, path, dpi=150)
    plt.close(fig)


def run_cli(args: argparse.Namespace) -> int:
    """Print the table (alpha x step); bad input: one line on stderr, exit status 2."""
    from asymptotics.api.by_step import risk_by_step

    check_writable(args.out, "--out")
    check_writable(args.plot, "--plot", suffixes=PLOT_SUFFIXES)
    if args.eta is not None and len(args.eta) not in (1, args.steps):
        raise ValueError(f"--eta needs one value per step (--steps {args.steps}) or a single "
                         f"value, got {len(args.eta)} values")
    eta = None if args.eta is None else args.eta[0] if len(args.eta) == 1 else tuple(args.eta)
    df = risk_by_step(args.alpha, steps=args.steps, sigma=args.sigma, target=args.target,
                      alpha0=args.alpha0, eta=eta, lam=args.lam, beta=args.beta,
                      delta=args.delta, readout=args.readout, progress=not apply_quiet(args),
                      batch=args.batch, model=args.model)
    table = df.pivot(index="alpha", columns="step", values="risk")
    print(f"model {args.model}: {MODEL_TEXT[args.model]}")
    print("alpha  " + "  ".join("RF(t=0)" if t == 0 else f"step {t:<3d}" for t in table.columns))
    for a, row in table.iterrows():
        print(f"{a:<6.3g} " + "  ".join("   nan  " if math.isnan(v) else f"{v:8.5f}"
                                        for v in row))
    if args.out:
        write_output(args.out, df.to_csv(index=False))
    if args.plot:
        _plot(df, args.plot)
    return 0


def main(argv=None) -> int:  # pragma: no cover - thin wrapper
    """Stand-alone entry: ``python -m asymptotics.cli.steps [options]``."""
    from asymptotics.cli.common import Parser, fail

    parser = Parser(prog="python -m asymptotics.cli.steps")
    sub = parser.add_subparsers(dest="command", required=True)
    add_subparser(sub)
    args = parser.parse_args(["steps", *(argv if argv is not None else sys.argv[1:])])
    try:
        return run_cli(args)
    except (ValueError, TypeError, OSError) as exc:
        return fail(str(exc))


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
