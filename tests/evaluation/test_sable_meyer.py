"""Sable-Meyer readers: packaged rates vs the reference CSV and vs counts from the trial files."""

import csv

import numpy as np
import pytest

from gensim_jax.evaluation import sable_meyer as sm


def test_packaged_matches_reference_csv(shared_dir):
    ref = sm.read_error_rates(shared_dir / "reference/sable_meyer/error_rates.csv")
    pkg = sm.packaged_error_rates()
    assert set(pkg) == set(ref) == set(sm.HUMAN_POPULATIONS) | {"baboons"}
    for pop in ref:
        np.testing.assert_array_equal(pkg[pop]["errors"], ref[pop]["errors"])
        np.testing.assert_array_equal(pkg[pop]["trials"], ref[pop]["trials"])
    # The rounded error_rate column of the file agrees with errors / trials.
    with open(shared_dir / "reference/sable_meyer/error_rates.csv") as f:
        for row in csv.DictReader(f):
            i = sm.SHAPES.index(row["shape"])
            assert float(row["error_rate"]) == pytest.approx(ref[row["population"]]["error_rate"][i], abs=5e-5)


@pytest.mark.parametrize("fname,population", [("himbas.csv", "himbas"), ("baboons_target.csv", "baboons")])
def test_behavior_counts_reproduce_population_rates(shared_dir, fname, population):
    trials = sm.read_behavior(shared_dir / "reference/sable_meyer/behavior" / fname)
    subjects = sm.subject_error_rates(trials)
    errors = sum(d["errors"] for d in subjects.values())
    n = sum(d["trials"] for d in subjects.values())
    pkg = sm.packaged_error_rates()[population]
    np.testing.assert_array_equal(errors, pkg["errors"])
    np.testing.assert_array_equal(n, pkg["trials"])
    # per subject: an explicit count for one subject
    sid = sorted(subjects)[0]
    rows = [t for t in trials if t["subject"] == sid]
    for i, s in enumerate(sm.SHAPES):
        mine = [not t["success"] for t in rows if t["shape"] == s]
        assert subjects[sid]["error_rate"][i] == pytest.approx(np.mean(mine))


def test_per_baboon_file(shared_dir):
    subjects = sm.subject_error_rates(sm.read_behavior(shared_dir / "reference/sable_meyer/behavior/MALI.csv"))
    assert list(subjects) == ["MALI"] and subjects["MALI"]["population"] == "baboons"
    assert subjects["MALI"]["trials"].sum() == 1672


def test_pooled_and_rank():
    rates = {
        "a": {"errors": np.full(11, 1), "trials": np.full(11, 4)},
        "b": {"errors": np.full(11, 3), "trials": np.full(11, 4)},
    }
    np.testing.assert_allclose(sm.pooled_error_rates(rates, ["a", "b"]), 0.5)
    assert sm.regularity_rank().tolist() == list(range(11))
    with pytest.raises(ValueError, match="populations"):
        sm.pooled_error_rates(rates, ["c"])


def test_bad_behavior_file(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("ID,shape,success,population\ns1,square,maybe,adults\n")
    with pytest.raises(ValueError, match="success"):
        sm.read_behavior(p)


def test_packaged_participants_sum_to_the_packaged_rates():
    """The per-participant counts (the ceilings' data) add up to the per-population table, shape by shape."""
    parts, rates = sm.packaged_participants(), sm.packaged_error_rates()
    assert set(parts) == set(rates)
    assert {p: len(d["participants"]) for p, d in parts.items()} == {
        "french_adults_1": 612, "french_adults_2": 117, "1st_graders": 156, "preschoolers": 28, "himbas": 22,
        "baboons": 11,
    }  # fmt: skip
    for pop, d in parts.items():
        assert d["trials"].shape == d["errors"].shape == (len(d["participants"]), len(sm.SHAPES))
        np.testing.assert_array_equal(d["trials"].sum(0), rates[pop]["trials"])
        np.testing.assert_array_equal(d["errors"].sum(0), rates[pop]["errors"])


@pytest.mark.slow
def test_participants_asset_is_what_the_script_derives(shared_dir, tmp_path):
    """scripts/sable_meyer_participants.py on the reference trial files rewrites the packaged asset byte for byte."""
    import subprocess
    import sys
    from importlib import resources
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "p.csv"
    subprocess.run([sys.executable, str(root / "scripts/sable_meyer_participants.py"), "--behavior",
                    str(shared_dir / "reference/sable_meyer/behavior"), "--out", str(out)], check=True,
                   capture_output=True, env={"PYTHONPATH": str(root), "PATH": ""})  # fmt: skip
    assert out.read_text() == resources.files("gensim_jax").joinpath("assets/sable_meyer_participants.csv").read_text()


def test_bad_participant_file(tmp_path):
    p = tmp_path / "p.csv"
    head = ["population", "participant"] + [f"trials_{s}" for s in sm.SHAPES] + [f"errors_{s}" for s in sm.SHAPES]
    p.write_text(",".join(head) + "\n" + ",".join(["x", "p1"] + ["2"] * 11 + ["3"] + ["0"] * 10) + "\n")
    with pytest.raises(ValueError, match=r"p.csv:2: counts must satisfy"):
        sm.read_participants(p)
    p.write_text("population,participant\n")
    with pytest.raises(ValueError, match="lacks columns"):
        sm.read_participants(p)
