"""bench/suite/live_programs.py: each mode runs in its own interpreter, keeps every program alive, reports a
row per window, and the reuse mode really lowers into few contexts (the fresh mode into one per lowering)."""

import pytest

from bench.suite import live_programs


@pytest.mark.slow
def test_quick_run_gives_a_row_per_window_of_each_mode():
    rows = {m: live_programs.run_mode(m, programs=60, window=20) for m in live_programs.MODES}
    for mode, got in rows.items():
        assert [r["kept_programs"] for r in got] == [20, 40, 60] and {r["mode"] for r in got} == {mode}
        for r in got:
            parts = r["trace_ms"] + r["lower_ms"] + r["compile_ms"]
            assert 0 < parts <= r["ms_per_program"] + 0.2, r  # the parts are inside the program's time
    # fresh: a context per lowering (60 jitted programs, plus the eager ones that make their inputs);
    # reuse: a context serves 200 lowerings of the thread
    assert rows["fresh"][-1]["contexts_made"] >= 60
    assert rows["reuse"][-1]["contexts_made"] == 1


def test_bad_sizes_are_refused():
    with pytest.raises(SystemExit):
        live_programs.main(["--programs", "10", "--window", "20"])
