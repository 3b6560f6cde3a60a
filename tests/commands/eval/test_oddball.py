"""python -m eval oddball: --workdir outputs and --export runs against computations written out here."""

from __future__ import annotations

import csv
import json
from importlib import resources

import numpy as np
import pytest
from PIL import Image
from scipy import stats

from gensim_jax.commands.eval import main
from gensim_jax.stimuli import quadrilaterals as q
from tests.commands.eval.conftest import reference_embed

SHAPES = [
    "square",
    "rectangle",
    "losange",
    "parallelogram",
    "rightKite",
    "kite",
    "isoTrapezoid",
    "hinge",
    "rustedHinge",
    "trapezoid",
    "random",
]


def _png_ok(path):
    with Image.open(path) as im:
        assert im.format == "PNG" and im.size[0] > 0 and im.size[1] > 0


def _error_rates_by_loop(emb, deviant, shape_idx):
    errors, trials = np.zeros(11), np.zeros(11)
    for e, d, s in zip(emb, deviant, shape_idx):
        centre = e.mean(axis=0)
        dist = [np.sqrt(np.sum((x - centre) ** 2)) for x in e]
        errors[s] += int(np.argmax(dist)) != d
        trials[s] += 1
    return errors / trials


def _packaged_rates():
    rows = resources.files("gensim_jax").joinpath("assets", "sable_meyer_error_rates.csv").read_text().splitlines()
    table: dict[str, np.ndarray] = {}
    for r in csv.DictReader(line for line in rows if not line.startswith("#")):
        t = table.setdefault(r["population"], np.zeros((2, 11)))
        t[:, SHAPES.index(r["shape"])] = int(r["errors"]), int(r["trials"])
    return table


def test_oddball_trials_workdir(tmp_path):
    rng = np.random.default_rng(3)
    emb = rng.standard_normal((11 * 8, 6, 5))
    dev = rng.integers(0, 6, 88)
    emb[np.arange(88), dev] *= np.repeat(np.linspace(4.0, 1.0, 11), 8)[:, None]  # regular shapes: easier
    shapes = np.repeat(np.array(SHAPES), 8)
    np.savez(tmp_path / "t.npz", embeddings=emb, deviant=dev, shapes=shapes)
    argv = ["oddball", "--trials", str(tmp_path / "t.npz"), "--workdir", str(tmp_path / "wd"), "--readout", "argmax"]
    assert main(argv) == 0
    out = json.loads((tmp_path / "wd" / "oddball.json").read_text())
    want = _error_rates_by_loop(emb, dev, np.repeat(np.arange(11), 8))
    np.testing.assert_allclose(out["error_rate"], want)
    assert out["regularity_spearman"]["rho"] == pytest.approx(stats.spearmanr(want, np.arange(11)).statistic)
    e, t = _packaged_rates()["baboons"]
    assert out["population_correlation"]["baboons"]["r"] == pytest.approx(np.corrcoef(want, e / t)[0, 1])
    assert out["summary"]["models"]["model"]["runs"] == 1
    _png_ok(tmp_path / "wd" / "oddball.png")


def test_oddball_trials_graded_readout(tmp_path):
    rng = np.random.default_rng(4)
    emb = rng.standard_normal((11 * 8, 6, 5))
    dev = rng.integers(0, 6, 88)
    emb[np.arange(88), dev] *= 3.0
    shapes = np.repeat(np.array(SHAPES), 8)
    np.savez(tmp_path / "t.npz", embeddings=emb, deviant=dev, shapes=shapes)
    argv = ["oddball", "--trials", str(tmp_path / "t.npz"), "--workdir", str(tmp_path / "wd"), "--readout", "graded"]
    assert main([*argv, "--target-error", "0.4"]) == 0
    out = json.loads((tmp_path / "wd" / "oddball.json").read_text())
    assert out["readout"] == "graded" and out["temperature"] > 0
    # independent softmax observer at the reported temperature
    d = np.linalg.norm(emb - emb.mean(1, keepdims=True), axis=-1)
    z = d / d.std() / out["temperature"]
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    err = 1 - p[np.arange(88), dev]
    np.testing.assert_allclose(out["error_rate"], err.reshape(11, 8).mean(1), rtol=1e-9)
    assert np.mean(out["error_rate"]) == pytest.approx(0.4, abs=1e-8)


@pytest.mark.slow
def test_oddball_exports_per_run_and_across_runs(exports, tmp_path):
    wd = tmp_path / "wd"
    assert (
        main(
            [
                "oddball",
                "--export",
                *map(str, exports),
                "--trials-per-condition",
                "2",
                "--test-seed",
                "5",
                "--workdir",
                str(wd),
                "--readout",
                "argmax",
            ]
        )
        == 0
    )
    out = json.loads((wd / "oddball.json").read_text())

    test = q.oddball_test_set(seed=5, trials_per_condition=2)
    images = np.round(test.images(32) * 255.0).astype(np.uint8)  # (T, 6, 32, 32) grey, as a run renders them
    per_run = []
    for d in exports:
        emb = reference_embed(d, images.reshape(-1, 32, 32)).reshape(len(test), 6, -1)
        per_run.append(_error_rates_by_loop(emb, test.deviant_position, test.shape))
    per_run = np.array(per_run)
    assert out["test_set"]["trials"] == 88 and [r["seed"] for r in out["runs"]] == [0, 1]
    assert [r["preprocess"] for r in out["runs"]] == ["imagenet", "none"]
    for r, want in zip(out["runs"], per_run):
        np.testing.assert_allclose(r["error_rate"], want)
    rho = stats.spearmanr(per_run.mean(0), np.arange(11)).statistic
    assert out["mean_over_runs"]["regularity_spearman"]["rho"] == pytest.approx(rho)

    table = _packaged_rates()
    humans = ["french_adults_1", "french_adults_2", "1st_graders", "preschoolers", "himbas"]
    human = sum(table[h][0] for h in humans) / sum(table[h][1] for h in humans)
    baboon = table["baboons"][0] / table["baboons"][1]
    r_h = [np.corrcoef(x, human)[0, 1] for x in per_run]
    r_b = [np.corrcoef(x, baboon)[0, 1] for x in per_run]
    # Student's t by hand: pooled variance, dof 2R - 2
    sp2 = (np.var(r_h, ddof=1) + np.var(r_b, ddof=1)) / 2
    t = (np.mean(r_h) - np.mean(r_b)) / np.sqrt(sp2 * (2 / len(r_h)))
    m = out["summary"]["models"]["lenet5"]
    np.testing.assert_allclose(m["error_rate_mean"], per_run.mean(0))
    np.testing.assert_allclose(m["error_rate_sem"], per_run.std(0, ddof=1) / np.sqrt(2), atol=1e-12)
    np.testing.assert_allclose(m["r_human"], r_h)
    np.testing.assert_allclose(m["r_baboon"], r_b)
    assert m["comparison"]["t"] == pytest.approx(t) and m["comparison"]["dof"] == 2
    _png_ok(wd / "oddball.png")


def test_oddball_needs_one_input(capsys):
    with pytest.raises(SystemExit):
        main(["oddball", "--workdir", "x"])
