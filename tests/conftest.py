"""Shared test set-up: hypothesis's CI profile and the path of ../shared.

Tests run at JAX's default matmul precision, as users' code does on GPU/TPU (where float32 matmuls
may use TF32/bfloat16 passes); a test that compares against a float64 or PyTorch reference to a
tight tolerance sets ``with jax.default_matmul_precision("highest"):`` itself.
"""

import os
from pathlib import Path

import pytest
from hypothesis import settings

# CI runs the same examples every time (a red CI must mean a change, not a new random draw);
# locally hypothesis keeps exploring.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.skip(f"reference data directory {SHARED} is absent (CI clones the project beside shared/)")
    return SHARED


def pytest_ignore_collect(collection_path, config):
    """Under ``--doctest-modules`` pytest would import every ``.py`` file; the helpers here are scripts run
    in subprocesses (``_parallel_worker.py`` sets XLA flags and matmul precision at import) or plain modules
    that tests import, with no docstring examples, so only test modules and packages are collected."""
    if (
        collection_path.suffix == ".py"
        and not collection_path.name.startswith("test_")
        and collection_path.name not in ("conftest.py", "__init__.py")
    ):
        return True
    return None
