"""Wall time of the commands in the guide's timing table (docs/guide.md, "How long things take").

Each command runs as a fresh process from the repository root, on the kernel cache the process
would find (``NUMBA_CACHE_DIR`` as set, else numba's default: warm after the first run), with its
outputs in a temporary directory; ``--repeat`` runs per command (default 3), every run printed.
The machine's load average is printed beside, since 2 shared cores make the seconds move.
``--save FILE`` writes the table (``benchmarks/data/command_times.txt`` is the committed run
that the guide quotes, checked by ``tests/test_claims_timings.py``).

    python benchmarks/command_times.py --save benchmarks/data/command_times.txt
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GRID = ("import numpy as np, time, asymptotics as A; A.risk(1.0); t = time.perf_counter(); "
        "A.risk_grid(alpha=np.linspace(0.2, 5, 50), lam=np.logspace(-3, 1, 50)); "
        "print(time.perf_counter() - t)")
#: (label as the guide's table names it, argv; {out} is the temporary directory)
COMMANDS = (
    ("asymptotics curve", ["-m", "asymptotics", "curve", "--quiet", "--out", "{out}/c.csv"]),
    ("asymptotics hermite", ["-m", "asymptotics", "hermite", "z1 + z1*z2 + z1*z2*z3"]),
    ("validation spectrum --d 1000", ["-m", "validation", "spectrum", "--d", "1000", "--quiet"]),
    ("validation sweep --kind theory (50 x 50)",
     ["-m", "validation", "sweep", "--kind", "theory", "--grid", "alpha0=0.5:4:50",
      "--store", "{out}/s.sqlite", "--quiet"]),
    ("figures all --quick", ["-m", "figures", "all", "--quick", "--outdir", "{out}/fig",
                             "--quiet"]),
)


def _run(argv: list[str], out: str) -> float:
    args = [sys.executable] + [a.format(out=out) for a in argv]
    t = time.perf_counter()
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "MPLBACKEND": "Agg"})
    seconds = time.perf_counter() - t
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} exited {done.returncode}: {done.stderr.strip()}")
    return seconds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--save", default=None)
    args = ap.parse_args()
    lines = [f"# python benchmarks/command_times.py --repeat {args.repeat} "
             f"({datetime.now(UTC):%Y-%m-%d %H:%M} UTC; wall seconds; 2 cores)",
             "command | runs [s] | min [s] | max [s] | load average (1 min) before each run"]
    for label, argv in COMMANDS:
        runs, loads = [], []
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory() as out:
                loads.append(os.getloadavg()[0])
                runs.append(_run(argv, out))
        lines.append(f"{label} | {', '.join(f'{s:.2f}' for s in runs)} | {min(runs):.2f} | "
                     f"{max(runs):.2f} | {', '.join(f'{v:.1f}' for v in loads)}")
        print(lines[-1], flush=True)
    inner = [float(subprocess.run([sys.executable, "-c", GRID], cwd=ROOT, capture_output=True,
                                  text=True, check=True).stdout) for _ in range(args.repeat)]
    lines.append(f"risk_grid 50 x 50 (in process, after a first point) | "
                 f"{', '.join(f'{s:.3f}' for s in inner)} | {min(inner):.3f} | {max(inner):.3f} |")
    print(lines[-1])
    if args.save:
        Path(args.save).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
