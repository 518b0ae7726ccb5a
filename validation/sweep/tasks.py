"""Units of work: hashing parameters into keys and seeds, planning tasks, running one task."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass

from .params import DEFAULT_SEEDS, check_kind, is_theory, normalise_grid, params_of, schema


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()
                          ).hexdigest()


@dataclass(frozen=True)
class Task:
    """One unit of work: ``params`` fixed, all ``alphas`` (and, for simulations, ``lams``)."""

    kind: str
    params: tuple[tuple[str, Any], ...]
    alphas: tuple[float, ...]
    lams: tuple[float, ...] = ()
    rep: int = 0

    @property
    def key(self) -> str:
        body: dict[str, Any] = dict(kind=self.kind, params=dict(self.params),
                                    alphas=list(self.alphas))
        if not is_theory(self.kind):
            body.update(lams=list(self.lams), rep=self.rep)
        return _digest(body)[:20]

    @property
    def entropy(self) -> int:
        """Root entropy of the repetitions: 128 bits of the hash of the simulation parameters."""
        return int(_digest(dict(self.params))[:32], 16)

    def point_key(self, alpha: float, lam: float | None = None) -> str:
        params = dict(self.params, alpha=alpha)
        if lam is not None:
            params["lam"] = lam
        body: dict[str, Any] = dict(kind=self.kind, params=params)
        if not is_theory(self.kind):
            body["rep"] = self.rep
        return _digest(body)[:20]

    @property
    def n_rows(self) -> int:
        return len(self.alphas) * (len(self.lams) if not is_theory(self.kind) else 1)


#: at most this many points (rows, repetitions counted) in one sweep
MAX_POINTS = 1_000_000


def plan(kind: str, grid: Mapping[str, Any] | None = None, *, seeds: int = DEFAULT_SEEDS,
         **fixed: Any) -> list[Task]:
    """The tasks of a sweep, in grid order (canonical parameter order, alpha innermost)."""
    check_kind(kind)
    if isinstance(seeds, bool) or int(seeds) != seeds or seeds < 1:
        raise ValueError(f"seeds must be an integer >= 1, got {seeds!r}")
    g, base = normalise_grid(kind, grid, fixed)
    inner = ("alpha",) if is_theory(kind) else ("lam", "alpha")
    axes_of = {n: g[n] if n in g else [base[n]] for n in params_of(kind)}
    alphas = tuple(axes_of["alpha"])
    lams = tuple(axes_of["lam"]) if not is_theory(kind) else ()
    outer = [n for n in params_of(kind) if n not in inner]
    axes = [axes_of[n] for n in outer]
    points = math.prod(len(a) for a in axes) * len(alphas) * max(len(lams), 1) * (
        1 if is_theory(kind) else int(seeds))
    if points > MAX_POINTS:  # refused before the tasks are built (1e15 points hung here)
        raise ValueError(f"the sweep has {points:.3g} points (grid x alpha x lam x seeds); at "
                         f"most {MAX_POINTS:.0e} in one sweep: split the grid")
    tasks = []
    for combo in itertools.product(*axes):
        params = tuple(zip(outer, combo, strict=True))
        if is_theory(kind):
            tasks.append(Task(kind, params, alphas))
        else:
            _check_setting(kind, dict(params), alphas, lams)
            tasks += [Task(kind, params, alphas, lams, rep) for rep in range(int(seeds))]
    return tasks


def _check_setting(kind: str, params: dict, alphas: Sequence[float], lams: Sequence[float]) -> None:
    from validation.protocol.simulator import Setting

    p = _simulated(kind, params)
    for a in alphas:
        Setting(model=kind, alpha=a, lam=lams[0], **p)  # raises ValueError naming the problem


def _simulated(kind: str, params: dict) -> dict:
    """The simulator's parameters of a task: the kind ``rf`` is random features, eta = 0 (the
    sweep's ``eta`` column of an rf task is not used, as in ``validation.compare``)."""
    sim = {k: v for k, v in params.items() if k != "seed"}
    return dict(sim, eta=0.0) if kind == "rf" else sim


@lru_cache(maxsize=1)
def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("giantstep")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        from asymptotics import __version__

        return __version__


def run_task(task: Task) -> tuple[str, list[dict], float]:
    """Compute one task (in a worker): ``(task key, rows, wall seconds)``; one BLAS thread."""
    from threadpoolctl import threadpool_limits

    if not is_theory(task.kind):
        import validation.protocol.simulator  # noqa: F401  (load scipy's BLAS before limiting it)
    t0, c0 = time.perf_counter(), time.process_time()
    with threadpool_limits(limits=1):
        rows = _theory_rows(task) if is_theory(task.kind) else _simulation_rows(task)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    version = package_version()
    for r in rows:
        r.update(key=task.point_key(r["alpha"], r.get("lam") if not is_theory(task.kind) else None),
                 task=task.key, task_rows=task.n_rows, kind=task.kind, seconds=seconds,
                 cpu_seconds=cpu, version=version)
    return task.key, rows, seconds


def task_rows(task: Task) -> list[dict]:
    """The rows of one task in the store's columns (the campaign's task function)."""
    names = schema(task.kind).names
    return [{c: r[c] for c in names} for r in run_task(task)[1]]


def campaign(kind: str, tasks: Sequence[Task] = ()):
    """The sweep of ``kind`` over ``tasks`` as a :class:`validation.campaign.Campaign`: one table
    per kind (``sweep_<kind>``), tasks keyed by their hash (the ``task`` column), exported sorted
    by the parameters."""
    from validation.campaign import Campaign

    return Campaign(f"sweep_{kind.replace('-', '_')}", tuple(tasks), task_rows, schema(kind),
                    key_columns=("task",), key=lambda t: (t.key,),
                    order=("kind", *params_of(kind), *(() if is_theory(kind) else ("rep",))),
                    place_is_record=True)


def _theory_rows(task: Task) -> list[dict]:
    from asymptotics import risk_curve

    params = dict(task.params)
    # kind "theory" is the sRF equations (the model the stored sweeps and figures describe),
    # "theory-network" the network theory
    model = "network" if task.kind == "theory-network" else "srf"
    df = risk_curve(list(task.alphas), progress=False, model=model, **params)
    rows = []
    for rec, a in zip(df.to_dict("records"), task.alphas, strict=True):
        rec.update(params, alpha=a)  # the parameters as given (sigma spec, not its display name)
        rows.append(rec)
    return rows


def _simulation_rows(task: Task) -> list[dict]:
    import numpy as np

    from validation.protocol.simulator import Setting, simulate_grid_once

    params = dict(task.params)
    sim = _simulated(task.kind, params)
    setting = Setting(model=task.kind, alpha=task.alphas[0], lam=task.lams[0], **sim)
    seed = np.random.SeedSequence(task.entropy, spawn_key=(task.rep,))
    values = simulate_grid_once(setting, task.alphas, task.lams, seed)
    rows = []
    for i, a in enumerate(task.alphas):
        for j, lam in enumerate(task.lams):
            v = float(values[i, j])
            ok = math.isfinite(v)
            rows.append(dict(params, alpha=a, lam=lam, rep=task.rep, p=setting.p,
                             n=max(1, int(round(a * setting.d))), n0=setting.n0,
                             n_test_used=setting.n_test_used, entropy=f"{task.entropy:032x}",
                             risk=v if ok else math.nan, converged=ok))
    return rows


