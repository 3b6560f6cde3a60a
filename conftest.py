"""Repository-level pytest set-up: which docstring examples of the library count as slow, and which
library modules doctest collection leaves alone.

``--doctest-modules`` (pyproject.toml) runs every ``>>>`` example under ``gensim_jax/``. The examples
that build and compile a Flax encoder, or draw many Monte Carlo samples, take 1.5-15 s each on a
2-core machine; ``make test-fast`` (``-m "not slow"``) leaves them out, ``make test`` runs them.

Library modules without a ``>>>`` example are not collected for doctests: importing them only costs
time (``gensim_jax.data.augment`` and ``gensim_jax.data.imagenet`` import TensorFlow, about 5 s of CPU
and 550 MB per pytest worker). tests/test_imports.py imports every module.
"""

from pathlib import Path

import pytest

LIBRARY = Path(__file__).parent / "gensim_jax"

SLOW_DOCTEST_MODULES = ("gensim_jax.models.", "gensim_jax.evaluation.embed", "gensim_jax.training.")
#: Single examples measured at >= 1.5 s (``pytest --durations=0``) outside the modules above.
SLOW_DOCTESTS = {
    "gensim_jax.evaluation.spurious_digits.make_embedder",
    "gensim_jax.evaluation.spurious_digits.make_predictor",
    "gensim_jax.data.pipelines.labelled_batches",  # the first use of TensorFlow in a process
    "gensim_jax.kernels.categorical",
    "gensim_jax.kernels.hierarchy.log_similarity_from_path",
    "gensim_jax.kernels.monte_carlo",
    "gensim_jax.kernels.monte_carlo.sample_class_triplets",
    "gensim_jax.kernels.monte_carlo.sample_triplets",
    "gensim_jax.losses.regression.gensim_regression_loss",
    "gensim_jax.testing.asserts",
    "gensim_jax.testing.estimate",
    "gensim_jax.testing.estimate.estimate_log_similarity",
    "gensim_jax.testing.models",
    "gensim_jax.testing.models.path_prior",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if isinstance(item, pytest.DoctestItem) and (
            item.name.startswith(SLOW_DOCTEST_MODULES) or item.name in SLOW_DOCTESTS
        ):
            item.add_marker(pytest.mark.slow)
    # Slow tests first (a stable sort: each group keeps its order). Under ``-n 2 --dist worksteal`` a
    # worker that runs out of tests takes half of the other's remaining ones, so the suite ends on
    # short tests instead of one worker finishing a 60 s test alone.
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def pytest_ignore_collect(collection_path, config):
    if collection_path.suffix == ".py" and collection_path.is_relative_to(LIBRARY):
        if ">>>" not in collection_path.read_text(encoding="utf-8"):
            return True
    return None
