"""The test session's XLA flags (tests/conftest.py): every worker compiles with them, and a jaxlib that
does not know one is detected before it could abort the session."""

import os
import warnings
from importlib.metadata import version

import pytest

from tests.conftest import CHECKED_JAXLIB, TEST_XLA_FLAGS, reuse_mlir_contexts, xla_accepts


def test_the_workers_compile_with_the_session_flags():
    flags = os.environ["XLA_FLAGS"].split()
    with warnings.catch_warnings():  # the session has warned already of a flag this jaxlib rejects
        warnings.simplefilter("ignore")
        known = xla_accepts(TEST_XLA_FLAGS)  # all of them on CHECKED_JAXLIB
    for flag in known:
        name = flag.split("=")[0]
        # the session's value, or the caller's own if it set the flag
        assert any(f.split("=")[0] == name for f in flags), (flag, flags)


@pytest.mark.slow
def test_an_unchecked_jaxlib_is_asked_whether_it_knows_each_flag():
    unknown = "--xla_cpu_no_such_option=true"
    with pytest.warns(UserWarning, match=f"rejects .*{unknown}"):
        accepted = xla_accepts([*TEST_XLA_FLAGS, unknown], checked=())
    assert accepted[0] == TEST_XLA_FLAGS[0] and unknown not in accepted  # every jaxlib so far knows the level
    if version("jaxlib") in CHECKED_JAXLIB:  # the versions taken on trust do know them all
        assert accepted == list(TEST_XLA_FLAGS)


# ---------------------------------------------------------------- MLIR contexts reused for lowering


def test_the_session_lowers_into_reused_contexts_and_the_programs_are_the_same():
    import threading

    import jax
    import jax.numpy as jnp
    from jax._src.interpreters import mlir

    if os.environ.get("GENSIM_JAX_TESTS_FRESH_MLIR"):
        pytest.skip("GENSIM_JAX_TESTS_FRESH_MLIR is set: this session lowers into fresh contexts")
    assert reuse_mlir_contexts() and mlir.make_ir_context.reuses  # installed by the session, once

    def programs():  # a jit with a loop and a reduction, and an eager operation's program, on new shapes
        def f(x, n):
            return jax.lax.fori_loop(0, n, lambda i, c: jnp.tanh(c) * 2 + i, x).sum(axis=0)

        x = jnp.ones((7, 13), jnp.float32)
        return [
            jax.jit(f, static_argnums=1).lower(x, 3).as_text(),
            jax.jit(lambda a, b: a @ b.T).lower(x, x[:5]).as_text(),
        ]

    reused = programs()
    kept = [mlir.make_ir_context() for _ in range(3)]  # kept alive: a freed context's id can come back
    assert kept[0] is kept[1] is kept[2]  # one context serves this thread's next lowerings
    other = []
    thread = threading.Thread(target=lambda: other.append(mlir.make_ir_context()))
    thread.start()
    thread.join()
    assert other[0] is not kept[0]  # a thread of its own gets a context of its own
    patched, mlir.make_ir_context = mlir.make_ir_context, mlir.make_ir_context.fresh
    try:
        own = [mlir.make_ir_context() for _ in range(3)]
        assert len({id(c) for c in own}) == 3  # JAX's own: one each
        assert programs() == reused  # the same programs, to the character
    finally:
        mlir.make_ir_context = patched


def test_a_context_serves_its_number_of_lowerings_then_a_fresh_one_is_made(monkeypatch):
    from jax._src.interpreters import mlir

    made = []

    def fresh():
        made.append(object())
        return made[-1]

    monkeypatch.setattr(mlir, "make_ir_context", fresh)
    assert reuse_mlir_contexts(uses=3)
    got = [mlir.make_ir_context() for _ in range(7)]
    assert got == [made[0]] * 3 + [made[1]] * 3 + [made[2]] and len(made) == 3
    monkeypatch.setenv("GENSIM_JAX_TESTS_FRESH_MLIR", "1")
    monkeypatch.setattr(mlir, "make_ir_context", fresh)
    assert not reuse_mlir_contexts(uses=3) and mlir.make_ir_context is fresh  # turned off: JAX's own


# ---------------------------------------------------------------- the order of the suite (../conftest.py)


def _root_conftest():
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("root_conftest", Path(__file__).parents[1] / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Item:
    def __init__(self, nodeid: str, slow: bool):
        self.nodeid, self.slow = nodeid, slow

    def get_closest_marker(self, name):
        return object() if name == "slow" and self.slow else None

    def __repr__(self):
        return self.nodeid


def _items(files: dict) -> list:
    """``{"a.py": (number of slow tests, number of fast tests)}`` -> items in that order, slow ones first per file."""
    out = []
    for f, (n_slow, n_fast) in files.items():
        out += [_Item(f"{f}::slow{i}", True) for i in range(n_slow)]
        out += [_Item(f"{f}::fast{i}", False) for i in range(n_fast)]
    return out


def test_every_worksteal_chunk_starts_on_its_share_of_slow_files_and_ends_on_fast_tests():
    order = _root_conftest().worksteal_order
    items = _items({"a.py": (5, 3), "b.py": (2, 10), "c.py": (4, 0), "d.py": (1, 6)})
    got = order(items, 2)
    assert sorted(map(repr, got)) == sorted(map(repr, items))  # a permutation
    n = len(items)
    chunks = [got[: n // 2], got[n // 2 :]]  # what xdist's worksteal hands each of 2 workers first
    slow_files = []
    for chunk in chunks:
        flags = [it.slow for it in chunk]
        assert flags == sorted(flags, reverse=True)  # slow first, then fast
        slow_files.append({it.nodeid.split("::")[0] for it in chunk if it.slow})
    assert not slow_files[0] & slow_files[1]  # no file's slow tests split over two workers
    assert {len([it for it in c if it.slow]) for c in chunks} == {6}  # a + d against b + c
    # one worker (or none): all slow tests first, each group in collection order
    assert order(items, 1) == [it for it in items if it.slow] + [it for it in items if not it.slow]


def test_worksteal_order_falls_back_when_slow_tests_fill_a_chunk():
    items = _items({"a.py": (7, 0), "b.py": (1, 2)})  # 7 slow tests of one file, chunks of 5
    got = _root_conftest().worksteal_order(items, 2)
    assert got == [it for it in items if it.slow] + [it for it in items if not it.slow]


# ---------------------------------------------------------------- hypothesis's profile

_PROBE = """
import os
from pathlib import Path

from hypothesis import given, settings, strategies as st

OUT = Path(os.environ["PROBE_OUT"])


def _record(name, x):
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(OUT / f"{name}.{worker}", "a") as f:
        f.write(f"{settings.default.derandomize} {x}\\n")


@settings(max_examples=8)
@given(st.integers(0, 2**62))
def test_a(x):
    _record("a", x)


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 2**62))
def test_b(x):
    _record("b", x)
"""


@pytest.mark.slow
def test_ci_runs_property_tests_derandomized_in_every_worker_and_development_explores(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    from hypothesis._settings import _CI_VARS

    repo = Path(__file__).resolve().parents[1]
    (tmp_path / "test_probe.py").write_text(_PROBE)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    base = {k: v for k, v in os.environ.items() if k not in _CI_VARS and k != "PYTEST_ADDOPTS"}
    base["PYTHONPATH"] = str(repo)
    base["GENSIM_JAX_TESTS_FRESH_MLIR"] = "1"  # the probe compiles nothing: its workers need not import jax

    def run(ci: bool) -> dict:
        out = tmp_path / f"out{len(list(tmp_path.glob('out*')))}"
        out.mkdir()
        env = {**base, "PROBE_OUT": str(out), **({"CI": "true"} if ci else {})}
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "tests.conftest",
            "-n",
            "2",
            "--dist",
            "load",
        ]
        proc = subprocess.run(
            [*cmd, "-c", str(tmp_path / "pytest.ini"), str(tmp_path / "test_probe.py")],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        files = sorted(out.iterdir())
        assert {f.name.split(".")[1] for f in files} == {"gw0", "gw1"}  # each worker ran one property test
        return {f.name.split(".")[0]: f.read_text().split("\n") for f in files}

    ci1, ci2 = run(ci=True), run(ci=True)
    assert all(line.startswith("True ") for lines in ci1.values() for line in lines if line)
    assert ci1 == ci2  # the same examples on every CI run
    dev1, dev2 = run(ci=False), run(ci=False)
    assert all(line.startswith("False ") for lines in dev1.values() for line in lines if line)
    assert sorted(sum(dev1.values(), [])) != sorted(sum(dev2.values(), []))  # development keeps exploring


# ---------------------------------------------------------------- the session's temporary directory

_TMP_PROBE = """
import json, os, tempfile


def _record(tmp_path):
    fd, leftover = tempfile.mkstemp(suffix=".left")  # never removed by the test, as autograph's files
    os.close(fd)
    out = os.path.join(os.environ["PROBE_OUT"], os.environ.get("PYTEST_XDIST_WORKER", "main") + ".json")
    with open(out, "w") as f:
        json.dump({"tempdir": tempfile.gettempdir(), "leftover": leftover, "tmp_path": str(tmp_path)}, f)


def test_a(tmp_path):
    _record(tmp_path)


def test_b(tmp_path):
    _record(tmp_path)
"""


@pytest.mark.slow
def test_workers_write_temporary_files_into_the_sessions_directory_which_the_session_removes(tmp_path):
    import json
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    (tmp_path / "test_tmp_probe.py").write_text(_TMP_PROBE)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    out = tmp_path / "out"
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    env.update(PYTHONPATH=str(repo), PROBE_OUT=str(out))
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest", "-n", "2"]
    cmd += ["--dist", "load", "-c", str(tmp_path / "pytest.ini"), str(tmp_path / "test_tmp_probe.py")]
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    seen = [json.loads(p.read_text()) for p in sorted(out.glob("gw*.json"))]
    assert seen, sorted(out.iterdir())
    outer = os.environ.get("TMPDIR") or tempfile.gettempdir()  # the temporary directory that session started in
    for s in seen:
        tempdir = Path(s["tempdir"])
        assert tempdir.name.startswith("gensim_jax_tests_tmp_") and tempdir.parent == Path(outer), s
        assert not tempdir.exists() and not Path(s["leftover"]).exists()  # removed with the session's directory
        assert Path(s["tmp_path"]).is_dir() and tempdir not in Path(s["tmp_path"]).parents  # pytest keeps these
