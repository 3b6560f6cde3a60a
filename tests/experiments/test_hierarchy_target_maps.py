"""scripts/hierarchy_target_maps.py: the runner commands and the table's intervals and tests, on made-up results."""

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def maps():
    spec = importlib.util.spec_from_file_location(
        "hierarchy_target_maps", REPO / "scripts" / "hierarchy_target_maps.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


T975 = {2: 4.302652729911275, 4: 2.7764451051977987}  # Student t quantile 0.975 at dof 2, 4 (tables)


def _evaluation(acc, chance=(0.5, 0.25)):
    levels = [
        {"level": i + 1, "num_labels": round(1 / c), "accuracy": a, "chance_uniform": c, "chance_majority": c}
        for i, (a, c) in enumerate(zip(acc, chance))
    ]
    score = sum(math.log(a / c) for a, c in zip(acc, chance))
    return {"levels": levels, "score_uniform": score, "score_majority": score}


def _results(per_run: dict) -> dict:
    first = next(iter(per_run.values()))[0]["levels"]
    summary = {
        "levels": [lv["level"] for lv in first],
        "num_labels": [lv["num_labels"] for lv in first],
        "chance_uniform": [lv["chance_uniform"] for lv in first],
        "chance_majority": [lv["chance_majority"] for lv in first],
    }
    return {"per_run": per_run, "summary": {k: summary for k in per_run}, "num_steps": 7, "num_eval_images": 12}


def test_collect_intervals_and_welch_tests_against_formulas(maps, tmp_path):
    rng = np.random.default_rng(0)
    unit = [[0.9 + 0.02 * rng.random(), 0.6 + 0.1 * rng.random()] for _ in range(3)]
    raw = [[0.8 + 0.05 * rng.random(), 0.4 + 0.1 * rng.random()] for _ in range(5)]
    base = {"initial": [_evaluation([0.6, 0.3]), _evaluation([0.62, 0.33])], "pixels": [_evaluation([0.7, 0.35])]}
    for name, accs in (("unit", unit), ("raw", raw)):
        (tmp_path / f"gensim_{name}").mkdir()
        res = _results({"gensim": [_evaluation(a) for a in accs], **base})
        (tmp_path / f"gensim_{name}" / "results.json").write_text(json.dumps(res))
    (tmp_path / "gensim_unit" / "wall.json").write_text(json.dumps({"wall_s": 12.0}))
    summary = maps.collect(tmp_path, ["raw", "exp", "unit"])  # no exp workdir: skipped
    assert list(summary["rows"]) == ["gensim (raw)", "gensim (unit)", "initial", "pixels"]
    assert summary["wall_s"] == {"gensim (raw)": None, "gensim (unit)": 12.0}
    for name, accs in (("unit", unit), ("raw", raw)):
        a = np.array(accs)
        row = summary["rows"][f"gensim ({name})"]
        n = len(a)
        for j in range(2):
            m, lo, hi = row["accuracy"][j]
            half = T975[n - 1] * a[:, j].std(ddof=1) / math.sqrt(n)
            assert (
                m == pytest.approx(a[:, j].mean())
                and (hi - m) == pytest.approx(half)
                and (m - lo) == pytest.approx(half)
            )
        scores = np.log(a[:, 0] / 0.5) + np.log(a[:, 1] / 0.25)
        assert row["score_uniform"][0] == pytest.approx(scores.mean())
    assert summary["rows"]["pixels"]["score_uniform"][1:] == [None, None]  # one run: no interval
    # Welch: t = (mx - my) / sqrt(vx/nx + vy/ny), Welch-Satterthwaite dof
    x = np.array(summary["rows"]["gensim (unit)"]["per_run_score_uniform"])
    y = np.array(summary["rows"]["gensim (raw)"]["per_run_score_uniform"])
    vx, vy = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    test = summary["tests"]["gensim (unit) vs gensim (raw)"]
    assert test["t"] == pytest.approx((x.mean() - y.mean()) / math.sqrt(vx + vy))
    assert test["dof"] == pytest.approx((vx + vy) ** 2 / (vx**2 / (len(x) - 1) + vy**2 / (len(y) - 1)))
    assert "gensim (unit) vs pixels" not in summary["tests"]  # one run: no test
    text = maps.table(summary)
    assert "| gensim (unit) | 3 |" in text and "| 12 |" in text and "| chance (uniform) | | 0.500 | 0.250 |" in text


def test_train_command_is_the_runner_command(maps, tmp_path):
    cmd = maps.train_command(tmp_path / "w", "gensim", 5, 80, 0, "exp")
    assert cmd[1:] == [
        "-m", "train", "imagenet_hierarchy", "--config", "cpu_small", "--objective", "gensim",
        "--workdir", str(tmp_path / "w"), "--set", "num_runs=5", "num_steps=80", "seed=0", "objectives.gensim.target_transform=exp",
    ]  # fmt: skip
    assert "target_transform" not in " ".join(maps.train_command(tmp_path, "class_triplet,simclr", 5, 80, 0))


def test_target_values_are_eq4_on_the_2_3_3_tree(maps):
    # separation depth K = 0..3: s = 1, 2, (2 + 6) / 2, (2 + 6 + 18) / 3; per class 9, 6, 2, 1 classes at each K
    got = maps.target_values(["raw", "exp", "unit", "standardized"])
    s = np.array([1.0, 2.0, 4.0, 26.0 / 3.0])
    np.testing.assert_allclose(got["log_s"], np.log(s), atol=1e-11)
    assert got["pairs"] == [18 * 9, 18 * 6, 18 * 2, 18]
    np.testing.assert_allclose(got["exp"], s, rtol=1e-12)
    np.testing.assert_allclose(got["unit"], np.log(s) / np.log(26 / 3), rtol=1e-12)
    w = np.array([9, 6, 2, 1]) / 18
    mean = (w * np.log(s)).sum()
    std = math.sqrt((w * (np.log(s) - mean) ** 2).sum())
    np.testing.assert_allclose(got["standardized"], (np.log(s) - mean) / std, rtol=1e-5)
