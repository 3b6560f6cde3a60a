"""Forks written for an earlier interface of ``gensim_jax.training.experiment``: refused with one line naming the
change, or, for a deprecated spelling, trained with a warning naming the replacement.

``forks/poisson_gamma_run_level_learning_rate.py`` is the documentation's example with one renamed name in its
previous spelling (a run-level ``learning_rate``, now ``optim.learning_rate``, deprecated in 0.2.0): it trains,
with a :class:`~gensim_jax.deprecation.GensimJaxDeprecationWarning` naming ``optim.learning_rate``. The two other
files under ``forks/`` are the documentation's own fork example as it stood at two earlier
interfaces, kept unchanged: the first (a ``Config`` with ``objectives: tuple`` and a run-level
``learning_rate``, docs/EXPERIMENTS.md before 0883d40) and the per-arm hooks (``model``,
``objective``, ``batches``, ``evaluate_run``, ..., docs/EXPERIMENTS.md at ef871ad).  The current
shape is trained by ``tests/training/test_experiments_doc.py``.
"""

from __future__ import annotations

import json
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


LEARNING_RATE_FORK = FORKS / "poisson_gamma_run_level_learning_rate.py"
DEPRECATION = (
    "PoissonGamma.Config.learning_rate is deprecated since gensim-jax 0.2.0 and will be removed in 0.3.0: "
    "use optim.learning_rate"
)


@pytest.mark.slow  # trains two arms for a few steps (about 10 s)
def test_a_fork_with_a_deprecated_spelling_trains_and_warns_naming_the_new_one(tmp_path):
    """The old spelling loads with the warning (pointing at the fork's own class), its value is the learning rate
    the run uses, and the deprecated runner name trains it."""
    from gensim_jax.deprecation import GensimJaxDeprecationWarning

    with pytest.warns(GensimJaxDeprecationWarning, match=DEPRECATION) as caught:
        fork = registry.load(str(LEARNING_RATE_FORK))
    assert any(w.filename == str(LEARNING_RATE_FORK) for w in caught)  # where the old spelling is written
    config = fork.get_config("small", num_steps=3, log_every=1, **{"data.num_sources": 16})
    assert config.learning_rate == config.optim.learning_rate == 3e-3
    with pytest.warns(GensimJaxDeprecationWarning, match="run_experiment is deprecated .*use train_and_evaluate"):
        from gensim_jax.training.runner import run_experiment
    results = run_experiment(fork, config, tmp_path / "run", progress=False)
    assert set(results["evaluations"]) == {"untrained", "gensim", "supervised"} and results["num_steps"] == 3
    assert json.loads((tmp_path / "run" / "config.json").read_text())["config"]["optim"]["learning_rate"] == 3e-3


@pytest.mark.slow  # a fresh interpreter
def test_the_command_prints_the_deprecation_on_one_line_and_trains(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "gensim_jax.commands", "train", str(LEARNING_RATE_FORK), "--config", "small"]
        + ["--set", "num_steps=2", "data.num_sources=16", "learning_rate=0.01", "--workdir", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    warned = [line for line in done.stderr.splitlines() if "deprecated" in line]
    assert warned == [
        f"warning: {DEPRECATION} (declare optim: OptimConfig = OptimConfig(learning_rate=...); "
        "meanwhile the run-level field sets optim.learning_rate)"
    ], done.stderr[-3000:]
    config = json.loads((tmp_path / "run" / "config.json").read_text())["config"]
    assert config["optim"]["learning_rate"] == 0.01 == config["learning_rate"], config
