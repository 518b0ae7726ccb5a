"""Every route of the theory reaches compiled speed in the default mode: the signature the cold
start looks up (and queues for the background compiler) for each kernel a route calls from
Python is exactly the one numba compiles and caches for that call (default arguments, array
layouts and read-only flags included), and it survives the queue's JSON. With
tests/test_coldstart_queue.py (queue -> compiler -> the next process loads, on a toy module),
this is what makes the second process on an empty cache compiled on every route."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: the routes (one entry point each); tests/test_coldstart_routes.py and
#: benchmarks/cold_start.py keep the same list
ROUTES = {
    "srf": "A.risk(2.0, model='srf', sigma='tanh', target='tanh', alpha0=2.0, eta=1.0, lam=0.01)",
    "network": "A.risk_curve([1.0, 2.0])",
    "K3 r1": "A.risk_spiked(1.5, sigma='relu', target='z1 + z1*z2', loadings=[[0.9], [0.5], [0.2]],"
             " bulk=[1.0, 1.0, 1.0], fractions=[0.3, 0.3, 0.4], overlaps=[[1.0, 0.0]])",
    "K3 r2": "A.risk_spiked(1.5, sigma='relu', target='z1 + z1*z2', loadings=[[0.9, 0.1], "
             "[0.5, 0.6], [0.2, 0.3]], bulk=[1.0, 1.0, 1.0], fractions=[0.3, 0.3, 0.4], "
             "overlaps=[[1.0, 0.0], [0.0, 1.0]])",
    "K3 r3": "A.risk_spiked(1.5, sigma='relu', target='z1 + z1*z2', loadings=[[0.9, 0.1, 0.0], "
             "[0.5, 0.6, 0.1], [0.2, 0.3, 0.5]], bulk=[1.0, 1.0, 1.0], fractions=[0.3, 0.3, 0.4], "
             "overlaps=[[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])",
    "steps=3": "A.risk(1.5, steps=3, model='srf', sigma='tanh', target='z1 + z1*z2', alpha0=8.0, "
               "eta=(1.0, 2.0, 2.0))",
    "pm1": "A.risk(1.5, steps=3, model='srf', sigma='tanh', target='z1 + z1*z2', alpha0=8.0, "
           "eta=(1.0, 2.0, 2.0), readout='pm1')",
}
RECORD = """
import json, sys
from asymptotics.core import coldstart, compile_queue
seen = []
first_call = coldstart._cold_call


def record(disp, args):
    sig = coldstart.signature(disp, args)  # what the cold start looks up and queues
    compile_queue.encode(sig)  # raises where the queue could not carry the types
    out = first_call(disp, args)  # numba's call: loads or compiles, and caches
    found = sig in disp.overloads and coldstart.is_cached(disp, sig)
    seen.append([disp.py_func.__qualname__, str(sig), found])
    return out


coldstart._cold_call = record
import asymptotics as A
out = {}
for name, call in json.loads(sys.argv[1]).items():
    seen.clear()
    eval(call)
    out[name] = list(seen)
print(json.dumps(out))
"""


def test_every_route_looks_up_the_signature_numba_caches():
    """In numba's own mode (compile or load on each kernel's first call), the signature the cold
    start computes for that call is the key numba compiled it under and the key in its index."""
    env = dict(os.environ, GIANTSTEP_COLD_START="compile", PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", RECORD, json.dumps(ROUTES)], env=env,
                         capture_output=True, text=True, timeout=1800, cwd=str(ROOT))
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert seen["srf"]  # the first route meets every kernel it calls for the first time
    for name in ROUTES:
        missing = [(kern, sig) for kern, sig, found in seen[name] if not found]
        assert not missing, f"{name}: {missing}"
    # solve_point's blowup argument
    assert any("omitted" in sig for rows in seen.values() for _, sig, _ in rows)


SECOND = """
import json, sys, time, warnings
import asymptotics as A
from asymptotics.models.problem import LimitWarning
# the K-group routes at p = infinity say their limit's caveat (a LimitWarning): not the cold
# start's business, which is what this script's stderr is read for
warnings.simplefilter("ignore", LimitWarning)
out = {}
for name, call in json.loads(sys.argv[1]).items():
    first = eval(call)
    t = time.perf_counter()
    eval(call)
    out[name] = [float(getattr(first, "risk", float("nan"))), time.perf_counter() - t]
print(json.dumps(out))
"""


@pytest.mark.slow
def test_every_route_is_compiled_in_the_second_process(tmp_path):
    """End to end with the real kernels on an empty cache: the first process interprets and
    queues, the second (started at once) waits for the background compiler and loads; once the
    compiler is done, a third is silent. Equal numbers throughout (the solver's tolerance)."""
    from asymptotics.core import coldstart

    routes = {k: v for k, v in ROUTES.items() if k != "network"}  # a DataFrame, no .risk
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    env.pop("GIANTSTEP_COLD_START", None)

    def run():
        out = subprocess.run([sys.executable, "-c", SECOND, json.dumps(routes)], env=env,
                             capture_output=True, text=True, timeout=3600, cwd=str(ROOT))
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout), out.stderr.splitlines()

    first, said = run()
    assert said == [coldstart.MESSAGE]
    second, said = run()
    assert set(said) <= {coldstart.MESSAGE_WAIT.format(log=tmp_path / "giantstep-compile" /
                                                       "worker.log")}
    third, said = run()
    assert said == []
    for name in routes:
        assert second[name][0] == third[name][0]
        assert abs(first[name][0] - third[name][0]) <= 1e-8 * abs(third[name][0]), name
