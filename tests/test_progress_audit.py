"""Progress where work is long: every long-running command accepts ``--quiet``; run with its
output not a terminal, a cheap representative prints one-line progress reports on stderr
(``desc: done/total unit (x%), N s elapsed``) and none with ``--quiet``
(:mod:`asymptotics.core.progress`, docs/guide.md "Progress and quiet output")."""

from __future__ import annotations

import importlib
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: every command that can run longer than a few seconds: (module with build_parser(), the
#: subcommand path, quick arguments for a run in a subprocess or None when too costly to run here)
LONG_COMMANDS = [
    ("asymptotics.cli.curve", ["curve"], ["-m", "asymptotics", "curve", "--alpha", "0.5,1,2",
                                          "--lam", "0"]),
    ("asymptotics.cli.curve", ["steps"], None),
    ("validation.cli", ["compare"], None),
    ("validation.cli", ["multistep"], ["-m", "validation", "multistep", "--d", "16",
                                       "--seeds", "2", "--steps", "1"]),
    ("validation.cli", ["steps"], ["-m", "validation", "steps", "--d", "16", "--seeds", "2",
                                   "--steps", "1", "--alpha", "1", "--n-test", "200"]),
    ("validation.cli", ["sweep"], ["-m", "validation", "sweep", "--kind", "theory",
                                   "--grid", "alpha=0.5,1", "--grid", "lam=0.1,1",
                                   "--n-jobs", "1"]),
    ("validation.cli", ["spectrum"], ["-m", "validation", "spectrum", "--steps", "1",
                                      "--d", "40"]),
    ("validation.spectrum.cli", ["spectrum"], None),
    ("validation.matrix.cli", ["run"], None),
    ("validation.matrix.cli", ["report"], None),
    ("validation.spiked.cli", ["run"], None),
    ("validation.spiked.cli", ["reference"], None),
    ("validation.spiked.cli", ["report"], None),
    ("validation.spiked.cli", ["readouts"], None),
    ("validation.matrix.finite_width", [], None),
    ("validation.multistep.theory", [], None),
    ("validation.experiments.polynomial_spikes.report", [], None),
    ("validation.experiments.spectra_theory", [], None),
    ("figures.__main__", [], None),
    ("figures.multistep_report", [], None),
    ("figures.spectra_report", [], None),
]

#: a one-line progress report of :class:`asymptotics.core.progress.Progress`, or the first and
#: last lines of a campaign (:func:`validation.campaign.run_campaign`)
PROGRESS_LINE = re.compile(r"^.+: \d+/\d+ \S+ \(\d+%\), \d+ s elapsed|tasks stored, \d+ to run")


def _subparser(parser, path: list[str]):
    for name in path:
        action = next(a for a in parser._actions if a.choices and name in a.choices)
        parser = action.choices[name]
    return parser


@pytest.mark.parametrize("module,path", [(m, p) for m, p, _ in LONG_COMMANDS],
                         ids=[" ".join([m, *p]) for m, p, _ in LONG_COMMANDS])
def test_every_long_command_documents_quiet(module, path):
    parser = _subparser(importlib.import_module(module).build_parser(), path)
    assert "--quiet" in parser.format_help()
    assert any("--quiet" in a.option_strings and a.dest == "quiet" for a in parser._actions)


def _run(argv: list[str]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "GIANTSTEP_QUIET"}
    env.update(PYTHONPATH=str(ROOT), MPLBACKEND="Agg", GIANTSTEP_PROGRESS_INTERVAL="0")
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=120)


RUNS = [argv for _, _, argv in LONG_COMMANDS if argv is not None]


@pytest.mark.parametrize("argv", RUNS, ids=[" ".join(a[1:4]) for a in RUNS])
def test_progress_lines_on_stderr_unless_quiet(argv):
    loud = _run(argv)
    assert loud.returncode == 0, loud.stderr[-2000:]
    lines = [ln for ln in loud.stderr.splitlines() if PROGRESS_LINE.search(ln)]
    assert lines, loud.stderr[-2000:]
    assert not any(PROGRESS_LINE.search(ln) for ln in loud.stdout.splitlines())
    quiet = _run([*argv, "--quiet"])
    assert quiet.returncode == 0, quiet.stderr[-2000:]
    assert bool(quiet.stdout) == bool(loud.stdout)  # the output itself is still there
    assert not [ln for ln in quiet.stderr.splitlines() if PROGRESS_LINE.search(ln)], quiet.stderr


def test_heartbeat_and_the_quiet_switch():
    import time

    from asymptotics.core.progress import Progress, set_quiet

    stream = io.StringIO()
    with Progress(2, "slow", unit="stages", interval=1.0, stream=stream) as bar:
        time.sleep(2.5)  # one long unit, no update: the heartbeat still reports
        bar.update(2)
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("slow: 0/2 stages (0%)") and PROGRESS_LINE.search(lines[0])
    assert lines[-1].startswith("slow: 2/2 stages (100%)")
    set_quiet(True)  # what --quiet does
    silent = io.StringIO()
    with Progress(2, "slow", interval=0.0, stream=silent) as bar:
        bar.update(2)
    assert silent.getvalue() == ""
