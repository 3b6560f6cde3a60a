"""Shared test set-up: hypothesis's CI profile, the path of ../shared, and one XLA compilation cache per
test session.

Many tests compile the same programs: the tiny experiments' train steps in the CLI, checkpoint and
multi-process tests (each in fresh interpreters), the same models in several test files and in both
pytest workers. JAX's persistent compilation cache, in a directory made for this session and removed at
its end, compiles each of them once per session (a compiled program loaded from the cache is the same
executable, so no result changes). It is set through the environment, so the workers and every
subprocess a test starts inherit it; a test that sets ``JAX_COMPILATION_CACHE_DIR`` itself keeps its own.

The session's XLA programs are compiled for compile speed, because most tests compile far more than
they run: ``XLA_FLAGS`` gets LLVM's optimisation level 0 (``--xla_backend_optimization_level=0``) and
XLA:CPU's element-wise loop emitters instead of its MLIR fusion emitters
(``--xla_cpu_use_fusion_emitters=false``), inherited by the workers and the subprocesses (the
multi-process harness and tests/test_parallel.py keep them beside their device count). On the idle
2-core machine the whole suite took 437 s with neither, 387 s with the level, and 343 s with both
(the workers' own XLA compile time 268 s -> 142 s), with the same results. Neither is fast-math:
values agree with the default compile to float rounding (``python -m bench.suite.compile_flags``: a ResNet-18
step's loss 2.60085320 against 2.60085391); a statistic that divides by a near-zero spread, such as
BatchNorm over 2 images, can magnify that rounding (the CORnet-S step there: 3.1021 against 3.0772).
A caller who sets either flag keeps its value; ``make bench`` and the library never see them. A jaxlib
other than the ones they were checked on is asked first (one subprocess per flag) whether it knows each;
an unknown flag would abort every compile, so one it rejects is left out (jaxlib 0.12 has no
``xla_cpu_use_fusion_emitters``: its MLIR fusion emitters are the only ones).

The pytest-xdist workers and every subprocess write their temporary files (TensorFlow's autograph modules,
tfds's mock data, ...) into one directory made for the session (``TMPDIR``), removed at its end with the
compilation cache: a worker leaves without running its exit handlers (see ``pytest_unconfigure``), and
autograph removes its files only there, so each session used to leave about a thousand in ``/tmp``. The
controller keeps the system's temporary directory, so the tests' ``tmp_path`` directories stay where
pytest keeps them (the last three sessions', for a look after a failure).

Each process of the session lowers its JAX programs into MLIR contexts it reuses
(:func:`reuse_mlir_contexts`): JAX makes a fresh context for every lowering, and loading every dialect
into it is 7.5 ms here, most of what an eager operation on a new shape costs to lower, and a lowering
gets slower as the contexts of the programs a worker keeps alive pile up. A context serves
``MLIR_CONTEXT_USES`` lowerings of one thread, then a fresh one is made; the programs are the same text
(tests/test_conftest.py checks it). ``GENSIM_JAX_TESTS_FRESH_MLIR=1`` turns it off.

Tests run at JAX's default matmul precision, as users' code does on GPU/TPU (where float32 matmuls
may use TF32/bfloat16 passes); a test that compares against a float64 or PyTorch reference to a
tight tolerance sets ``with jax.default_matmul_precision("highest"):`` itself.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import warnings
from pathlib import Path

import pytest
from hypothesis import settings

# CI runs the same examples every time (a red CI must mean a change, not a new random draw; derandomize
# also turns off the example database, so nothing found in one clone is replayed); locally hypothesis
# keeps exploring. .ci/run exports CI=true; the pytest-xdist workers inherit it and import this file too
# (tests/test_conftest.py checks both).
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

#: Appended to ``XLA_FLAGS`` for the session (see the module docstring), each unless the caller set it.
TEST_XLA_FLAGS = ("--xla_backend_optimization_level=0", "--xla_cpu_use_fusion_emitters=false")
#: jaxlib versions known to accept all of TEST_XLA_FLAGS (requirements.lock's, and make test-min's lower
#: bound); others are probed flag by flag.
CHECKED_JAXLIB = ("0.10.1", "0.10.2")

#: Compiles shorter than this are not written to the cache (reading an entry costs about 10 ms).
CACHE_MIN_COMPILE_S = "0.3"
_SESSION_CACHE = None
_SESSION_TMP = None

#: Lowerings a thread makes in one MLIR context before it makes a fresh one (bounds what the context keeps:
#: every type and attribute a program used stays in its context).
MLIR_CONTEXT_USES = 200


def reuse_mlir_contexts(uses: int = MLIR_CONTEXT_USES) -> bool:
    """Make JAX lower ``uses`` programs of a thread into one MLIR context instead of one context each.

    ``jax._src.interpreters.mlir.make_ir_context`` is JAX's own function (it creates a context and loads
    every dialect into it, 7.5 ms); each thread keeps the context it returned and returns it again until
    ``uses`` lowerings have used it. The lowered programs are the same; only the objects that own their
    types differ. It pays most late in a session: every program a worker keeps alive keeps its context
    alive, and with thousands alive each new lowering got slower (``python -m bench.suite.live_programs``:
    22 -> 71 ms a lowering over 2,400 kept programs, 4-6 ms with reused contexts). On 351 JAX-heavy tests
    with 2 workers the session took 168-191 s instead of 206-219 s (docs/performance_log.md, "The test
    loop, fourth pass"). Returns whether it was installed: not when ``GENSIM_JAX_TESTS_FRESH_MLIR`` is
    set, or where this JAX has no such function."""
    if os.environ.get("GENSIM_JAX_TESTS_FRESH_MLIR"):
        return False
    try:
        from jax._src.interpreters import mlir
    except ImportError:
        return False
    fresh = getattr(mlir, "make_ir_context", None)
    if fresh is None or getattr(fresh, "reuses", False):
        return fresh is not None
    local = threading.local()

    def make_ir_context():
        if getattr(local, "left", 0) <= 0:
            local.context, local.left = fresh(), uses
        local.left -= 1
        return local.context

    make_ir_context.reuses = True
    make_ir_context.fresh = fresh
    mlir.make_ir_context = make_ir_context
    return True


def pytest_configure(config):
    global _SESSION_CACHE, _SESSION_TMP
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        reuse_mlir_contexts()  # in the processes that run tests (a pytest-xdist controller runs none)
    if hasattr(config, "workerinput"):
        return  # a pytest-xdist worker inherits the controller's environment
    tempfile.gettempdir()  # read (and kept) before TMPDIR changes: this process's tmp_path base stays there
    _SESSION_TMP = tempfile.mkdtemp(prefix="gensim_jax_tests_tmp_")
    os.environ["TMPDIR"] = _SESSION_TMP
    from gensim_jax._quiet import quiet_libtpu_env

    quiet_libtpu_env()  # no libtpu start-up errors from the workers and the subprocesses (no TPU here)
    flags = os.environ.get("XLA_FLAGS", "")
    added = xla_accepts([f for f in TEST_XLA_FLAGS if f.split("=")[0] not in flags])
    if added:
        os.environ["XLA_FLAGS"] = " ".join([flags, *added]).strip()
    # gensim-jax plan's compile cache (gensim_jax/planning/cache.py) stays off unless a test passes a
    # directory: a plan test must compile (its heartbeat, its signal handling), and no test writes to ~/.cache
    os.environ.setdefault("GENSIM_JAX_PLAN_CACHE", "off")
    if "JAX_COMPILATION_CACHE_DIR" in os.environ:
        return  # a cache chosen by the caller is kept
    _SESSION_CACHE = tempfile.mkdtemp(prefix="gensim_jax_tests_xla_cache_")
    os.environ["JAX_COMPILATION_CACHE_DIR"] = _SESSION_CACHE
    os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = CACHE_MIN_COMPILE_S
    if "jax" in sys.modules:  # imported before this hook (by a plugin or conftest): set it directly too
        import jax

        jax.config.update("jax_compilation_cache_dir", _SESSION_CACHE)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", float(CACHE_MIN_COMPILE_S))


def xla_accepts(flags, checked=CHECKED_JAXLIB) -> list[str]:
    """The ``flags`` that this jaxlib's XLA accepts (it aborts on an unknown one), in their order: all of
    them for the ``checked`` versions, else each asked of a fresh interpreter that starts the CPU backend
    with it; a warning names those rejected (the tests compile without them)."""
    from importlib.metadata import version

    if version("jaxlib") in checked:
        return list(flags)
    accepted = []
    for flag in flags:
        env = {**os.environ, "XLA_FLAGS": " ".join([os.environ.get("XLA_FLAGS", ""), flag]), "JAX_PLATFORMS": "cpu"}
        probe = subprocess.run(
            [sys.executable, "-c", "import jax; jax.devices()"], env=env, capture_output=True, timeout=120
        )
        if probe.returncode == 0:
            accepted.append(flag)
    rejected = [f for f in flags if f not in accepted]
    if rejected:
        warnings.warn(
            f"jaxlib {version('jaxlib')} rejects {' '.join(rejected)}: the tests compile without it", stacklevel=2
        )
    return accepted


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """The controller removes the session's compilation cache and temporary directory. A pytest-xdist
    worker, whose results the controller already has (its ``workerfinished`` message is sent at the end of
    its session), leaves without tearing down its interpreter: after the whole suite that teardown (JAX's and TensorFlow's
    clients, torch, every compiled program) took about 7 s that the controller spent waiting."""
    for directory in (_SESSION_CACHE, _SESSION_TMP):
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)
    if hasattr(config, "workerinput") and "coverage" not in sys.modules:  # coverage saves at exit
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(int(config.workeroutput.get("exitstatus", 0)))


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
