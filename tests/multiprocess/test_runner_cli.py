"""The whole cluster path through the command line: ``python -m train EXPERIMENT`` in 2 processes x 2 devices.

The runner's own path (distributed flags -> ``initialize_distributed``, the run mesh, each process
feeding its rows of every global batch, gathered exports, process-0-only files) on a fork's one-file
experiment (tests/training/tiny_experiment.py: GenSim regression and SimCLR with a BatchNorm head),
against the same command in 1 process x 1 device.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from gensim_jax.training import load_exported
from tests.multiprocess.harness import run

TINY = "tests/training/tiny_experiment.py"
pytestmark = pytest.mark.slow


def _cli(workdir: Path, processes: int, devices: int, env: dict) -> None:
    run(
        [
            "-m",
            "train",
            TINY,
            "--config",
            "tiny",
            "--workdir",
            str(workdir),
            "--set",
            "num_steps=20",
            "optim.learning_rate=0.01",
            "optim.momentum=0.0",
        ],
        processes=processes,
        devices=devices,
        timeout=240,
        env=env,
    )


def _losses(run_dir: Path) -> list:
    return [r["loss"] for r in map(json.loads, (run_dir / "metrics.jsonl").read_text().splitlines()) if "loss" in r]


def test_two_processes_through_the_cli_equal_one_process(tmp_path):
    # float32 matmuls at full precision in both layouts (as tests/multiprocess/worker.py), so that only the
    # order of the cross-device sums differs
    env = {
        "JAX_COMPILATION_CACHE_DIR": os.environ.get("JAX_COMPILATION_CACHE_DIR") or str(tmp_path / "cache"),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_DEFAULT_MATMUL_PRECISION": "highest",
    }
    _cli(tmp_path / "one", 1, 1, env)
    _cli(tmp_path / "two", 2, 2, env)
    one, two = (json.loads((tmp_path / d / "results.json").read_text()) for d in ("one", "two"))
    assert one["devices"]["device_count"] == 1 and two["devices"]["device_count"] == 4
    assert two["devices"]["process_count"] == 2
    for arm in ("gensim", "simclr"):
        a, b = tmp_path / "one" / arm / "run0", tmp_path / "two" / arm / "run0"
        # 1e-4: the cross-device sums are ordered differently and 20 steps amplify the float32 rounding;
        # the 1e-5 equality of the distributed step itself is test_multiprocess.py's (its own worker)
        np.testing.assert_allclose(_losses(b), _losses(a), rtol=1e-4)
        assert len(_losses(a)) == 20
        _, va, _ = load_exported(a / "export")
        _, vb, _ = load_exported(b / "export")
        for x, y in zip(_leaves(va), _leaves(vb)):
            np.testing.assert_allclose(y, x, rtol=1e-4, atol=1e-5)
        assert one["evaluations"][arm][0]["embedding_norm"] == pytest.approx(
            two["evaluations"][arm][0]["embedding_norm"], rel=1e-4
        )
        # process 0 alone writes: every event file carries one process id (the files end with it)
        events = list(b.glob("events.out.tfevents.*"))
        assert events and len({p.name.rsplit(".", 1)[-1] for p in events}) == 1


def _leaves(tree):
    import jax

    return [np.asarray(x) for x in jax.tree_util.tree_leaves(tree)]
