"""gensim-jax runs compare: a table of final metrics and a PNG of the loss curves of several runs."""

import json

import numpy as np
import pytest
from PIL import Image

from gensim_jax import runs
from gensim_jax.commands import main as cli
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


def test_rows_hold_the_values_of_the_last_step(tmp_path):
    la = _make_run(tmp_path / "x" / "run", seed=0, eval_acc=0.5)
    lb = _make_run(tmp_path / "y" / "run", seed=3)
    rows = runs.compare_runs([tmp_path / "x" / "run", tmp_path / "y" / "run"], keys=["loss", "eval/*"])
    assert [r["run"] for r in rows] == ["x/run", "y/run"]  # same directory names: parents added
    assert rows[0]["loss"] == la[20] and rows[0]["eval/fewshot/accuracy"] == 0.5
    assert rows[1]["loss"] == lb[20] and rows[1]["eval/fewshot/accuracy"] is None
    assert set(rows[0]) == {"run", "path", "seed", "step", "version", "commit", "loss", "eval/fewshot/accuracy"}


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
    with pytest.raises(ValueError, match="cut/metrics.jsonl holds no readable record"):
        runs.read_run(tmp_path / "cut")


def test_json_output(tmp_path, capsys):
    _make_run(tmp_path / "r", seed=4)
    assert cli.main(["runs", "compare", str(tmp_path / "r"), "--json", "--keys", "perf/*"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["perf/examples_per_s"] == 104.0 and "loss" not in rows[0]
    assert list(rows[0])[6:] == ["perf/data_wait_fraction", "perf/examples_per_s"]


def _lines(d, *records):
    d.mkdir(parents=True, exist_ok=True)
    text = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)
    (d / "metrics.jsonl").write_text(text)
    return d / "metrics.jsonl"


def test_damaged_lines_are_named_and_steps_never_mixed(tmp_path, capsys):
    """A garbage middle line and a final line cut short: each named with file and line; the row is step 20's."""
    path = _lines(
        tmp_path / "run",
        {"step": 10, "time": 1.0, "loss": 2.0, "grad_norm": 1.0},
        "garbage {",
        {"step": 20, "time": 2.0, "grad_norm": 0.5},
    )
    with path.open("a") as f:
        f.write('{"step": 20, "loss": 0.')  # the loss of step 20, cut short by a killed process
    assert cli.main(["runs", "compare", str(tmp_path / "run"), "--json"]) == 0
    out = capsys.readouterr()
    rows = json.loads(out.out)
    assert rows[0]["step"] == 20 and rows[0]["grad_norm"] == 0.5
    assert rows[0]["loss"] is None  # never step 10's loss beside step 20
    err = out.err.strip().splitlines()
    assert err == [
        f"warning: {path}:2: not JSON (Expecting value); skipped",
        f"warning: {path}:4: cut short (the process was killed while writing it?); skipped",
    ]


def test_binary_metrics_are_named(tmp_path, capsys):
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "metrics.jsonl").write_bytes(bytes(range(256)) * 4)
    assert cli.main(["runs", "compare", str(tmp_path / "bin")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    path = tmp_path / "bin" / "metrics.jsonl"
    assert all(line.startswith(f"warning: {path}:") for line in err[:-1]) and len(err) == 5 + 1  # 5 lines, one error
    assert f"warning: {path}:2: not UTF-8 text (binary content?); skipped" in err
    assert err[-1] == (f"gensim-jax runs compare: error: {tmp_path / 'bin' / 'metrics.jsonl'} holds no readable record")


def test_many_damaged_lines_are_counted_after_the_first_few(tmp_path):
    _lines(tmp_path / "r", {"step": 1, "loss": 1.0}, *["x"] * 9)
    seen = []
    records = runs.read_jsonl(tmp_path / "r" / "metrics.jsonl", warn=seen.append)
    assert len(records) == 1 and len(seen) == runs.MAX_LINE_WARNINGS + 1
    assert seen[-1].endswith("4 more unreadable lines skipped (9 in all)")


def test_result_metrics_and_config_fields_are_columns(tmp_path, capsys):
    """The runner's final ``result/*`` values are shown by default; --config-fields adds config columns."""
    for name, lr in (("a", 0.1), ("b", 0.01)):
        d = tmp_path / name
        _lines(d, {"step": 5, "loss": 1.0}, {"step": 5, "result/accuracy": lr * 5})
        # a runner's config.json: nested sections (optim, objectives.<arm>, ...)
        sections = {"optim": {"learning_rate": lr, "optimizer": "adam"}, "objectives": {"simclr": {"dims": [8, 4]}}}
        (d / "config.json").write_text(json.dumps({"seed": 0, "config": {"num_steps": 5, **sections}}))
    argv = ["runs", "compare", str(tmp_path / "a"), str(tmp_path / "b")]
    assert cli.main([*argv, "--config-fields", "optim.learning_rate", "objectives.*"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].split() == [
        "run",
        "seed",
        "step",
        "config.optim.learning_rate",
        "config.objectives.simclr.dims",
        "loss",
        "result/accuracy",
    ]
    assert lines[1].split() == ["a", "0", "5", "0.1", "[8,4]", "1", "0.5"]
    assert lines[2].split() == ["b", "0", "5", "0.01", "[8,4]", "1", "0.05"]


def test_runs_of_different_commits_are_flagged(tmp_path, capsys):
    for name, commit, dirty in (("a", "1" * 40, False), ("b", "2" * 40, True)):
        d = tmp_path / name
        _lines(d, {"step": 1, "loss": 1.0})
        prov = {"gensim_jax": "0.1.0", "git": {"commit": commit, "dirty": dirty}}
        (d / "config.json").write_text(json.dumps({"seed": 0, "config": {}, "provenance": prov}))
    assert cli.main(["runs", "compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    out = capsys.readouterr()
    lines = out.out.strip().splitlines()
    assert lines[0].split() == ["run", "seed", "step", "commit", "loss"]  # the version is the same: not shown
    assert lines[1].split()[3] == "1111111" and lines[2].split()[3] == "2222222+dirty"
    assert out.err.strip() == "warning: these runs differ in git commit (a: 0.1.0 1111111; b: 0.1.0 2222222+dirty)"


def test_unreadable_config_is_named(tmp_path, capsys):
    _lines(tmp_path / "r", {"step": 1, "loss": 1.0})
    (tmp_path / "r" / "config.json").write_text("{nope")
    rows = runs.compare_runs([tmp_path / "r"])
    assert rows[0]["seed"] is None
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"warning: {tmp_path / 'r' / 'config.json'}:1: cannot be read as JSON")


def _demo_layout(root):
    """make demo's layout, by hand: two workdirs, three runs each, of 2 steps; supervised run2 stopped at step 1."""
    expected = {}
    for workdir, arm, acc in (("gensim-deviants", "gensim", 0.25), ("supervised-references", "supervised", 0.5)):
        for r in range(3):
            d = root / workdir / arm / f"run{r}"
            last = 1 if (arm, r) == ("supervised", 2) else 2
            records = [{"step": s, "loss": 3.0 - s - 0.1 * r} for s in range(1, last + 1)]
            if last == 2:
                records.append({"step": 2, "result/graded/mean": acc + 0.01 * r})
            _lines(d, *records)
            (d / "config.json").write_text(json.dumps({"seed": r, "config": {"num_steps": 2}}))
            expected[f"{workdir}/{arm}/run{r}"] = (last, records[last - 1]["loss"], last == 2, acc + 0.01 * r)
    return expected


def test_runs_dir_lists_every_run_below_it(tmp_path, capsys):
    expected = _demo_layout(tmp_path / "runs" / "demo")
    (tmp_path / "runs" / "demo" / "gensim-deviants" / "gensim" / "run0" / "export").mkdir()  # not a run: not listed
    assert cli.main(["runs", str(tmp_path / "runs" / "demo")]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == f"6 run(s) under {tmp_path / 'runs' / 'demo'} (5 finished):"
    assert lines[1].split() == ["run", "steps", "loss", "status", "result/graded/mean"]
    assert lines[-1] == f"all final metrics: gensim-jax runs compare {tmp_path / 'runs' / 'demo'}"
    rows = [line.split() for line in lines[2:-1]]
    assert [r[0] for r in rows] == list(expected)
    for row in rows:
        last, loss, finished, acc = expected[row[0]]
        assert row[1] == f"{last}/2" and float(row[2]) == pytest.approx(loss)
        assert row[3] == ("finished" if finished else "unfinished")
        assert row[4] == (f"{acc:.6g}" if finished else "-")
    # --json: the same rows
    assert cli.main(["runs", "list", str(tmp_path / "runs" / "demo"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(r["run"], r["status"]) for r in data] == [(r[0], r[3]) for r in rows]


def test_bare_runs_lists_runs_under_dot_runs_or_says_there_is_none(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["runs"]) == 0
    assert capsys.readouterr().out.strip().splitlines() == [
        "no ./runs directory here: give the directory of your runs (gensim-jax runs DIR)"
    ]
    _demo_layout(tmp_path / "runs" / "demo")
    assert cli.main(["runs"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("6 run(s) under runs (5 finished):") and "demo/gensim-deviants/gensim/run0" in out


def test_compare_takes_workdirs_and_run_directories(tmp_path, capsys):
    expected = _demo_layout(tmp_path / "runs" / "demo")
    assert cli.main(["runs", "compare", str(tmp_path / "runs" / "demo"), "--keys", "loss"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].split() == ["run", "seed", "step", "loss"]
    names = [line.split()[0] for line in lines[1:]]
    assert names == [k.split("/", 1)[1] for k in expected]  # shortest distinct names: <arm>/run<r>
    for line, (last, loss, _, _) in zip(lines[1:], expected.values()):
        assert int(line.split()[2]) == last and float(line.split()[3]) == pytest.approx(loss)
    # a workdir and a run directory together, the run given twice: each run once
    run = tmp_path / "runs" / "demo" / "gensim-deviants" / "gensim" / "run1"
    paths = runs.expand_run_dirs([tmp_path / "runs" / "demo" / "gensim-deviants", run])
    assert paths == [tmp_path / "runs" / "demo" / "gensim-deviants" / "gensim" / f"run{r}" for r in range(3)]


def test_runs_errors_are_one_line_and_name_no_internal_names(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    for argv, line in (
        (["runs", str(tmp_path / "nope")], f"gensim-jax runs: error: {tmp_path / 'nope'}: no such directory"),
        (["runs", str(tmp_path / "empty")], f"gensim-jax runs: error: {tmp_path / 'empty'}: no run in it or below"),
        (["runs", "compare", str(tmp_path / "empty")], f"gensim-jax runs compare: error: {tmp_path / 'empty'}: no run"),
    ):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(line), err
    with pytest.raises(SystemExit):
        cli.main(["runs", "compare"])
    err = capsys.readouterr().err
    assert "required: DIR" in err and "runs_command" not in err
    with pytest.raises(SystemExit):
        cli.main(["runs", "--help"])
    out = capsys.readouterr().out
    assert "gensim-jax runs [DIR]" in out and "runs_command" not in out
