"""The first network-theory point beyond one step in a fresh process, kernels cached: the
sampled device computed (``GIANTSTEP_DEVICE_CACHE=0``), computed and written to an empty device
directory, and read back from it (asymptotics/network/device.py, docs/guide.md). Each figure is
a fresh interpreter; CPU and wall seconds from before ``import asymptotics`` to the first
point's risk, then the next point's CPU seconds (the device and the setting kept in the process).

Run: python benchmarks/first_network_point.py [--rounds 2] [--setting relu|tanh]
(warm the numba cache first: any earlier run of the same setting does)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

SETTINGS = {
    "relu": dict(steps=3, readout="pm1", target="z1 + z1*z2", sigma="relu"),
    "tanh": dict(steps=2, readout={2.0: 0.25, 1.0: 0.5, -1.0: 0.25}, target="tanh(z1)",
                 sigma="tanh", alpha0=8.677),
}

CHILD = """
import json, sys, time
from pathlib import Path
t0, w0 = time.process_time(), time.perf_counter()
import asymptotics as A
from asymptotics.network import device
device.DISK_DIR = Path(sys.argv[1])
kw = eval(sys.argv[2])
r = A.risk(2.0, **kw)
t1, w1 = time.process_time(), time.perf_counter()
A.risk(0.5, **kw)
print(json.dumps([t1 - t0, w1 - w0, time.process_time() - t1, r.risk]))
"""


def one(folder: str, kw: dict, cache: str) -> list:
    env = dict(os.environ, GIANTSTEP_DEVICE_CACHE=cache)
    out = subprocess.run([sys.executable, "-c", CHILD, folder, repr(kw)], env=env,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    if {"-h", "--help"} & set(sys.argv[1:]):  # the usage is the docstring
        print(__doc__)
        return
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 2
    name = sys.argv[sys.argv.index("--setting") + 1] if "--setting" in sys.argv else "relu"
    kw = SETTINGS[name]
    print(f"setting {name}: {kw}; load {os.getloadavg()[0]:.1f}")
    print("round | device | first point CPU s | wall s | next point CPU s | risk")
    for i in range(rounds):
        with tempfile.TemporaryDirectory() as folder:
            for label, cache in (("computed (cache off)", "0"), ("computed, written", "1"),
                                 ("read back", "1")):
                cpu, wall, nxt, risk = one(folder, kw, cache)
                print(f"{i + 1} | {label} | {cpu:.1f} | {wall:.1f} | {nxt:.3f} | {risk!r}",
                      flush=True)


if __name__ == "__main__":
    main()
