"""SIGKILL of a running ``sweep`` with a process pool: no process of the run outlives its parent by
more than 5 s, and resuming the store gives exactly the uninterrupted result.

Only the parent is killed (not its process group), as a crash or the OOM killer would do; the
run's processes are found by their session (the command starts in a new session)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from validation import sweep as S

GRID = {"alpha": [0.5, 1.0, 1.5, 2.0, 2.5, 3.0]}
FIXED = dict(sigma="tanh", target="tanh", alpha0=2.0, eta=1.0, lam=0.01, d=100, seed=0)
SEEDS = 2
SURVIVAL_LIMIT = 5.0


def session_members(sid: int) -> list[int]:
    """Live (non-zombie) processes whose session id is ``sid``."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] != "Z" and int(fields[3]) == sid:
            out.append(int(entry))
    return out


@pytest.fixture(scope="module")
def reference() -> pd.DataFrame:
    return S.sweep("srf", dict(GRID), seeds=SEEDS, n_jobs=1, progress=False, **FIXED)


def kill_trial(store: Path, delay: float) -> tuple[float, int]:
    """Start the sweep with two workers, SIGKILL the parent after ``delay`` s; returns the
    seconds until the last process of the run was gone and how many were alive at the kill."""
    cmd = [sys.executable, "-m", "validation", "sweep", "--kind", "srf", "--grid",
           "alpha=" + ",".join(str(a) for a in GRID["alpha"]), "--d", str(FIXED["d"]),
           "--seeds", str(SEEDS), "--n-jobs", "2", "--store", str(store), "--quiet"]
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", NUMBA_NUM_THREADS="1")
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, env=env)
    time.sleep(delay)
    alive_at_kill = len(session_members(proc.pid))
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    t0 = time.monotonic()
    while session_members(proc.pid) and time.monotonic() - t0 < 30:
        time.sleep(0.05)
    survivors = session_members(proc.pid)
    for pid in survivors:  # clean up after a failure, then report it
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    waited = time.monotonic() - t0 if not survivors else float("inf")
    return waited, alive_at_kill


def run_trials(tmp_path: Path, reference: pd.DataFrame, n: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    waits = []
    for i in range(n):
        store = tmp_path / f"store{i}.sqlite"
        waited, _ = kill_trial(store, rng.uniform(0.5, 6.0))
        waits.append(waited)
        assert waited <= SURVIVAL_LIMIT, f"trial {i}: processes survived the parent {waited} s"
        resumed = S.sweep("srf", dict(GRID), store=store, seeds=SEEDS, n_jobs=1, progress=False,
                          **FIXED)
        cols = [c for c in reference.columns if c not in ("seconds", "cpu_seconds", "values")]
        pd.testing.assert_frame_equal(resumed[cols].reset_index(drop=True),
                                      reference[cols].reset_index(drop=True), check_exact=True)
    return waits


def test_sigkill_of_a_pooled_sweep_leaves_no_orphans_and_resumes_exactly(tmp_path, reference):
    waits = run_trials(tmp_path, reference, 2, seed=1)
    print(f"processes gone {max(waits):.2f} s after the parent (2 trials)")


@pytest.mark.slow
def test_sigkill_ten_random_moments(tmp_path, reference):
    waits = run_trials(tmp_path, reference, 10, seed=2)
    print("seconds until the last process of the run was gone: "
          + ", ".join(f"{w:.2f}" for w in waits))


def test_sigkill_of_the_matrix_runner_leaves_no_orphans(tmp_path):
    """The spawn pool of ``validation.matrix run`` ends with its parent too."""
    cmd = [sys.executable, "-m", "validation.matrix", "run", "--store", str(tmp_path / "m.csv"),
           "--d", "1500", "--seeds", "8", "--max-seeds", "8", "--target-se", "0", "--models",
           "srf", "--no-scaling", "--n-jobs", "2", "--only",
           "tanh/tanh beta=0.5 alpha0=0.5 eta=1"]
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", NUMBA_NUM_THREADS="1")
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, env=env)
    t_end = time.monotonic() + 30
    while len(session_members(proc.pid)) < 3 and time.monotonic() < t_end:
        time.sleep(0.1)  # wait until the workers run
    time.sleep(1.0)
    assert proc.poll() is None, "the run ended before the kill"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    t0 = time.monotonic()
    while session_members(proc.pid) and time.monotonic() - t0 < 30:
        time.sleep(0.05)
    survivors = session_members(proc.pid)
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)
    assert not survivors and time.monotonic() - t0 <= SURVIVAL_LIMIT
