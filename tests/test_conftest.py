"""The test session's XLA flags (tests/conftest.py): every worker compiles with them, and a jaxlib that
does not know one is detected before it could abort the session."""

import os

import pytest

from tests.conftest import TEST_XLA_FLAGS, _xla_knows


def test_the_workers_compile_with_the_session_flags():
    flags = os.environ["XLA_FLAGS"].split()
    for flag in TEST_XLA_FLAGS:
        name = flag.split("=")[0]
        # the session's value, or the caller's own if it set the flag
        assert any(f.split("=")[0] == name for f in flags), (flag, flags)


@pytest.mark.slow
def test_an_unchecked_jaxlib_is_asked_whether_it_knows_the_flags():
    assert _xla_knows(list(TEST_XLA_FLAGS), checked=())
    with pytest.warns(UserWarning, match="rejects --xla_cpu_no_such_option=true"):
        assert not _xla_knows(["--xla_cpu_no_such_option=true"], checked=())
