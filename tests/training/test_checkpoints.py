"""Checkpoints and the loop: bit-exact save/restore, exact resume of params and data stream, SIGTERM."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import jax
import numpy as np
import pytest

from gensim_jax.training import (
    BetaBernoulliTarget, Checkpointer, CrossEntropy, GenSimRegression, make_train_step, read_metrics, restore_or_init,
    train)
from tests.training._tiny import stream, tiny_state

REPO = Path(__file__).resolve().parents[2]


def assert_trees_equal(a, b):
    jax.tree.map(lambda x, y: np.testing.assert_array_equal(np.asarray(x), np.asarray(y)), a, b)


def test_save_restore_is_bit_identical(tmp_path):
    state = tiny_state(batchnorm=True)
    state = state.replace(step=state.step + 7)
    with Checkpointer(tmp_path / "ck", save_every=7) as ck:
        assert ck.maybe_save(state, {"position": 7, "note": "x"})
        ck.wait()
        fresh = tiny_state(seed=99, batchnorm=True)
        restored, data, resumed = restore_or_init(ck, fresh)
        assert resumed and data == {"position": 7, "note": "x"}
        assert ck.all_steps() == [7] and not ck.maybe_save(state.replace(step=state.step + 1))
    for field in ("step", "params", "batch_stats", "opt_state", "rng"):
        assert_trees_equal(getattr(restored, field), getattr(state, field))
    # nothing but arrays and JSON on disk: no pickle files
    files = [p.name for p in (tmp_path / "ck").rglob("*") if p.is_file()]
    assert not any(f.endswith((".pkl", ".pickle")) for f in files)


def test_restore_or_init_without_checkpoint_returns_init(tmp_path):
    s = tiny_state()
    with Checkpointer(tmp_path) as ck:
        out, data, resumed = restore_or_init(ck, s)
    assert out is s and data == {} and not resumed


def test_resume_continues_params_and_stream_exactly(tmp_path):
    obj = GenSimRegression(target=BetaBernoulliTarget(), input_key="x")
    step = make_train_step(obj)  # compiled once, shared by the three runs
    full = train(tiny_state(), obj, stream(5), num_steps=6, workdir=tmp_path / "a", checkpoint_every=2,
                 progress=False, config={"lr": 0.05}, seed=11, step_fn=step)
    first = train(tiny_state(), obj, stream(5), num_steps=3, workdir=tmp_path / "b", checkpoint_every=2,
                  progress=False, step_fn=step)
    assert first.start_step == 0 and int(first.state.step) == 3
    # a restart with a different init: everything must come from the checkpoint of step 3
    second = train(tiny_state(seed=42), obj, stream(5), num_steps=6, workdir=tmp_path / "b", checkpoint_every=2,
                   progress=False, step_fn=step)
    assert second.start_step == 3
    assert_trees_equal(second.state.params, full.state.params)
    assert_trees_equal(second.state.opt_state, full.state.opt_state)
    losses_full = [r["loss"] for r in read_metrics(tmp_path / "a") if "loss" in r]
    losses_resumed = [r["loss"] for r in read_metrics(tmp_path / "b") if "loss" in r]
    assert losses_resumed == losses_full and len(losses_full) == 6
    record = json.loads((tmp_path / "a" / "config.json").read_text())
    assert record["seed"] == 11 and record["config"] == {"lr": 0.05} and record["devices"]["device_count"] >= 1


def test_eval_hook_and_data_exhaustion(tmp_path):
    calls = []

    def eval_fn(state, step):
        calls.append(step)
        return {"score": float(step)}

    res = train(tiny_state(), CrossEntropy(input_key="x"), stream(0), num_steps=4, workdir=tmp_path,
                eval_every=2, eval_fn=eval_fn, progress=False, log_every=2)
    assert calls == [2, 4]
    evals = [r for r in res.history if "eval/score" in r]
    assert [r["step"] for r in evals] == [2, 4]
    assert [r["step"] for r in res.history if "loss" in r] == [2, 4]

    def short(position):
        return iter([])

    with pytest.raises(ValueError, match="data stream ended"):
        train(tiny_state(), CrossEntropy(input_key="x"), short, num_steps=9, workdir=tmp_path / "s", progress=False)


def test_sigterm_saves_and_restart_resumes(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO), JAX_PLATFORMS="cpu")
    proc = subprocess.Popen([sys.executable, "-m", "tests.training._tiny", str(tmp_path), "100000", "0.05"],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 90
        line = ""
        while "READY" not in line and time.time() < deadline:
            line = proc.stdout.readline()
            if not line and proc.poll() is not None:
                break
        assert "READY" in line, proc.stderr.read()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "DONE" not in out  # it stopped early
    with Checkpointer(tmp_path / "checkpoints") as ck:
        saved = ck.latest_step()
    assert saved is not None and 1 <= saved < 100000
    history = read_metrics(tmp_path)
    assert history[-1]["step"] == saved
    step = make_train_step(CrossEntropy(input_key="x"))
    res = train(tiny_state(), CrossEntropy(input_key="x"), stream(1), num_steps=saved + 2, workdir=tmp_path,
                progress=False, step_fn=step)
    assert res.start_step == saved and int(res.state.step) == saved + 2
    # the continued run equals an uninterrupted run of saved + 2 steps
    ref = train(tiny_state(), CrossEntropy(input_key="x"), stream(1), num_steps=saved + 2, workdir=tmp_path / "ref",
                progress=False, step_fn=step)
    assert_trees_equal(res.state.params, ref.state.params)
