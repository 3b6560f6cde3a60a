"""Repository-level pytest set-up: which docstring examples of the library count as slow, which
library modules doctest collection leaves alone, and the order the tests run in (:func:`worksteal_order`).

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
    items[:] = worksteal_order(items, int(getattr(config, "workerinput", {}).get("workercount", 1)))


def worksteal_order(items: list, workers: int) -> list:
    """``items`` ordered so that under ``-n WORKERS --dist worksteal`` every worker starts on slow tests
    and every queue ends on fast ones.

    pytest-xdist's worksteal scheduler gives worker ``i`` the ``i``-th of ``WORKERS`` contiguous chunks
    of the collection, and a worker that runs out takes the last half of the longest queue. Each chunk
    here is its share of the slow tests (whole test files, so a module fixture is built once, dealt to
    the chunk with the fewest slow tests so far) followed by fast tests. With one chunk of slow tests
    first (the previous order), the other worker stole the slow tests from the back of that chunk and
    the suite ended on three multi-process tests run one after the other (the other worker idle 13 s).
    Each group keeps the collection order otherwise.
    """
    slow = [it for it in items if it.get_closest_marker("slow") is not None]
    fast = [it for it in items if it.get_closest_marker("slow") is None]
    if workers < 2:
        return slow + fast
    sizes, left = [], len(items)
    for i in range(workers):  # the chunk sizes of xdist's first distribution
        sizes.append(left // (workers - i))
        left -= sizes[-1]
    by_file: dict = {}
    for it in slow:
        by_file.setdefault(it.nodeid.split("::")[0], []).append(it)
    chunks = [[] for _ in range(workers)]
    for group in by_file.values():
        min(chunks, key=len).extend(group)
    if any(len(c) > n for c, n in zip(chunks, sizes)):
        return slow + fast
    out, rest = [], iter(fast)
    for chunk, n in zip(chunks, sizes):
        out += chunk + [next(rest) for _ in range(n - len(chunk))]
    return out


def pytest_ignore_collect(collection_path, config):
    if collection_path.suffix == ".py" and collection_path.is_relative_to(LIBRARY):
        if ">>>" not in collection_path.read_text(encoding="utf-8"):
            return True
    return None
