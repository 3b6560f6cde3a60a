"""bench/suite/session_profile.py, the pytest plugin: a two-worker session on a small test file writes one profile
per worker, whose counts and JAX compile times are those of the tests that worker ran."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

TESTS = """
import jax
import jax.numpy as jnp


def test_compiles():
    assert float(jax.jit(lambda x: jnp.sin(x) * 2)(1.0)) == float(2 * jnp.sin(1.0))


def test_plain_a():
    assert 1 + 1 == 2


def test_plain_b():
    assert "a" * 2 == "aa"


def test_subprocess():
    import subprocess, sys

    # the child burns CPU and writes what it used itself; the profile counts it under this test
    code = "import resource; sum(range(3 * 10**7)); r = resource.getrusage(resource.RUSAGE_SELF); "
    code += "open('child_cpu.txt', 'w').write(repr(r.ru_utime + r.ru_stime))"
    subprocess.run([sys.executable, "-c", code], check=True)
"""


@pytest.mark.slow
def test_two_workers_write_their_profiles_and_the_controller_prints_them(tmp_path):
    (tmp_path / "test_small.py").write_text(TESTS)
    out = tmp_path / "profile"
    (out).mkdir()
    (out / "gw7.json").write_text("{}")  # an earlier session's file is removed
    env = {**os.environ, "PYTHONPATH": str(REPO), "SUITE_PROFILE_DIR": str(out), "JAX_PLATFORMS": "cpu"}
    for name in ("SUITE_PROFILE_T0", "JAX_COMPILATION_CACHE_DIR"):  # a fresh clock; the jit compiles here
        env.pop(name, None)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-n",
            "2",
            "-p",
            "bench.suite.session_profile",
            "-p",
            "no:cacheprovider",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "suite profile (bench.suite.session_profile" in done.stdout
    rows = {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")}
    assert sorted(rows) == ["gw0", "gw1"]
    assert sum(r["tests"] for r in rows.values()) == 4
    ran = {t["test"]: name for name, r in rows.items() for t in r["last_tests"]}
    assert sorted(ran) == [f"test_small.py::test_{n}" for n in ("compiles", "plain_a", "plain_b", "subprocess")]
    compiled = rows[ran["test_small.py::test_compiles"]]
    assert compiled["compile_s"] > 0 and compiled["trace_s"] > 0
    # the JAX seconds are those of the test that compiled: it holds its worker's trace + lower + compile
    # (the plain tests and the subprocess test compile nothing in the worker)
    by_test = {t["test"]: t["jax_s"] for t in compiled["jax_costliest"]}
    jax_total = compiled["trace_s"] + compiled["lower_s"] + compiled["compile_s"]
    assert by_test.get("test_small.py::test_compiles", 0) >= 0.9 * jax_total - 0.01, (by_test, jax_total)
    assert not set(by_test) & {f"test_small.py::test_{n}" for n in ("plain_a", "plain_b", "subprocess")}
    assert compiled["jax_by_file"][0]["file"] == "test_small.py" and "test files by JAX seconds" in done.stdout
    # the CPU of the subprocess is counted under its test (at least what the child measured of itself)
    child_said = float((tmp_path / "child_cpu.txt").read_text())
    costs = {t["test"]: t for r in rows.values() for t in r["costliest"]}
    sub = costs["test_small.py::test_subprocess"]
    assert child_said > 0.1 and child_said - 0.02 <= sub["child_cpu_s"] <= sub["wall_s"] * 2 + 0.02
    assert (
        costs["test_small.py::test_compiles"]["child_cpu_s"] == 0.0
        and costs["test_small.py::test_compiles"]["cpu_s"] > 0
    )
    assert sum(r["child_cpu_s"] for r in rows.values()) >= child_said - 0.05
    assert f"{sub['child_cpu_s']:8.1f}" in done.stdout and "costliest tests" in done.stdout
    # every test is in its worker's whole map, with the same numbers as the costliest list
    every = {row[0]: row for r in rows.values() for row in r["every_test"]}
    assert sorted(every) == sorted(ran)
    assert every["test_small.py::test_subprocess"][1:4] == [sub["wall_s"], sub["cpu_s"], sub["child_cpu_s"]]
    assert every["test_small.py::test_compiles"][4] == by_test["test_small.py::test_compiles"]
    assert every["test_small.py::test_compiles"][5] >= 1 and every["test_small.py::test_plain_a"][5] == 0
    for r in rows.values():
        assert r["worker"] + " | " in done.stdout  # one table row per worker
        if r["tests"]:  # (xdist may hand all three tests to one worker)
            assert 0 < r["collected_at_s"] <= r["first_test_at_s"] <= r["last_test_end_s"] <= r["session_end_s"]
            assert 0 <= r["busy_s"] <= r["last_test_end_s"] - r["first_test_at_s"] + 0.1
