"""Run the runnable examples in the docstrings of gensim_jax.testing (doctest)."""

import doctest
import importlib

import pytest


@pytest.mark.parametrize("name", ["models", "estimate", "asserts", "strategies"])
@pytest.mark.slow
def test_docstring_examples(name):
    module = importlib.import_module(f"gensim_jax.testing.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.attempted > 0, f"{name} has no docstring examples"
    assert result.failed == 0
