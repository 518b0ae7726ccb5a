"""The sampled device's block size (docs/DERIVATIONS.md §9.9, "the device's block size"): the
split device (each block's draws cut into two halves of its samples and outside directions)
leaves the device's random stream untouched, and on an erf(z-1) setting the risk does not
depend on the block size at a fixed number of directions (measured: within 0.04% between blocks
of 25 and 400 directions, where a relu +-1 setting moves by 4%)."""

from __future__ import annotations

import numpy as np
import pytest

from asymptotics.network import device as dv

KW = dict(steps=2, alpha0=16.0, eta=(2.0, 8.0), readout="pm1", size=40, blocks=3, seed=0)


def test_split_device_keeps_the_whole_devices_stream():
    """The whole device computed alongside its split is the plain device, bit for bit; the
    split has twice the blocks, each of half the outside directions (less the span E)."""
    dv._CACHE.clear()
    split = dv.coupled_device("relu", "z1 + z1*z2", split=True, **KW)
    whole_with = dv.coupled_device("relu", "z1 + z1*z2", **KW)
    dv._CACHE.clear()
    whole = dv.coupled_device("relu", "z1 + z1*z2", **KW)
    dv._CACHE.clear()
    for x, y in zip(whole[:3], whole_with[:3], strict=True):
        assert np.array_equal(x, y)
    B, K, n, _ = whole[0].shape
    Bs, Ks, ns, _ = split[0].shape
    assert (Bs, Ks) == (2 * B, K)
    assert n - ns == 40 - 20  # the same span E removed from both
    assert split[1].shape == (Bs, K, whole[1].shape[2], ns)
    with pytest.raises(ValueError, match="even size"):
        dv.coupled_device("relu", "z1 + z1*z2", split=True, **dict(KW, size=41))


@pytest.mark.slow
def test_erf_device_does_not_depend_on_the_block_size():
    """STEPS.md's setting D (erf(z-1), z1 + z1*z2, constant readout, alpha0 = 16, eta = 2, 8,
    16), three steps, p = d = 1000: the route's risk on 3200 directions in blocks of 50 and of
    100 agrees to 0.2% at ridge alpha 0.5 and 2 (measured 0.03% and 0.02%; the seeds' spread is
    0.01-0.03%). On D1 of benchmarks/bench_network_steps.py (relu, +-1 readout) the same pair
    differs by 1.2% (DERIVATIONS.md §9.9)."""
    from validation.experiments.network_device.bias import risks

    r50 = risks("SD", 50, 64, 0, [0.5, 2.0])
    r100 = risks("SD", 100, 32, 0, [0.5, 2.0])
    assert np.all(np.isfinite(r50 + r100))
    assert np.max(np.abs(np.array(r50) / np.array(r100) - 1.0)) < 2e-3, (r50, r100)


def test_device_builds_run_blas_on_one_thread(monkeypatch, blas_two_threads):
    """Both devices are built with BLAS on ``schur.BLAS_THREADS`` (1) threads, whatever the
    process's setting: two OpenBLAS threads on 2 cores made a three-step device 4-7x slower
    (the same numbers to 2.5e-15)."""
    from threadpoolctl import threadpool_info

    def blas() -> set:
        return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}

    seen = []
    for name in ("_covariances", "_coupled_lanes"):
        real = getattr(dv, name)

        def spy(*a, _real=real, **k):
            seen.append(blas())
            return _real(*a, **k)

        monkeypatch.setattr(dv, name, spy)
    dv._CACHE.clear()
    try:
        assert blas() == {2}
        dv.device_covariances("relu", "z1 + z1*z2", **KW)
        dv.coupled_device("relu", "z1 + z1*z2", **KW)
        assert blas() == {2}
    finally:
        dv._CACHE.clear()
    assert seen == [{1}, {1}]
