"""Run the runnable examples in the docstrings of the numeric kernel modules (doctest)."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["beta_bernoulli", "gaussian_mixture", "categorical", "monte_carlo", "targets"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"gensim_jax.kernels.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.attempted > 0, f"{name} has no docstring examples"
    assert result.failed == 0
