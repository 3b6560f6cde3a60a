"""Forks written for an earlier interface of ``gensim_jax.training.experiment`` fail with one line naming the change.

The two files under ``forks/`` are the documentation's own fork example as it stood at two earlier
interfaces, kept unchanged: the first (a ``Config`` with ``objectives: tuple`` and a run-level
``learning_rate``, docs/EXPERIMENTS.md before 0883d40) and the per-arm hooks (``model``,
``objective``, ``batches``, ``evaluate_run``, ..., docs/EXPERIMENTS.md at ef871ad).  The current
shape is trained by ``tests/training/test_experiments_doc.py``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gensim_jax import experiments as registry
from gensim_jax.training.experiment import Arm, Experiment, InterfaceError

FORKS = Path(__file__).with_name("forks")
ROOT = Path(__file__).resolve().parents[2]


def test_the_hooks_fork_names_every_hook_and_its_new_place():
    path = FORKS / "poisson_gamma_hooks_interface.py"
    with pytest.raises(InterfaceError) as info:
        registry.load(str(path))
    msg = str(info.value)
    assert msg.startswith(f"{path}: experiment PoissonGamma is written for an earlier interface")
    for hook, new in [
        ("model", "Arm(model=..."),
        ("objective", "Arm(objective=...)"),
        ("batches", "Arm(batches=lambda seed, shard: ...)"),
        ("evaluate_run", "Arm(evaluate=lambda model, variables, seed: ...)"),
        ("metadata_spec", "Arm(metadata=...)"),
        ("example_input", "Arm(example_input=...)"),
    ]:
        assert f"{hook} -> {new}" in msg
    assert "arm(name, config, data) -> Arm" in msg and "Migrating a fork" in msg and "\n" not in msg


def test_the_first_interface_fork_names_objectives_and_learning_rate():
    path = FORKS / "poisson_gamma_first_interface.py"
    with pytest.raises(InterfaceError) as info:
        registry.load(str(path))
    msg = str(info.value)
    assert "objectives is a tuple of arm names" in msg and "the field arms" in msg
    assert "learning_rate; it is now optim.learning_rate" in msg
    assert "per-arm hooks" in msg  # that file has the hooks too


@pytest.mark.slow
@pytest.mark.parametrize("name", ["poisson_gamma_hooks_interface.py", "poisson_gamma_first_interface.py"])
def test_training_an_old_fork_is_one_line_on_stderr(name, tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "train", str(FORKS / name), "--workdir", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "earlier interface" in lines[0] and "internal error" not in lines[0], done.stderr
    assert not (tmp_path / "run").exists()  # refused before anything is written


def test_a_class_in_the_current_shape_is_accepted_and_a_partial_migration_is_not():
    class Current(Experiment):
        def arm(self, name, config, data):
            return Arm(model=None, objective=None, batches=None, example_input=None)

    assert Current().arm("x", None, None).model is None
    with pytest.raises(InterfaceError, match=r"per-arm hooks batches; .*batches -> Arm\(batches="):

        class Half(Experiment):  # arm() added, one hook left behind
            def arm(self, name, config, data): ...

            def batches(self, arm, config, data, seed, shard): ...
