"""The runnable examples in the training and parallel docstrings."""

import doctest

import pytest

from gensim_jax import parallel
from gensim_jax.training import checkpoints, records, state


@pytest.mark.parametrize("module", [state, checkpoints, parallel, records], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
