"""core.meta.scratch: a kept buffer is handed out again only when no array views it, per thread;
the steps' mapping on two threads at once gives the serial numbers bit for bit."""

from __future__ import annotations

import threading

import numpy as np

from asymptotics.core import meta


def test_a_buffer_is_reused_only_when_no_array_views_it() -> None:
    a = meta.scratch("test.a", (100, 3))
    a[...], kept = 1.0, [a.ctypes.data]
    col = a[:, 1]  # a view keeps the buffer
    del a
    b = meta.scratch("test.a", (100, 3))
    assert not np.shares_memory(b, col)
    kept.append(b.ctypes.data)
    del b, col
    c = meta.scratch("test.a", (50, 2))  # smaller: a kept buffer again, no new one
    assert c.ctypes.data in kept and c.shape == (50, 2) and c.dtype == np.float64
    assert len(meta._SCRATCH.pool["test.a"]) == 2
    d = meta.scratch("test.a", 7, bool)
    assert d.dtype == bool and d.shape == (7,)


def test_threads_keep_their_own_buffers() -> None:
    mine = meta.scratch("test.t", 64)
    seen = []
    t = threading.Thread(target=lambda: seen.append(meta.scratch("test.t", 64)))
    t.start()
    t.join()
    assert not np.shares_memory(mine, seen[0])


def test_the_mapping_on_two_threads_is_the_serial_one() -> None:
    import asymptotics as A
    from asymptotics.multiindex import steps

    kws = [dict(sigma="softplus", target="z1 + z1*z2", steps=3, alpha0=16.0,
                eta=(3.0, 5.0, 8.0), readout={1.0: 0.5, -1.0: 0.2, 1.4: 0.3}),
           dict(sigma="tanh", target="z1*z2 + tanh(z1)", steps=3, alpha0=4.0,
                eta=(2.0, 6.0, 9.0), readout="pm1")]

    def states(kw: dict) -> list:
        kw = dict(kw)
        mp = A.steps_mapping(kw.pop("sigma"), kw.pop("target"), **kw)
        return [(s.a.copy(), s.L @ s.L.T, s.c.copy()) for s in mp.states]

    steps.clear_cache()
    serial = [states(kw) for kw in kws]
    steps.clear_cache()
    out: dict = {}
    threads = [threading.Thread(target=lambda i=i: out.__setitem__(i, states(kws[i])))
               for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(2):
        for x, y in zip(serial[i], out[i], strict=True):
            for u, v in zip(x, y, strict=True):
                assert np.array_equal(u, v)


def test_clear_cache_releases_the_threads_buffers() -> None:
    from asymptotics.multiindex import steps

    kept = meta.scratch("test.r", 1000)
    steps.clear_cache()
    assert not getattr(meta._SCRATCH, "pool", {})
    assert kept.shape == (1000,)  # an array still viewing a released buffer keeps it
    kept[...] = 2.0
    assert float(kept.sum()) == 2000.0
