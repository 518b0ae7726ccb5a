"""The mean overlaps of a network trained by several giant steps against the d -> infinity
theory of the groups (docs/THEORY.md §15): erf(z - 1), target z1 + z1 z2, pm1 readout,
alpha0 = 16, eta_tilde = (2, 8), beta = 1 (the d = 300 check of ``steps_compare``); per draw
mean_i |<w_i, theta_j>| / |w_i| after each step for the (step, direction) the theory learns
(limit > 0.05; a direction not learned decays like d^(-1/2), no 1/d law)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

STEPS_KW = dict(sigma="erf(z-1)", target="z1 + z1*z2", alpha0=16.0, eta=(2.0, 8.0),
                readout="pm1")
#: the theory's overlap above which a direction counts as learned
LEARNED = 0.05


@dataclass(frozen=True)
class StepsSetting:
    """``kind``: ``'overlaps'``."""

    name: str
    kind: str


STEPS = (StepsSetting("steps-overlaps-erf", "overlaps"),)


def _name(t: int, j: int) -> str:
    return f"step{t}:overlap{j + 1}"


@functools.cache
def _theory_all() -> dict[tuple[int, int], float]:
    from asymptotics.multiindex.steps import steps_mapping

    kw = dict(STEPS_KW)
    mp = steps_mapping(kw.pop("sigma"), kw.pop("target"), steps=len(kw["eta"]), **kw)
    return {(t, j): float(v) for t, st in enumerate(mp.states)
            for j, v in enumerate(st.mean_overlaps(mp.readout.weights))}


def steps_theory(s: StepsSetting) -> dict[str, float]:
    """The learned (step, direction) overlaps as d -> infinity."""
    return {_name(t, j): v for (t, j), v in _theory_all().items() if v > LEARNED}


def steps_draw(s: StepsSetting, d: int, rng: np.random.Generator) -> dict[str, float]:
    """One trained network at dimension ``d`` (the simulator's protocol, p = d)."""
    from validation.multistep.simulator import MultiStepConfig, run_multistep

    kw = dict(STEPS_KW)
    cfg = MultiStepConfig(d=d, steps=len(kw["eta"]), sigma=kw["sigma"], target=kw["target"],
                          alpha0=kw["alpha0"], eta=kw["eta"], readout="pm1", n_test=1)
    df = run_multistep(cfg, seeds=1, seed=int(rng.integers(2**31)))
    m = df.groupby(["step", "direction"])["mean_overlap"].mean()
    return {_name(t, j): float(m[(t, j + 1)]) for (t, j), v in _theory_all().items()
            if v > LEARNED}
