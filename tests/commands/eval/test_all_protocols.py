"""The python -m eval drivers run end to end on small synthetic inputs."""

import json

import numpy as np
import pytest

from gensim_jax.commands.eval import main
from gensim_jax.evaluation.sable_meyer import SHAPES


def test_unknown_protocol_lists_protocols(capsys):
    assert main(["nope"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "unknown protocol 'nope'" in err[0] and "oddball" in err[0]


def test_oddball_cli(tmp_path, capsys):
    rng = np.random.default_rng(0)
    t = 11 * 6
    e = rng.standard_normal((t, 6, 4))
    dev = np.tile(np.arange(6), 11)
    e[np.arange(t), dev] += 20.0
    # one deliberately wrong trial for "random" so the correlations are defined
    e2 = e.copy()
    e2[-1] = rng.standard_normal((6, 4))
    e2[-1, 0] += 30.0
    np.savez(tmp_path / "trials.npz", embeddings=e2, deviant=dev, shapes=np.repeat(np.array(SHAPES), 6))
    argv = [
        "oddball",
        "--trials",
        str(tmp_path / "trials.npz"),
        "--out",
        str(tmp_path / "o.json"),
        "--readout",
        "argmax",
    ]
    assert main(argv) == 0
    out = json.loads((tmp_path / "o.json").read_text())
    assert out["error_rate"][:10] == [0.0] * 10 and out["error_rate"][10] == pytest.approx(1 / 6)
    assert set(out["population_correlation"]) >= {"baboons", "french_adults_1"}


def test_oddball_cli_per_subject(tmp_path, shared_dir):
    rng = np.random.default_rng(1)
    e = rng.standard_normal((11 * 12, 6, 4))
    np.savez(
        tmp_path / "trials.npz", embeddings=e, deviant=np.zeros(132, np.int64), shapes=np.repeat(np.array(SHAPES), 12)
    )
    beh = shared_dir / "reference" / "sable_meyer" / "behavior"
    assert (
        main(
            [
                "oddball",
                "--trials",
                str(tmp_path / "trials.npz"),
                "--behavior",
                str(beh / "himbas.csv"),
                str(beh / "MALI.csv"),
                "--out",
                str(tmp_path / "o.json"),
            ]
        )
        == 0
    )
    out = json.loads((tmp_path / "o.json").read_text())
    assert set(out["subject_correlation"]) == {"himbas", "baboons"}
    assert out["subject_correlation"]["baboons"]["n"] == 1
    assert 1 <= out["subject_correlation"]["himbas"]["n"] <= 22


def test_hierarchy_cli(tmp_path):
    assert main(["hierarchy", "--per-leaf", "6", "--out", str(tmp_path / "h.json")]) == 0
    out = json.loads((tmp_path / "h.json").read_text())
    assert [lv["level"] for lv in out["levels"]] == [1, 2, 3] and out["score"] > 0


def test_odd_one_out_cli(tmp_path):
    ids = np.array(["a", "b", "c", "d"])
    np.savez(tmp_path / "emb.npz", ids=ids, embeddings=np.eye(4) + 0.1)
    (tmp_path / "t.csv").write_text(
        "image_1,image_2,image_3,choice,rt,participant\na,b,c,a,1.0,p1\nb,c,d,d,2.0,p1\na,c,d,c,1.5,p2\n"
    )
    assert (
        main(
            [
                "odd_one_out",
                "--trials",
                str(tmp_path / "t.csv"),
                "--embeddings",
                str(tmp_path / "emb.npz"),
                "--out",
                str(tmp_path / "l.json"),
            ]
        )
        == 0
    )
    out = json.loads((tmp_path / "l.json").read_text())
    assert set(out["participants"]) == {"p1", "p2"} and 0 < out["mean_likelihood"] <= 1


def test_geoclidean_cli(shared_dir, tmp_path):
    root = shared_dir / "reference" / "geoclidean"
    assert (
        main(["geoclidean", "--root", str(root), "--concepts", "triangle,ccc", "--out", str(tmp_path / "g.json")]) == 0
    )
    out = json.loads((tmp_path / "g.json").read_text())
    assert out["concepts"] == ["triangle", "ccc"]
    assert 0.5 <= out["per_concept"]["mean"]["acc"] <= 1.0
