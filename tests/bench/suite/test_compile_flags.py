"""bench/suite/compile_flags.py: a flag set really reaches its fresh interpreter, nothing there comes from a cache,
and the child computes what this process (same flags) computes."""

import pytest

from bench.suite import compile_flags
from tests.conftest import TEST_XLA_FLAGS, xla_accepts


@pytest.mark.slow
def test_quick_run_times_the_flag_set_in_its_own_process():
    (line,) = compile_flags.run(sets=("tests",), programs=("step:cornet_z",), repeats=1, quick=True)
    assert line["flags"] == "tests" and line["xla_flags_seen"] == [" ".join(xla_accepts(TEST_XLA_FLAGS))]
    assert line["persistent_cache_hits"] == 0
    assert 0 < line["compile_s"] < line["first_call_s"] and line["trace_s"] > 0 and line["lower_s"] > 0
    assert line["call_s"] > 0
    # this process compiles with the same flags (tests/conftest.py), so the same step gives the same loss
    here = compile_flags.measure("step:cornet_z", quick=True)
    assert line["values"] == [here["value"]]
    with pytest.raises(ValueError, match="flag sets must be among"):
        compile_flags.run(sets=("fastest",))


@pytest.mark.slow
def test_eager_programs_and_an_added_flag_set():
    lines = compile_flags.run(
        sets=("tests",), programs=("eager",), repeats=1, quick=True, also=("xla_cpu_use_xnnpack=false",)
    )
    assert [line["flags"] for line in lines] == ["tests", "tests+xla_cpu_use_xnnpack=false"]
    assert lines[1]["xla_flags_seen"] == [" ".join([*xla_accepts(TEST_XLA_FLAGS), "--xla_cpu_use_xnnpack=false"])]
    # 10 shapes, one program per operation and shape (ones, multiply, add, sum, tanh, a slice; 59 on jax 0.10)
    assert all(line["compiles"] >= 50 for line in lines), [line["compiles"] for line in lines]
    assert lines[0]["values"] == lines[1]["values"] and "compile_vs_tests" in lines[1]
