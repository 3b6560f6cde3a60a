"""The folder experiment: its target against the table's kernel, the arms a table allows, a short run from the command
line (results.json with heldout_spearman, k-NN per level, the figure, exports re-evaluated exactly), bad tables."""

from __future__ import annotations

import atexit
import csv
import json
import os
import shutil
import tempfile

import jax.numpy as jnp
import numpy as np
import pytest

from gensim_jax.data import folder as fd
from gensim_jax.experiments import folder as exp
from gensim_jax.stimuli.folder_example import write_example_folder
from tests.experiments._reevaluate import assert_exports_reproduce_the_run

pytest.importorskip("PIL.Image")

_FOLDERS: dict = {}


def example_folder(kind: str = "features", n: int = 48) -> str:
    """A 32-px example folder of ``kind``, written once per test session (removed at exit)."""
    if (kind, n) not in _FOLDERS:
        _FOLDERS[kind, n] = tempfile.mkdtemp(prefix=f"gensim-folder-{kind}-")
        atexit.register(shutil.rmtree, _FOLDERS[kind, n], True)
        write_example_folder(_FOLDERS[kind, n], kind, n, size=32, seed=0)
    return _FOLDERS[kind, n]


TINY = {
    "model.name": "lenet5",
    "data.image_size": 32,
    "batch_size": 8,
    "num_steps": 2,
    "num_runs": 1,
    "objectives.simclr.projection_dims": (16, 8),
    "eval.batch_size": 16,
    "eval.pixel_size": 8,
    "log_every": 1,
}


def tiny_config(directory=None, **kw):
    return exp.EXPERIMENT.get_config("cpu_small", **{**TINY, "data.dir": directory or example_folder(), **kw})


def test_the_gensim_target_is_the_unit_map_of_the_tables_log_s():
    config = tiny_config()
    table = fd.table_of(config.data)
    assert exp.EXPERIMENT.arms(config) == ("gensim", "simclr")  # no label or class_path: no supervised arm
    assert "kernel beta_bernoulli (auto: 6 binary feature column(s)" in exp.EXPERIMENT.intro(config)
    rows = np.array([0, 3, 7, 11, 19])
    ids = table.metadata["target_id"][rows]
    got = np.asarray(exp.gensim_target(table, table.rows(False))({"target_id": jnp.asarray(ids)}))
    lo, hi = table.log_table.min(), table.log_table.max()
    np.testing.assert_allclose(got, (table.log_similarity(rows) - lo) / (hi - lo), rtol=1e-5, atol=1e-6)
    paths = tiny_config(example_folder("class_path"))
    assert exp.EXPERIMENT.arms(paths) == ("gensim", "supervised", "simclr")
    spec = exp.EXPERIMENT.arm("supervised", paths, None).batch_spec()
    assert spec["label"] == ((), np.int32) and spec["image"] == ((32, 32, 3), np.uint8)


@pytest.mark.slow
def test_a_short_run_from_the_command_line_writes_heldout_spearman_knn_and_the_figure(tmp_path, capsys):
    from gensim_jax.commands import main as cli

    folder, workdir = example_folder("class_path"), tmp_path / "run"
    sets = [f"{k}={v}" if not isinstance(v, tuple) else f"{k}={list(v)}" for k, v in TINY.items()]
    argv = [
        "train",
        "folder",
        "--config",
        "cpu_small",
        "--set",
        f"data.dir={folder}",
        *sets,
        'arms=["gensim","supervised"]',
    ]
    assert cli.main([*argv, "--workdir", str(workdir)]) == 0  # simclr's batches: test_per_process_batches
    results = json.loads((workdir / "results.json").read_text())
    rho = results["heldout_spearman"]
    assert set(rho) == {"pixels", "initial", "gensim", "supervised"}
    assert all(-1.0 <= r["mean"] <= 1.0 and r["runs"] == 1 for r in rho.values())
    assert results["kernel"] == "hierarchy" and set(results["knn"]["gensim"]) == {"level 1", "level 2", "level 3"}
    assert (workdir / "folder.png").stat().st_size > 1000
    assert_exports_reproduce_the_run(workdir, results, ("gensim", "supervised"))


def _table_with(directory, row, column, value):
    path = os.path.join(directory, "metadata.csv")
    with open(path) as f:
        rows = list(csv.reader(f))
    rows[row][rows[0].index(column)] = value
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows(rows)


@pytest.mark.parametrize("fault", ["not 0/1", "missing file"])
def test_a_bad_table_is_one_line_and_a_nonzero_exit_before_any_step(tmp_path, capsys, fault):
    from gensim_jax.commands import main as cli

    folder = str(tmp_path / "folder")
    write_example_folder(folder, "features", 12, size=32)
    if fault == "not 0/1":
        _table_with(folder, 5, "stripes", "0.5")
        words = ["metadata.csv row 5, column 'stripes'", "'0.5' is not 0 or 1"]
    else:
        os.remove(os.path.join(folder, "images", "00007.png"))
        words = ["metadata.csv row 8, column 'file'", "images/00007.png does not exist"]
    workdir = tmp_path / "run"
    argv = ["train", "folder", "--config", "cpu_small", "--set", f"data.dir={folder}", "--workdir", str(workdir)]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gensim-jax train folder: error:") and all(w in err[0] for w in words), (
        err
    )
    assert not (workdir / "gensim").exists()  # no run started


def test_the_gaussian_mixture_target_is_eq_h2_on_the_points_affine_over_training_rows(tmp_path):
    from PIL import Image

    rng = np.random.default_rng(0)
    comp = np.repeat([0, 1], 10)
    x = rng.normal(size=(20, 2)) + 3.0 * comp[:, None]
    os.makedirs(tmp_path / "g")
    with open(tmp_path / "g" / "metadata.csv", "w", newline="") as f:
        csv.writer(f).writerows([["file", "u", "v", "component"], *[[f"{i}.png", *x[i], comp[i]] for i in range(20)]])
    for i in range(20):
        Image.fromarray(np.full((6, 6, 3), i, np.uint8)).save(tmp_path / "g" / f"{i}.png")
    config = tiny_config(str(tmp_path / "g"))
    table = fd.table_of(config.data)
    arm = exp.EXPERIMENT.arm("gensim", config, None)
    assert arm.batch_spec()["points"] == ((2,), np.float32)
    rows = np.array([0, 4, 12, 19])
    got = np.asarray(arm.objective.target({"points": jnp.asarray(table.metadata["points"][rows])}))
    ref = table.log_similarity(table.rows(False))
    lo, hi = ref.min(), ref.max()
    np.testing.assert_allclose(got, 2 * (table.log_similarity(rows) - lo) / (hi - lo) - 1, rtol=1e-4, atol=1e-4)
