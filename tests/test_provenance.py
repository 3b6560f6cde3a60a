"""A run says what produced it: provenance in config.json, --version, the config in TensorBoard's HParams
plugin, ``time`` across resumes, damaged lines named on resume, the resume hint naming the command typed."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import gensim_jax
from gensim_jax import provenance
from gensim_jax.commands import main as cli

REPO = Path(__file__).resolve().parents[1]


def _git(*args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@needs_git
def test_provenance_names_version_commit_and_libraries():
    import jax  # the device entries are filled when JAX is loaded (a run always has it)

    record = provenance.provenance()
    assert record["gensim_jax"] == gensim_jax.__version__
    git = record["git"]
    if (REPO / ".git").exists():  # a checkout (a worktree has a .git file)
        assert git["commit"] == _git("rev-parse", "HEAD", cwd=REPO)
        assert git["dirty"] == bool(_git("status", "--porcelain", "--untracked-files=no", cwd=REPO))
    for lib in ("python", "jax", "jaxlib", "flax", "optax", "orbax-checkpoint", "tensorflow"):
        assert lib in record["versions"]
    assert record["versions"]["jax"] == jax.__version__
    assert record["process_count"] == 1 and record["device_kinds"] == sorted({d.device_kind for d in jax.devices()})


@needs_git
def test_git_state_of_a_checkout_a_dirty_one_and_an_installed_copy(tmp_path):
    repo = tmp_path / "checkout"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "a.py").write_text("x = 1\n")
    _git("init", "-q", cwd=repo)
    _git("add", ".", cwd=repo)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one", cwd=repo)
    clean = provenance.git_state(repo / "pkg")
    assert clean == {"commit": _git("rev-parse", "HEAD", cwd=repo), "dirty": False, "root": str(repo)}
    (repo / "pkg" / "a.py").write_text("x = 2\n")
    assert provenance.git_state.__wrapped__(repo / "pkg")["dirty"] is True  # uncached: the state now
    site = tmp_path / "site-packages" / "pkg"
    shutil.copytree(repo / "pkg", site)
    assert provenance.git_state(site) == "not a checkout"


def test_short_commit():
    assert provenance.short_commit({"git": {"commit": "a" * 40, "dirty": True}}) == "aaaaaaa+dirty"
    assert provenance.short_commit({"git": "not a checkout"}) == "not a checkout"
    assert provenance.short_commit(None) is None


def test_version_flag(capsys):
    assert cli.main(["--version"]) == 0
    first, libs = capsys.readouterr().out.strip().splitlines()
    assert first.startswith(f"gensim-jax {gensim_jax.__version__} (")
    assert re.search(r"\(git [0-9a-f]{12}( \(dirty\))? in |\(not a checkout\)|\(git not available\)", first)
    assert "jax " in libs and "flax " in libs and "optax " in libs


def test_command_line_and_resume_hint():
    provenance.set_command("python -m train", ["quadrilaterals", "--config", "demo"], sub="train")
    try:
        assert provenance.command_prefix("train") == "python -m train"
        assert provenance.command_line(["--resume"]) == "python -m train quadrilaterals --config demo --resume"
    finally:
        provenance._COMMAND.update(prefix={}, argv=None)
    assert provenance.command_line() is None and provenance.command_prefix("eval") == "gensim-jax eval"


def test_save_run_config_records_provenance(tmp_path):
    from gensim_jax.training.loop import save_run_config

    provenance.set_command("gensim-jax train", ["x"], sub="train")
    try:
        record = json.loads(save_run_config(tmp_path, {"lr": 0.1}, seed=3).read_text())
    finally:
        provenance._COMMAND.update(prefix={}, argv=None)
    prov = record["provenance"]
    assert record["seed"] == 3 and record["config"] == {"lr": 0.1}
    assert prov["gensim_jax"] == gensim_jax.__version__ and prov["command"] == "gensim-jax train x"
    assert prov["versions"]["jax"] and prov["process_count"] == 1 and prov["device_kinds"]
    assert prov["git"] == provenance.git_state()


# -- TensorBoard: the HParams plugin and the config text --------------------------------------------
def _hparams_and_texts(logdir):
    """``(session_start hparams {name: value}, {text tag: str}, scalar tags)`` read back from the event files."""
    import tensorflow as tf
    from tensorboardX.proto.plugin_hparams_pb2 import HParamsPluginData
    from tensorflow.core.util import event_pb2

    hparams, texts, scalars = {}, {}, set()
    for path in sorted(Path(logdir).glob("events.out.tfevents.*")):
        for raw in tf.data.TFRecordDataset(str(path)):
            ev = event_pb2.Event.FromString(raw.numpy())
            for v in ev.summary.value:
                plugin = v.metadata.plugin_data.plugin_name
                if plugin == "hparams":
                    assert v.tag == "_hparams_/session_start_info"  # no experiment summary: TB gathers the sweep
                    data = HParamsPluginData.FromString(v.metadata.plugin_data.content)
                    for k, hv in data.session_start_info.hparams.items():
                        hparams[k] = getattr(hv, hv.WhichOneof("kind"))
                elif plugin == "text":
                    texts[v.tag] = v.tensor.string_val[0].decode()
                elif v.WhichOneof("value") == "simple_value":
                    scalars.add(v.tag)
    return hparams, texts, scalars


@pytest.mark.slow
def test_config_goes_to_the_hparams_plugin_and_the_text_tab(tmp_path):
    from gensim_jax.training.records import RunRecorder

    config = {"learning_rate": 0.01, "optim": {"name": "adam", "betas": [0.9, 0.99]}, "pretrained": False}
    with RunRecorder(tmp_path) as rec:
        written = rec.write_config({**config, "seed": 4, "skip": None})
        rec.write(1, {"loss": 1.5})
        rec.write(1, {"result/accuracy": 0.75})
    hparams, texts, scalars = _hparams_and_texts(tmp_path)
    assert (
        hparams
        == written
        == {
            "learning_rate": 0.01,
            "optim.name": "adam",
            "optim.betas": "[0.9,0.99]",
            "pretrained": False,
            "seed": 4.0,
        }
    )
    assert json.loads(texts["config/text_summary"].strip("`\n"))["optim"] == config["optim"]
    assert scalars == {"loss", "result/accuracy"}  # the HParams tab's metrics


@pytest.mark.slow
def test_a_training_run_writes_its_config_and_provenance_to_tensorboard(tmp_path):
    from gensim_jax.training import CrossEntropy, train
    from tests.training._tiny import stream, tiny_state

    train(
        tiny_state(),
        CrossEntropy(input_key="x"),
        stream(1),
        num_steps=2,
        log_every=1,
        workdir=tmp_path,
        progress=False,
        config={"lr": 0.05, "arm": "supervised"},
        seed=7,
    )
    hparams, texts, scalars = _hparams_and_texts(tmp_path)
    assert hparams["lr"] == 0.05 and hparams["arm"] == "supervised" and hparams["seed"] == 7
    assert hparams["gensim_jax"] == gensim_jax.__version__
    assert hparams.get("commit") == provenance.short_commit({"git": provenance.git_state()})
    assert "loss" in scalars and "config/text_summary" in texts
    shown = json.loads(texts["provenance/text_summary"].strip("`\n"))
    assert shown["gensim_jax"] == gensim_jax.__version__ and shown["versions"]["jax"] and shown["process_count"] == 1
    record = json.loads((tmp_path / "config.json").read_text())
    assert record["provenance"]["gensim_jax"] == gensim_jax.__version__


# -- metrics.jsonl across a resume -----------------------------------------------------------------
class _Clock:
    def __init__(self, t):
        self.t = t

    def __call__(self):
        return self.t


def test_time_keeps_counting_across_a_resume_and_damaged_lines_are_named(tmp_path, capsys):
    from gensim_jax.training.records import RunRecorder

    clock = _Clock(1000.0)
    with RunRecorder(tmp_path, tensorboard=False, clock=clock) as rec:
        for step in (1, 2, 3):
            clock.t += 10.0
            rec.write(step, {"loss": 1.0})
    path = tmp_path / "metrics.jsonl"
    with path.open("a") as f:
        f.write("garbage\n")
        f.write('{"step": 4, "lo')  # cut short by the crash
    clock = _Clock(5000.0)  # a later session: its own clock starts again
    with RunRecorder(tmp_path, start_step=2, tensorboard=False, clock=clock) as rec:
        clock.t += 5.0
        rec.write(3, {"loss": 0.5})
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(r["step"], r["time"]) for r in lines] == [(1, 10.0), (2, 20.0), (3, 25.0)]
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"warning: {path}:4: not JSON (Expecting value); dropped",
        f"warning: {path}:5: cut short (the process was killed while writing it?); dropped",
    ]


@pytest.mark.slow
def test_the_resume_hint_repeats_the_command_typed(tmp_path, capsys):
    """Ctrl-C: the message tells to run the same command (as typed) with --resume."""
    import os
    import signal

    from gensim_jax.training import CrossEntropy, train
    from tests.training._tiny import stream, tiny_state

    def interrupted(position):
        for i, batch in enumerate(stream(1)(position)):
            if i == 3:
                os.kill(os.getpid(), signal.SIGINT)  # caught by the loop's guard: it saves and stops
            yield batch

    provenance.set_command("gensim-jax train", ["tiny", "--workdir", str(tmp_path)], sub="train")
    try:
        res = train(
            tiny_state(),
            CrossEntropy(input_key="x"),
            interrupted,
            num_steps=1000,
            workdir=tmp_path,
            progress=False,
            exit_on_preemption=False,
            prefetch=0,
        )
    finally:
        provenance._COMMAND.update(prefix={}, argv=None)
    assert res.preempted and res.stop_signal == "SIGINT"
    err = capsys.readouterr().err
    assert f"to resume, run: gensim-jax train tiny --workdir {tmp_path} --resume" in err


@pytest.mark.slow
def test_tensorboards_hparams_backend_lists_the_runs_settings_and_results(tmp_path):
    """TensorBoard's own HParams backend (where installed) sees one session per run, its config and its results."""
    pytest.importorskip("tensorboard.plugins.hparams.backend_context")
    from tensorboard import context
    from tensorboard.backend.event_processing import data_provider
    from tensorboard.backend.event_processing import plugin_event_multiplexer as em
    from tensorboard.plugins import base_plugin
    from tensorboard.plugins.hparams import backend_context

    from gensim_jax.training.records import RunRecorder

    for name, lr in (("lr0.1", 0.1), ("lr0.01", 0.01)):
        with RunRecorder(tmp_path / name / "run0") as rec:
            rec.write_config({"learning_rate": lr, "optim": {"name": "adam"}, "seed": 0})
            rec.write(5, {"loss": 1.0})
            rec.write(5, {"result/accuracy": lr * 5})
    mux = em.EventMultiplexer()
    mux.AddRunsFromDirectory(str(tmp_path))
    mux.Reload()
    dp = data_provider.MultiplexerDataProvider(mux, str(tmp_path))
    ctx = backend_context.Context(base_plugin.TBContext(logdir=str(tmp_path), data_provider=dp, multiplexer=mux))
    rc = context.RequestContext()
    meta = ctx.hparams_metadata(rc, "")
    assert sorted(meta) == ["lr0.01/run0", "lr0.1/run0"]
    exp = ctx.experiment_from_metadata(rc, "", True, meta, ctx.hparams_from_data_provider(rc, "", 1000))
    infos = {h.name: h for h in exp.hparam_infos}
    assert set(infos) == {"learning_rate", "optim.name", "seed"}
    assert (infos["learning_rate"].domain_interval.min_value, infos["learning_rate"].domain_interval.max_value) == (
        0.01,
        0.1,
    )
    assert {m.name.tag for m in exp.metric_infos} == {"loss", "result/accuracy"}
