"""What the eval commands print: a short summary with a Markdown table, or with --json only the JSON.

The tables are parsed and their numbers compared with the JSON and with the run's results.json."""

from __future__ import annotations

import json
import re

import pytest

from gensim_jax.commands.eval import main

pytestmark = pytest.mark.slow  # a short training run


def markdown_tables(text: str) -> list[list[list[str]]]:
    """The Markdown tables of ``text``: each a list of rows (the header first, the ``|---|`` rule left out)."""
    tables, rows = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|") and line.endswith("|"):
            if not re.fullmatch(r"\|(-+\|)+", line.replace(" ", "")):
                rows.append([c.strip() for c in line[1:-1].split("|")])
        elif rows:
            tables.append(rows)
            rows = []
    return tables


def numbers(cell: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", cell)]


@pytest.fixture(scope="module")
def gm_run(tmp_path_factory):
    """A two-epoch Gaussian-mixture run: its workdir and results.json."""
    from gensim_jax.experiments import gaussian_mixture as exp
    from gensim_jax.training.runner import train_and_evaluate

    wd = tmp_path_factory.mktemp("gm")
    config = exp.EXPERIMENT.get_config("paper", epochs=2, **{"eval.num_pairs": 2000, "eval.num_bins": 20})
    train_and_evaluate(exp.EXPERIMENT, config, wd, progress=False)
    return wd, json.loads((wd / "results.json").read_text())


def test_export_prints_a_short_table_of_the_recorded_numbers(gm_run, capsys):
    wd, results = gm_run
    assert main(["export", "--export", str(wd / "gensim" / "run0" / "export")]) == 0
    out = capsys.readouterr().out
    assert len(out.splitlines()) <= 60, out
    (table,) = markdown_tables(out)
    assert table[0] == ["metric", "gensim seed 0"]
    cells = {row[0]: row[1] for row in table[1:]}
    recorded = results["evaluations"]["gensim"][0]
    scalars = {k: v for k, v in recorded.items() if isinstance(v, (int, float))}
    pairs = {k: v for k, v in recorded.items() if isinstance(v, list) and len(v) == 2}
    assert scalars and pairs and set(cells) == set(scalars) | set(pairs)
    for k, v in scalars.items():
        assert numbers(cells[k])[0] == pytest.approx(v, rel=1e-3, abs=1e-12), k
    for k, v in pairs.items():
        assert numbers(cells[k]) == pytest.approx(v, rel=1e-2), k
    assert "--json" in out.splitlines()[-1]


def test_export_json_is_the_only_output_and_the_recorded_evaluation(gm_run, capsys, tmp_path):
    wd, results = gm_run
    out_file = tmp_path / "e.json"
    assert main(["export", "--export", str(wd / "gensim" / "run0" / "export"), "--json", "--out", str(out_file)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(out_file.read_text())
    assert printed["runs"][0]["evaluation"] == results["evaluations"]["gensim"][0]


def test_hierarchy_table_shows_the_numbers_of_its_json(capsys):
    argv = ["hierarchy", "--per-leaf", "4", "--size", "8"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert main([*argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    (table,) = markdown_tables(text)
    assert table[0] == ["level", "labels", "chance", "majority", "accuracy"]
    assert len(table) - 1 == len(data["levels"])
    for row, lv in zip(table[1:], data["levels"]):
        assert int(row[0]) == lv["level"] and int(row[1]) == lv["num_labels"]
        assert float(row[2]) == pytest.approx(lv["chance"], rel=1e-2)
        assert float(row[4]) == pytest.approx(lv["accuracy"], rel=1e-2)
    assert numbers(text.split("log(accuracy / chance):")[1])[0] == pytest.approx(data["score"], rel=1e-3)
