"""bench/compile_flags.py: each flag set really reaches its fresh interpreter, nothing comes from a cache,
and the flag sets compute the same loss (to float rounding)."""

import pytest

from bench import compile_flags
from tests.conftest import TEST_XLA_FLAGS


def test_the_tests_flag_set_is_the_test_sessions():
    assert compile_flags.TESTS == TEST_XLA_FLAGS


@pytest.mark.slow
def test_quick_run_times_each_flag_set_in_its_own_process():
    lines = compile_flags.run(sets=("default", "tests"), programs=("step:cornet_z",), repeats=1, quick=True)
    by_set = {line["flags"]: line for line in lines}
    assert sorted(by_set) == ["default", "tests"]
    for name, line in by_set.items():
        assert line["xla_flags_seen"] == [" ".join(compile_flags.FLAG_SETS[name])]
        assert line["persistent_cache_hits"] == 0
        assert 0 < line["compile_s"] < line["first_call_s"] and line["trace_s"] > 0 and line["lower_s"] > 0
        assert line["call_s"] > 0
    a, b = (float(by_set[s]["values"][0]) for s in ("default", "tests"))
    assert b == pytest.approx(a, rel=1e-5)
    assert by_set["tests"]["compile_vs_default"] > 0 and "compile_vs_default" not in by_set["default"]
    with pytest.raises(ValueError, match="flag sets must be among"):
        compile_flags.run(sets=("fastest",))
