"""gensim-jax runs compare: a table of final metrics and a PNG of the loss curves of several runs."""

import json

import numpy as np
import pytest
from PIL import Image

from gensim_jax import cli, runs
from gensim_jax.training.records import RunRecorder


def _make_run(d, seed, steps=20, log_every=5, eval_acc=None):
    rng = np.random.default_rng(seed)
    losses = {}
    with RunRecorder(d, tensorboard=False) as rec:
        for s in range(log_every, steps + 1, log_every):
            losses[s] = float(2.0 / s + 0.01 * rng.uniform())
            rec.write(
                s,
                {
                    "loss": losses[s],
                    "grad_norm": 1.0,
                    "perf/examples_per_s": 100.0 + seed,
                    "perf/data_wait_fraction": 0.0,
                },
            )
        if eval_acc is not None:
            rec.write(steps, {"eval/fewshot/accuracy": eval_acc})
    (d / "config.json").write_text(json.dumps({"seed": seed, "config": {}}))
    return losses


def test_compare_prints_both_runs_and_draws_their_curves(tmp_path, capsys):
    a, b = tmp_path / "sweep" / "lr1e-3", tmp_path / "sweep" / "lr1e-2"
    la = _make_run(a, seed=1, eval_acc=0.75)
    lb = _make_run(b, seed=2, steps=30)
    png = tmp_path / "curves.png"
    assert cli.main(["runs", "compare", str(a), str(b), "--out", str(png)]) == 0
    out = capsys.readouterr()
    lines = out.out.strip().splitlines()
    assert lines[0].split() == [
        "run",
        "seed",
        "step",
        "loss",
        "grad_norm",
        "eval/fewshot/accuracy",
        "perf/examples_per_s",
    ]
    assert lines[1].split() == ["lr1e-3", "1", "20", f"{la[20]:.6g}", "1", "0.75", "101"]
    assert lines[2].split() == ["lr1e-2", "2", "30", f"{lb[30]:.6g}", "1", "-", "102"]
    assert str(png) in out.err
    with Image.open(png) as im:
        assert im.format == "PNG" and im.size[0] > 100


def test_rows_hold_the_last_value_of_each_key(tmp_path):
    la = _make_run(tmp_path / "x" / "run", seed=0, eval_acc=0.5)
    lb = _make_run(tmp_path / "y" / "run", seed=3)
    rows = runs.compare_runs([tmp_path / "x" / "run", tmp_path / "y" / "run"], keys=["loss", "eval/*"])
    assert [r["run"] for r in rows] == ["x/run", "y/run"]  # same directory names: parents added
    assert rows[0]["loss"] == la[20] and rows[0]["eval/fewshot/accuracy"] == 0.5
    assert rows[1]["loss"] == lb[20] and rows[1]["eval/fewshot/accuracy"] is None
    assert set(rows[0]) == {"run", "path", "seed", "step", "loss", "eval/fewshot/accuracy"}


def test_cli_errors_are_one_line(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    _make_run(tmp_path / "ok", seed=0)
    for args in (
        [str(tmp_path / "nope")],
        [str(tmp_path / "empty")],
        [str(tmp_path / "ok"), "--out", str(tmp_path / "c.png"), "--metric", "nothing"],
    ):
        assert cli.main(["runs", "compare", *args]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("gensim-jax runs compare: "), err
    (tmp_path / "cut").mkdir()
    (tmp_path / "cut" / "metrics.jsonl").write_text('{"step": 1, "lo')
    with pytest.raises(ValueError, match="no record"):
        runs.read_run(tmp_path / "cut")


def test_json_output(tmp_path, capsys):
    _make_run(tmp_path / "r", seed=4)
    assert cli.main(["runs", "compare", str(tmp_path / "r"), "--json", "--keys", "perf/*"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["perf/examples_per_s"] == 104.0 and "loss" not in rows[0]
    assert list(rows[0])[4:] == ["perf/data_wait_fraction", "perf/examples_per_s"]
