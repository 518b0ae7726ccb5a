"""``python -m figures all | NAME ... | --list`` renders the papers' figures into figures/out/."""

from __future__ import annotations

import importlib
import os
import time
from pathlib import Path

from validation.paths import in_checkout

# name -> (module, function); a module's make(outdir, quick, refresh) returns the written paths
FIGURES = {
    "feature_learning": ("figures.fig_feature_learning", "make"),
    "batch_size": ("figures.fig_batch_size", "make"),
    "bounds": ("figures.fig_bounds", "make"),
    "double_descent": ("figures.fig_double_descent", "make"),
    "spectrum": ("figures.fig_spectrum", "make"),
    "spectra_theory": ("figures.fig_spectra_theory", "make"),
    "staircase": ("figures.fig_beyond_one_step", "staircase"),
    "outliers": ("figures.fig_beyond_one_step", "outliers"),
    "phase_diagram": ("figures.fig_phase_diagram", "make"),
    "readouts": ("figures.fig_readouts", "make"),
    "steps": ("figures.fig_steps", "make"),
}
# figures/out in a source checkout (the README shows them), else ./figures-out in the cwd
_PACKAGE_OUT = Path(__file__).resolve().parent / "out"
OUT_DIR = _PACKAGE_OUT if in_checkout(_PACKAGE_OUT.parent) else Path("figures-out")


def _load(name: str):
    module, func = FIGURES[name]
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise
        return None, None
    return mod, getattr(mod, func, None)


def available() -> dict[str, str]:
    """Registered figures whose code is present, with their one-line descriptions."""
    out = {}
    for name in FIGURES:
        mod, fn = _load(name)
        if fn is not None:
            out[name] = getattr(fn, "__doc__", None) if mod.__name__.endswith("beyond_one_step") \
                else getattr(mod, "DESCRIPTION", "")
            out[name] = (out[name] or "").strip().splitlines()[0] if out[name] else ""
    return out


def build_parser():
    from asymptotics.cli.common import Parser, add_quiet

    p = Parser(prog="python -m figures", description="Render the papers' figures (PNG + PDF).")
    p.add_argument("names", nargs="*", help="figure names, or 'all' (see --list)")
    p.add_argument("--list", action="store_true", help="list the figures and exit")
    p.add_argument("--outdir", type=Path, default=OUT_DIR,
                   help=f"directory of the figures (default: {OUT_DIR})")
    p.add_argument("--quick", action="store_true",
                   help="small d and few seeds (smoke test; not for publication)")
    p.add_argument("--refresh", action="store_true", help="recompute cached simulation data")
    add_quiet(p)
    return p


def _backend() -> None:
    """A command line renders off-screen unless the user chose a backend: matplotlib.use in this
    process (the environment of child processes is left as it was)."""
    if not os.environ.get("MPLBACKEND"):
        import matplotlib

        matplotlib.use("Agg")


def main(argv: list[str] | None = None) -> int:
    from asymptotics.cli.common import apply_quiet, check_writable, fail
    from asymptotics.core.progress import Progress

    _backend()
    p = build_parser()
    args = p.parse_args(argv)
    quiet = apply_quiet(args)
    figs = available()
    if args.list or not args.names:
        for name, text in figs.items():
            print(f"{name:18s} {text}")
        return 0
    names = list(figs) if args.names == ["all"] else args.names
    unknown = [n for n in names if n not in figs]
    if unknown:
        p.error(f"unknown figure {', '.join(unknown)}; choose from all, {', '.join(figs)}")
    outdir = args.outdir / "quick" if args.quick and args.outdir == OUT_DIR else args.outdir
    try:
        check_writable(outdir, "--outdir", directory=True)
    except ValueError as exc:
        return fail(str(exc))
    # one report per figure (a figure's own simulations and theory report theirs); the paths
    # written are the command's output: on stderr, also with --quiet
    with Progress(len(names), "figures", unit="figures", enabled=not quiet) as bar:
        for name in bar.iter(names):
            t0 = time.perf_counter()
            _, fn = _load(name)
            paths = fn(outdir, quick=args.quick, refresh=args.refresh)
            bar.write(f"{name}: {', '.join(str(x) for x in paths)} "
                      f"({time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
