"""--profile-steps: parsing, and a short jitted loop leaves a trace of exactly the chosen steps."""

import gzip
import json

import jax
import jax.numpy as jnp
import pytest

from gensim_jax.training.profiling import ProfileWindow


def test_parse_accepts_start_end_and_rejects_the_rest(tmp_path):
    w = ProfileWindow.parse(" 10:15 ", tmp_path, enabled=True)
    assert (w.start, w.end, w.logdir) == (10, 15, tmp_path)
    assert ProfileWindow.parse(None, tmp_path) is None and ProfileWindow.parse("", tmp_path) is None
    for bad in ("10", "5:2", "3:3", "a:b", "-1:4", "1:2:3"):
        with pytest.raises(ValueError, match="START"):
            ProfileWindow.parse(bad, tmp_path, enabled=True)
    with pytest.raises(ValueError, match="START < END"):
        ProfileWindow(4, 4, tmp_path, enabled=True)


def _loop(prof, steps=6):
    f = jax.jit(lambda w: jnp.tanh(w @ w))
    w = jnp.eye(32) * 0.5
    started, stopped = [], []
    for step in range(steps):
        if prof.maybe_start(step):
            started.append(step)
        with prof.annotate(step):
            w = f(w)
        if prof.maybe_stop(step + 1, wait_for=w):
            stopped.append(step + 1)
    prof.close(wait_for=w)
    return started, stopped


@pytest.mark.slow
def test_a_short_loop_leaves_a_trace_file(tmp_path, capsys):
    prof = ProfileWindow.parse("2:4", tmp_path, enabled=True)
    started, stopped = _loop(prof)
    assert (started, stopped) == ([2], [4])  # traced steps 2 and 3
    traces = list((tmp_path / "plugins" / "profile").glob("*/*.xplane.pb"))
    assert len(traces) == 1 and traces[0].stat().st_size > 0
    assert prof.trace_dir == traces[0].parent and prof.done and not prof.active
    chrome = json.loads(
        gzip.decompress((prof.trace_dir / traces[0].name.replace(".xplane.pb", ".trace.json.gz")).read_bytes())
    )
    marked = sorted(int(e["args"]["step_num"]) for e in chrome["traceEvents"] if e.get("name") == "train")
    assert marked == [2, 3]  # the step annotations of exactly the traced steps
    assert "traced to" in capsys.readouterr().err


def test_resumed_past_the_window_and_other_processes_trace_nothing(tmp_path, monkeypatch):
    prof = ProfileWindow(2, 4, tmp_path / "a", enabled=True)
    assert not prof.maybe_start(5) and not (tmp_path / "a").exists()
    monkeypatch.setattr(jax, "process_index", lambda *a, **k: 1)
    prof = ProfileWindow.parse("0:3", tmp_path / "b")
    assert not prof.enabled
    assert _loop(prof) == ([], []) and not (tmp_path / "b").exists()
