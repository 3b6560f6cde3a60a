"""What a run shows while it works (gensim_jax.training.progress) and what a short run records."""

import io
import json

import pytest

from gensim_jax.training import CrossEntropy, train
from gensim_jax.training import progress as pg
from tests.training._tiny import stream, tiny_state


class FakeClock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def test_line_progress_prints_plain_lines_at_its_interval_and_at_the_end():
    """In a log: whole lines (no carriage returns), one per interval and a last one, with the rate and what is left."""
    clock, out = FakeClock(), io.StringIO()
    bar = pg.LineProgress(1000, desc="train", interval_s=100, stream=out, clock=clock)
    for i in range(1000):  # 0.25 s a step (exact in binary): lines at 100 s (step 400) and 200 s (step 800)
        clock.t += 0.25
        bar.update(1)
        if i == 100:
            assert out.getvalue() == ""
        if i == 500:
            bar.set_postfix(loss="0.52")
    bar.close()
    bar.close()  # once only
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue() and bar.lines == len(lines) == 3
    assert lines[0] == "train: 400/1,000 steps (40%), 4 steps/s, about 2 min left"
    assert lines[1] == "train: 800/1,000 steps (80%), 4 steps/s, about 50 s left, loss=0.52"
    assert lines[2] == "train: 1,000/1,000 steps (100%), 4 steps/s, 4 min, loss=0.52"


def test_a_resumed_bar_counts_its_rate_from_where_it_started():
    clock, out = FakeClock(), io.StringIO()
    bar = pg.LineProgress(100, initial=50, interval_s=5, stream=out, clock=clock)
    for _ in range(10):
        clock.t += 1
        bar.update(1)
    bar.close()
    assert out.getvalue().splitlines()[0] == "train: 55/100 steps (55%), 1 steps/s, about 45 s left"


def test_off_a_terminal_the_bar_is_lines_and_a_status_prints_nothing(capsys):
    """pytest's captured stderr is no TTY: a log's view."""
    assert not pg.is_terminal()
    assert isinstance(pg.progress_bar(10, enabled=True), pg.LineProgress)
    assert pg.progress_bar(10, enabled=False).disable  # --quiet: a disabled tqdm
    with pg.status("preparing the data", enabled=True):
        pass
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("seconds, text", [(0, "under a second"), (0.49, "under a second"), (1, "1 s"), (90, "2 min")])
def test_a_duration_is_never_zero_seconds(seconds, text):
    assert pg.format_duration(seconds) == text


def test_a_run_shorter_than_log_every_records_its_first_and_last_step(tmp_path):
    """num_steps=5 with log_every=50: metrics.jsonl holds step 1 and step 5, each a loss of its own window."""
    result = train(
        tiny_state(),
        CrossEntropy(input_key="x"),
        stream(0),
        num_steps=5,
        log_every=50,
        workdir=tmp_path,
        progress=False,
    )
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    logged = [r for r in records if "loss" in r]
    assert [r["step"] for r in logged] == [1, 5]
    assert [r["step"] for r in result.history if "loss" in r] == [1, 5]
    assert logged[0]["loss"] != logged[1]["loss"]  # the first step's loss, then the mean of steps 2-5
