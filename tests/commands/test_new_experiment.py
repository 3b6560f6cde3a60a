"""``gensim-jax new-experiment NAME [--kernel K]``: a one-file experiment that trains at once, for every kernel.

The default kernel's file is trained as a user would (``gensim-jax new-experiment my_exp`` then ``gensim-jax
train my_exp.py --config cpu_small``, fresh interpreters): exit 0, results.json with both arms and the
reference rows, the figure, and a GenSim arm that learned its target.  Every kernel's file is written,
loaded, and its arms built: the first batch matches ``Arm.batch_spec`` and the evaluation runs.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gensim_jax import experiments as registry
from gensim_jax.commands import main as cli
from gensim_jax.commands.new_experiment import KERNELS, render, write
from gensim_jax.parallel import HostShard
from tests.test_architecture import MAX_EXPERIMENT_LINES

ROOT = Path(__file__).resolve().parents[2]


def _gensim_jax(args, cwd, timeout=300):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu"}
    return subprocess.run(
        [sys.executable, "-m", "gensim_jax.commands", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.slow  # two fresh interpreters and a training of two arms (about 40 s on 2 cores)
def test_the_default_file_trains_with_cpu_small_and_writes_results_and_a_figure(tmp_path):
    done = _gensim_jax(["new-experiment", "my_exp"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "gensim-jax train my_exp.py --config cpu_small" in done.stdout
    done = _gensim_jax(["train", "my_exp.py", "--config", "cpu_small", "--workdir", "run"], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    rho = {name: runs[0]["heldout_spearman"] for name, runs in results["evaluations"].items()}
    assert set(rho) == {"stimuli", "untrained", "gensim", "supervised"}
    assert rho["gensim"] > rho["untrained"] + 0.1 and rho["gensim"] > 0.6, rho
    assert (tmp_path / "run" / "my_exp.png").stat().st_size > 1000
    assert "| gensim |" in done.stdout  # the closing table


@pytest.mark.slow  # builds every kernel's model and evaluates it (about 10 s)
@pytest.mark.parametrize("kernel", list(KERNELS))
def test_every_kernel_writes_a_file_whose_arms_build_and_evaluate(kernel, tmp_path):
    path = write(f"exp_{kernel}", kernel, tmp_path)
    assert len(path.read_text().splitlines()) <= MAX_EXPERIMENT_LINES  # the size an experiment file may have
    experiment = registry.load(str(path))
    assert set(experiment.CONFIGS) == {"paper", "cpu_small"} and experiment.NOTES.keys() == experiment.CONFIGS.keys()
    config = experiment.get_config("cpu_small")
    data = experiment.prepare(config)
    for name in config.arms:
        arm = experiment.arm(name, config, data)
        shard = HostShard(index=0, count=1, global_batch=config.batch_size)
        batch = next(iter(arm.batches(config.seed, shard)(0)))
        for key, (shape, _) in arm.batch_spec().items():
            if key != "mask":
                assert np.shape(batch[key]) == (config.batch_size, *shape), (name, key)
        rho = arm.evaluation(arm.model, arm.init_variables(config.seed), config.seed)["heldout_spearman"]
        assert -1.0 <= rho <= 1.0
    baselines = experiment.baselines(config, data)
    assert set(baselines) == {"stimuli", "untrained"}


def test_an_existing_file_is_kept_with_one_line_unless_force(tmp_path, capsys):
    assert cli.main(["new-experiment", "my_exp", "--dir", str(tmp_path)]) == 0
    assert f"wrote {tmp_path / 'my_exp.py'}" in capsys.readouterr().out
    (tmp_path / "my_exp.py").write_text("# mine\n")
    assert cli.main(["new-experiment", "my_exp", "--dir", str(tmp_path), "--kernel", "hierarchy"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("gensim-jax new-experiment: error:") and "--force" in err
    assert (tmp_path / "my_exp.py").read_text() == "# mine\n"
    assert cli.main(["new-experiment", "my_exp.py", "--dir", str(tmp_path), "--kernel", "hierarchy", "--force"]) == 0
    assert (tmp_path / "my_exp.py").read_text() == render("my_exp", "hierarchy")


def _status(argv) -> int:
    try:
        return cli.main(argv)
    except SystemExit as e:  # argparse's usage errors end the process
        return e.code


def test_bad_names_kernels_and_directories_are_one_line(tmp_path, capsys):
    for argv, says in (
        (["new-experiment", "my-exp", "--dir", str(tmp_path)], "Python module name"),
        (["new-experiment", "class", "--dir", str(tmp_path)], "Python module name"),
        (["new-experiment", "x", "--dir", str(tmp_path / "none")], "no such directory"),
        (["new-experiment", "x", "--kernel", "nope"], "invalid choice"),
    ):
        assert _status(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and says in err, (argv, err)
    assert not list(tmp_path.iterdir())


def test_the_file_names_its_class_and_kernel():
    text = render("my_new_exp", "tree")
    assert "class MyNewExp(Experiment):" in text and "EXPERIMENT = MyNewExp()" in text
    assert "--kernel tree" in text and "__" not in text.replace("__init__", "").replace('"""', "")


@pytest.mark.slow  # two ruff processes over five files (about 2 s)
@pytest.mark.skipif(importlib.util.find_spec("ruff") is None, reason="ruff is not installed (the test extra has it)")
def test_the_files_pass_the_projects_lint_and_format(tmp_path):
    """A fork starts from code in the project's style: ruff check and ruff format with pyproject.toml's settings."""
    for kernel in KERNELS:
        write(f"exp_{kernel}", kernel, tmp_path)
    ruff = [sys.executable, "-m", "ruff"]
    settings = ["--config", str(ROOT / "pyproject.toml")]
    for args in (["check", *settings, "--no-cache"], ["format", "--check", *settings, "--no-cache"]):
        done = subprocess.run([*ruff, *args, str(tmp_path)], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
