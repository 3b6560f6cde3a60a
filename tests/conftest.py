"""Shared test set-up: float32 matmuls at full precision, and the path of ../shared."""

from pathlib import Path

import os

import jax
import pytest
from hypothesis import settings

# CI runs the same examples every time (a red CI must mean a change, not a new random draw);
# locally hypothesis keeps exploring.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

jax.config.update("jax_default_matmul_precision", "highest")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.skip(f"reference data directory {SHARED} is absent (CI clones the project beside shared/)")
    return SHARED
