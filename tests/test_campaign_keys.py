"""Keys that are the computation: a task's key is the hash of its full parameter record
(campaign, protocol version, place, every field of the setting incl. repetitions, d and seeds).
A changed setting reruns, an old row is never reused -- in a store, through a CSV and its keys
file, and for the committed data (whose keys files must be those of the current plans)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from validation.campaign import Campaign, Schema, Store, run_campaign
from validation.campaign.spec import digest, record_of
from validation.campaign.store import keys_path, read_keys

SCHEMA = Schema.of(name=str, seed=int, rep=int, x=float)
CALLS: list[str] = []


@dataclass(frozen=True)
class Toy:
    name: str
    seed: int
    scale: float
    reps: int = 2


def task(s: Toy) -> list[dict]:
    CALLS.append(s.name)
    rng = np.random.default_rng(s.seed)
    return [dict(name=s.name, seed=s.seed, rep=r, x=s.scale * float(rng.standard_normal()))
            for r in range(s.reps)]


def toy(settings, version: str = "1") -> Campaign:
    return Campaign("toy", tuple(settings), task, SCHEMA, key_columns=("name", "seed"),
                    key=lambda s: (s.name, s.seed), version=version)


PLAN = [Toy("a", 1, 1.0), Toy("b", 2, 1.0), Toy("c", 3, 1.0)]


def test_the_key_is_a_hash_of_every_field_and_the_version():
    c = toy(PLAN)
    base = c.task_hash(PLAN[0])
    assert base == toy(PLAN).task_hash(Toy("a", 1, 1.0))  # deterministic
    for changed in (replace(PLAN[0], scale=1.5), replace(PLAN[0], reps=3),
                    replace(PLAN[0], seed=9)):
        assert c.task_hash(changed) != base
    assert toy(PLAN, version="2").task_hash(PLAN[0]) != base
    assert c.key_text(replace(PLAN[0], scale=2.0)) == c.key_text(PLAN[0])  # same place
    rec = record_of(PLAN[0])
    assert rec == {"_type": "Toy", "name": "a", "seed": 1, "scale": 1.0, "reps": 2}
    assert digest(rec) == digest(dict(reversed(list(rec.items()))))  # canonical
    with pytest.raises(ValueError, match="no parameter record"):
        record_of(object())


def test_an_edited_setting_reruns_and_replaces_its_rows(tmp_path):
    CALLS.clear()
    with Store(tmp_path / "s.sqlite") as st:
        assert run_campaign(toy(PLAN), st, progress=False).ran == 3
        before = st.frame(toy(PLAN))
        assert run_campaign(toy(PLAN), st, progress=False).ran == 0
        edited = [PLAN[0], replace(PLAN[1], scale=10.0), replace(PLAN[2], reps=4)]
        out = run_campaign(toy(edited), st, progress=False)
        assert out.ran == 2 and CALLS[-2:] == ["b", "c"]
        after = st.frame(toy(edited))
        assert len(after) == 2 + 2 + 4  # the old rows of b and c are gone, not added to
        b0, b1 = before[before.name == "b"].x.to_numpy(), after[after.name == "b"].x.to_numpy()
        np.testing.assert_allclose(b1, 10 * b0)
        assert list(after[after.name == "a"].x) == list(before[before.name == "a"].x)
        # the protocol's version: every task reruns
        assert run_campaign(toy(edited, version="2"), st, progress=False).ran == 3


def test_a_csv_is_reused_only_with_the_plans_keys(tmp_path):
    CALLS.clear()
    csv = tmp_path / "runs.csv"
    with Store(tmp_path / "a.sqlite") as st:
        run_campaign(toy(PLAN), st, progress=False)
        st.export_csv(toy(PLAN), csv)
    keys = read_keys(keys_path(csv))
    assert keys == toy(PLAN).plan_hashes()
    CALLS.clear()
    edited = [PLAN[0], PLAN[1], replace(PLAN[2], scale=3.0)]
    with Store(tmp_path / "b.sqlite") as st:
        assert st.import_csv(toy(edited), csv) == 3
        assert st.done(toy(edited)) == {toy(PLAN).key_text(s) for s in PLAN[:2]}
        assert run_campaign(toy(edited), st, progress=False).ran == 1 and CALLS == ["c"]
    keys_path(csv).unlink()  # a CSV without its keys file: read, but every task reruns
    with Store(tmp_path / "c.sqlite") as st:
        st.import_csv(toy(PLAN), csv)
        assert st.done(toy(PLAN)) == set()
        assert run_campaign(toy(PLAN), st, progress=False).ran == 3


def test_an_old_store_without_keys_reruns_everything(tmp_path):
    import sqlite3

    db = tmp_path / "old.sqlite"
    with Store(db) as st:
        run_campaign(toy(PLAN), st, progress=False)
    con = sqlite3.connect(db)
    con.execute("UPDATE _tasks SET hash = NULL")
    con.commit()
    con.close()
    with Store(db) as st:
        assert st.done(toy(PLAN)) == set()
        assert run_campaign(toy(PLAN), st, progress=False).ran == 3
        assert len(st.frame(toy(PLAN))) == 6


def test_spiked_more_repetitions_do_not_reuse_the_stored_ones(tmp_path):
    """``python -m validation.spiked run --seeds 32``: the stored 16-repetition tasks are stale."""
    from validation.spiked import campaign as SC

    with Store(tmp_path / "s.sqlite") as st:
        st.import_csv(SC.campaign(), SC.COMMITTED)
        assert st.done(SC.campaign()) == set(SC.campaign().plan_hashes())
        assert st.done(SC.campaign(seeds=32)) == set()


def test_multistep_risk_edited_eta_is_not_reused(tmp_path, monkeypatch):
    """Editing a setting's eta, alpha0 or target makes its stored repetitions stale."""
    from validation.multistep import risk as MR

    c = MR.campaign(MR.FULL)
    read = MR.paths(MR.FULL)[0]
    with Store(tmp_path / "s.sqlite") as st:
        st.import_csv(c, read)
        assert len(st.done(c)) == len(c.settings)
        for field, value in (("eta", (1.0, 2.0, 3.0)), ("alpha0", 32.0), ("target", "z1")):
            monkeypatch.setitem(MR.SETTINGS, "A", dict(MR.SETTINGS["A"], **{field: value}))
            edited = MR.campaign(MR.FULL)
            stale = {edited.key_text(j) for j in edited.settings if j.name == "A"}
            assert stale and st.done(edited) == set(edited.plan_hashes()) - stale, field
            monkeypatch.undo()


def test_network_steps_edited_setting_is_not_reused(tmp_path, monkeypatch):
    """Editing a new setting of the network-steps campaign (its alpha0, its readout) makes its
    committed repetitions stale, and only those; more repetitions keep the stored ones."""
    from validation.experiments import network_steps as NS

    c = NS.campaign()
    with Store(tmp_path / "s.sqlite") as st:
        st.import_csv(c, NS.RUNS)
        assert st.done(c) == set(c.plan_hashes())
        assert st.done(NS.campaign(seeds=7)) == set(c.plan_hashes())  # more than any d's
        for field, value in (("alpha0", 8.0), ("readout", {1.0: 0.5, -1.0: 0.5})):
            monkeypatch.setitem(NS.SETTINGS, "N6", dict(NS.SETTINGS["N6"], **{field: value}))
            edited = NS.campaign()
            stale = {edited.key_text(j) for j in edited.settings if j[0] == "N6"}
            assert len(stale) == 3 + 6 and st.done(edited) == set(edited.plan_hashes()) - stale
            monkeypatch.undo()


def test_reused_batch_edited_protocol_is_not_reused(tmp_path, monkeypatch):
    """A changed constant of the reused-batch protocol (ridge's lam) or its version reruns every
    run; a changed target (its normalisation) reruns that target's runs only."""
    from validation.experiments import reused_batch as RB

    c = RB.campaign()
    with Store(tmp_path / "s.sqlite") as st:
        st.import_csv(c, RB.RUNS)
        assert st.done(c) == set(c.plan_hashes())
        monkeypatch.setattr(RB, "LAM", 0.1)
        assert st.done(RB.campaign()) == set()
        monkeypatch.undo()
        assert st.done(replace(c, version="2")) == set()
        monkeypatch.setitem(RB.TARGETS, "He2", "He2(z1)")
        edited = RB.campaign()
        stale = {edited.key_text(j) for j in edited.settings if j[0].target == "He2"}
        assert len(stale) == 6 + 4 + 6  # He2 constant at d = 1000, 2000; He2 pm1
        assert st.done(edited) == set(edited.plan_hashes()) - stale


def test_spectra_theory_edited_setting_is_not_reused(tmp_path, monkeypatch):
    """A changed field of a spectra-vs-theory setting (its alpha0, its draws at one d) reruns
    that setting's cells only; another version reruns every cell; the default plan (without
    d = 4000) finds its cells stored."""
    from validation.experiments import spectra_theory as ST

    c = ST.campaign(**ST.COMMITTED)
    with Store(tmp_path / "s.sqlite") as st:
        st.import_csv(c, ST.CSV)
        assert st.done(c) == set(c.plan_hashes()) and len(c.plan_hashes()) == 14
        assert st.done(ST.campaign()) == set(ST.campaign().plan_hashes())
        assert st.done(replace(c, version="2")) == set()
        assert st.done(ST.campaign(quick=True)) == set()  # 2 draws: other keys
        for i, edit in ((1, dict(alpha0=1.0)), (4, dict(seeds={1000: 7, 2000: 3, 4000: 5}))):
            s = ST.SETTINGS[i]
            monkeypatch.setattr(ST, "SETTINGS", tuple(replace(x, **edit) if x is s else x
                                                      for x in ST.SETTINGS))
            edited = ST.campaign(**ST.COMMITTED)
            stale = {edited.key_text(j) for j in edited.settings if j[0].name == s.name}
            assert len(stale) == 2 and st.done(edited) == set(edited.plan_hashes()) - stale
            monkeypatch.undo()


def test_spectra_weights_steps_edited_setting_is_not_reused(tmp_path, monkeypatch):
    """The weights-after-several-steps campaign: its committed cells are the plan's; another
    eta_tilde of one setting, more draws at one d or another version reruns only those cells."""
    from validation.experiments.spectra_weights import steps as SW

    c = SW.campaign()
    with Store(tmp_path / "s.sqlite") as st:
        assert st.import_csv(c, SW.CSV) == len(c.settings) == 14
        assert st.done(c) == set(c.plan_hashes())
        assert st.done(replace(c, version="4")) == set()
        s = SW.SETTINGS[1]
        monkeypatch.setattr(SW, "SETTINGS", tuple(replace(x, eta=2.0) if x is s else x
                                                  for x in SW.SETTINGS))
        edited = SW.campaign()
        stale = {edited.key_text(j) for j in edited.settings if j[0].name == s.name}
        assert len(stale) == 4 and st.done(edited) == set(edited.plan_hashes()) - stale
        monkeypatch.undo()
        monkeypatch.setitem(SW.SEEDS, 2000, 5)
        edited = SW.campaign()
        stale = {edited.key_text(j) for j in edited.settings if j[1] == 2000}
        assert len(stale) == 4 and st.done(edited) == set(edited.plan_hashes()) - stale


def _plans():
    """The plan that computed each committed campaign CSV."""
    from validation.experiments import network_steps as NS
    from validation.experiments import polynomial_spikes as PS
    from validation.experiments import reused_batch as RB
    from validation.experiments import spectra as SP
    from validation.experiments import spectra_theory as ST
    from validation.experiments.spectra_weights import estimator as SE
    from validation.experiments.spectra_weights import features as SF
    from validation.experiments.spectra_weights import steps as SW
    from validation.matrix import campaign as M
    from validation.matrix import finite_width as FW
    from validation.multistep import experiment as MS
    from validation.multistep import risk as MR
    from validation.spiked import campaign as SC
    from validation.spiked import readouts as RO
    from validation.spiked import reference_runs as RR

    out = [(SC.campaign().with_settings(
               [(SC.BY_NAME[n], int(d), int(k), int(s)) for (n, d, k, s), _ in
                pd.read_csv(SC.COMMITTED).groupby(["name", "d", "seeds", "seed"], sort=False)]),
            SC.COMMITTED, None),
           (RR.campaign(reps=(0, 1, 2, 3)), RR.COMMITTED, None),
           (FW.campaign([1000, 2000, 4000], 16), FW.RUNS, None),
           (MR.campaign(MR.FULL), MR.paths(MR.FULL)[0], None),
           (PS.campaign([500, 1000, 2000], [24, 12, 8]), PS.RUNS, None),
           (PS.check_campaign(), PS.CHECK, None),
           (RO.campaign(), RO.STORE, None),
           (NS.campaign(), NS.RUNS, None),
           (RB.campaign(), RB.RUNS, None),
           (ST.campaign(**ST.COMMITTED), ST.CSV, None),
           (SW.campaign(), SW.CSV, None),
           (SF.campaign(), SF.CSV, None),
           (SF.row_slope_campaign(), SF.ROWSLOPE_CSV, None),
           (SE.campaign(), SE.CSV, None)]
    out += [(MS.campaign(n, MS.FULL), MS.REPORTS / "data" / f"multistep_{n}.csv", None)
            for n in MS.EXPERIMENTS]
    out += [(SP.campaign(n, SP.FULL), SP.REPORTS / "data" / f"spectra_{n}.csv", SP._import)
            for n in SP.EXPERIMENTS]
    out.append((SP.spectrum_campaign(SP.FULL), SP.REPORTS / "data" / "spectra_spectrum.csv",
                SP._import))
    runs = Path(M.__file__).resolve().parents[1] / "data" / "matrix_runs.csv"
    df = pd.read_csv(runs, usecols=["sigma", "target", "beta", "alpha0", "eta", "model", "d",
                                    "rep", "estimator"]).drop_duplicates()
    jobs = [(M.MatrixSetting(r.sigma, r.target, float(r.beta), float(r.alpha0), float(r.eta)),
             r.model, int(r.d), int(r.rep), r.estimator) for r in df.itertuples()]
    out.append((M.campaign(jobs), runs, None))
    return out


def test_committed_keys_files_are_those_of_the_current_plans():
    """Every committed campaign CSV has a keys file naming each of its tasks with the key of the
    current plan: editing a setting (or the protocol's version) without rerunning fails here."""
    for c, path, importer in _plans():
        keys = read_keys(keys_path(path))
        with Store(None) as st:
            (importer or Store.import_csv)(st, c, path)
            places = set(st.hashes(c))
        assert set(keys) == places, path.name
        plan = c.plan_hashes()
        stale = [p for p in places if plan.get(p) != keys[p]]
        assert not stale, f"{path.name}: {len(stale)} tasks stale, e.g. {stale[:2]}"


def test_record_of_every_campaign_setting_is_plain_data():
    for c, _, _ in _plans()[:4]:
        for s in c.settings[:3]:
            rec = c.record_of(s)
            assert dataclasses.is_dataclass(rec) is False and digest(rec) == c.task_hash(s)


def test_a_multistep_task_record_parses_its_target_once():
    """``MultiStepConfig.k`` (asked by every task's ``record``, so by every key) parses a target
    text once: the plans' hashes above cost no sympy work per task; k is the text's count."""
    from validation.multistep.simulator import MultiStepConfig, _target_k

    _target_k.cache_clear()
    cfgs = [MultiStepConfig(d=100 + i, target="z1 + z1*z2 + z2*z3") for i in range(50)]
    assert {c.record()["k"] for c in cfgs} == {3}
    assert _target_k.cache_info().misses == 1
    assert MultiStepConfig(d=100, target="z").k == 1
    with pytest.raises(ValueError, match="non-empty"):
        _ = MultiStepConfig(d=100, target="").k
