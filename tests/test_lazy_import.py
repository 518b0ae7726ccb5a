"""``import asymptotics`` and a first one-step point do not load the several-steps, K-group and
spectra modules (the cold start); their entry points still resolve on first use, from the
package and by ``from asymptotics import ...``; the kernel-cache guard hashes the sources
without importing them."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import asymptotics
from asymptotics.core import kernel_cache

HEAVY = ("asymptotics.spectra", "asymptotics.multiindex.steps", "asymptotics.api.by_step",
         "asymptotics.multiindex.steps_risk")


def _loaded_after(code: str) -> list[str]:
    probe = (f"import sys, json\n{code}\n"
             f"print(json.dumps([m for m in {list(HEAVY)!r} if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_and_a_first_point_stay_light():
    assert _loaded_after("import asymptotics") == []
    assert _loaded_after("import asymptotics as A; A.risk(1.0, model='srf')") == []


def test_lazy_entry_points_resolve():
    for name in asymptotics._LAZY:
        assert getattr(asymptotics, name) is not None
        assert name in dir(asymptotics)
    assert set(asymptotics.__all__) <= set(dir(asymptotics))
    code = "from asymptotics import spectrum, risk_by_step, risk_spiked; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "ok"


def test_unknown_attribute_is_an_attribute_error():
    try:
        asymptotics.no_such_entry_point  # noqa: B018
    except AttributeError as exc:
        assert "no_such_entry_point" in str(exc)
    else:
        raise AssertionError("no AttributeError")


def test_guard_hashes_the_imported_modules_files():
    names = kernel_cache.KERNEL_MODULES
    import importlib

    digest = hashlib.sha256()
    for name in names:
        digest.update(open(importlib.import_module(name).__file__, "rb").read())
    lazy = hashlib.sha256()
    for name in names:
        lazy.update(kernel_cache._source(name).read_bytes())
    assert lazy.hexdigest() == digest.hexdigest()
    assert json.dumps([str(kernel_cache._source(n)) for n in names])  # every file found
