"""The coupled device kept on disk between processes (asymptotics/network/device.py,
``DISK_KEEP``): a file read back is the computed device bit for bit; a changed source, a
damaged file, a user callable or ``GIANTSTEP_DEVICE_CACHE=0`` never reads one."""

from __future__ import annotations

import numpy as np
import pytest

from asymptotics.coefficients.functions import Function
from asymptotics.network import device as dv

KW = dict(steps=2, alpha0=4.0, eta=(1.0, 2.0), readout="pm1", size=8, blocks=2)


@pytest.fixture
def disk(tmp_path, monkeypatch):
    monkeypatch.setenv("GIANTSTEP_DEVICE_CACHE", "1")
    monkeypatch.setattr(dv, "DISK_DIR", tmp_path)
    dv._CACHE.clear()
    yield tmp_path
    dv._CACHE.clear()


def _same(a, b) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a[:3], b[:3], strict=True)) and a[3] == b[3]


def test_read_back_bit_for_bit(disk, monkeypatch):
    first = dv.coupled_device("relu", "z1 + z1*z2", **KW)
    files = list(disk.glob("*.npz"))
    assert len(files) == 1
    dv._CACHE.clear()
    calls = []
    monkeypatch.setattr(dv, "_coupled_lanes", lambda *a: calls.append(a) or None)
    again = dv.coupled_device("relu", "z1 + z1*z2", **KW)
    assert not calls  # read, not computed
    assert _same(first, again) and not again[0].flags.writeable


def test_other_setting_or_source_misses(disk, monkeypatch):
    dv.coupled_device("relu", "z1 + z1*z2", **KW)
    dv.coupled_device("relu", "z1 + z1*z2", **dict(KW, alpha0=4.5))
    assert len(list(disk.glob("*.npz"))) == 2
    monkeypatch.setattr(dv, "_FINGERPRINT", ["0" * 16])  # another version of the sources
    dv._CACHE.clear()
    dv.coupled_device("relu", "z1 + z1*z2", **KW)
    assert len(list(disk.glob("0000000000000000-*.npz"))) == 1


def test_damaged_file_is_recomputed(disk):
    first = dv.coupled_device("relu", "z1 + z1*z2", **KW)
    (path,) = disk.glob("*.npz")
    path.write_bytes(b"not a device")
    dv._CACHE.clear()
    assert _same(first, dv.coupled_device("relu", "z1 + z1*z2", **KW))


def test_off_and_user_callables_write_nothing(disk, monkeypatch):
    monkeypatch.setenv("GIANTSTEP_DEVICE_CACHE", "0")
    dv.coupled_device("relu", "z1 + z1*z2", **KW)
    assert not list(disk.glob("*.npz"))
    monkeypatch.setenv("GIANTSTEP_DEVICE_CACHE", "1")
    relu = Function.from_callable(lambda z: np.maximum(z, 0.0), name="my_relu",
                                  df=lambda z: (z > 0) * 1.0, kinks=(0.0,))
    assert dv._disk_path(("coupled", relu)) is None


def test_keeps_the_newest(disk, monkeypatch):
    monkeypatch.setattr(dv, "DISK_KEEP", 2)
    for a0 in (4.0, 4.5, 5.0):
        dv.coupled_device("relu", "z1 + z1*z2", **dict(KW, alpha0=a0))
    assert len(list(disk.glob("*.npz"))) == 2
