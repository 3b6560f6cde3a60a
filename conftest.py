"""Repository-level pytest set-up: which docstring examples of the library count as slow.

``--doctest-modules`` (pyproject.toml) runs every ``>>>`` example under ``gensim_jax/``. The examples
that build and compile a Flax encoder take 3-15 s each on an idle 2-core machine; ``make test-fast``
(``-m "not slow"``) leaves them out, ``make test`` runs them.
"""

import pytest

SLOW_DOCTEST_MODULES = ("gensim_jax.models.", "gensim_jax.evaluation.embed", "gensim_jax.training.")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if isinstance(item, pytest.DoctestItem) and item.name.startswith(SLOW_DOCTEST_MODULES):
            item.add_marker(pytest.mark.slow)
