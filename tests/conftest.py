"""Shared test set-up: hypothesis's CI profile, the path of ../shared, and one XLA compilation cache per
test session.

Many tests compile the same programs: the tiny experiments' train steps in the CLI, checkpoint and
multi-process tests (each in fresh interpreters), the same models in several test files and in both
pytest workers. JAX's persistent compilation cache, in a directory made for this session and removed at
its end, compiles each of them once per session (a compiled program loaded from the cache is the same
executable, so no result changes). It is set through the environment, so the workers and every
subprocess a test starts inherit it; a test that sets ``JAX_COMPILATION_CACHE_DIR`` itself keeps its own.

The session's XLA programs are compiled with LLVM's optimisation level 0
(``--xla_backend_optimization_level=0`` appended to ``XLA_FLAGS``, inherited by the workers and the
subprocesses; the multi-process harness and tests/test_parallel.py keep it beside their device count).
Most tests compile far more than they run: the whole suite took 437 s at XLA's default level and 387 s at
level 0 on the idle 2-core machine, with the same 1,202 results. The level changes how the machine code
is generated, not what it computes (no fast-math: IEEE float semantics hold at every level). A caller
that sets an optimisation level in ``XLA_FLAGS`` keeps it; ``make bench`` and the library never see this.

Tests run at JAX's default matmul precision, as users' code does on GPU/TPU (where float32 matmuls
may use TF32/bfloat16 passes); a test that compares against a float64 or PyTorch reference to a
tight tolerance sets ``with jax.default_matmul_precision("highest"):`` itself.
"""

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

# CI runs the same examples every time (a red CI must mean a change, not a new random draw);
# locally hypothesis keeps exploring.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

#: Appended to ``XLA_FLAGS`` for the session (see the module docstring).
TEST_XLA_FLAGS = "--xla_backend_optimization_level=0"

#: Compiles shorter than this are not written to the cache (reading an entry costs about 10 ms).
CACHE_MIN_COMPILE_S = "0.3"
_SESSION_CACHE = None


def pytest_configure(config):
    global _SESSION_CACHE
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return  # a worker inherits the controller's environment
    flags = os.environ.get("XLA_FLAGS", "")
    if "--xla_backend_optimization_level" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {TEST_XLA_FLAGS}".strip()
    if "JAX_COMPILATION_CACHE_DIR" in os.environ:
        return  # a cache chosen by the caller is kept
    _SESSION_CACHE = tempfile.mkdtemp(prefix="gensim_jax_tests_xla_cache_")
    os.environ["JAX_COMPILATION_CACHE_DIR"] = _SESSION_CACHE
    os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = CACHE_MIN_COMPILE_S
    if "jax" in sys.modules:  # imported before this hook (by a plugin or conftest): set it directly too
        import jax

        jax.config.update("jax_compilation_cache_dir", _SESSION_CACHE)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", float(CACHE_MIN_COMPILE_S))


def pytest_unconfigure(config):
    if _SESSION_CACHE is not None:
        shutil.rmtree(_SESSION_CACHE, ignore_errors=True)


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
