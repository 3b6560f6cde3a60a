"""planning.cache: a plan's compile is kept, keyed by the lowered program and the target, and reused.

The integration tests compile a small perceptron step for a 4-chip TPU v5e slice (libtpu, seconds)
and read the report's ``compile_cache`` field (never a wall-clock duration): the first plan compiles,
an identical second one reuses, and a changed batch, topology or cache directory compiles again.
"""

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gensim_jax import planning
from gensim_jax.planning.cache import ENV, PlanCache, default_cache_dir, plan_cache_from_env
from gensim_jax.planning.compile import CompiledStep
from gensim_jax.training.hlo import Collective
from tests.planning._steps import all_pairs_build


def _step():
    return CompiledStep(
        platform="tpu",
        num_devices=4,
        compile_seconds=3.25,
        memory={"temp_size_in_bytes": 10, "total_bytes": 30},
        cost={"flops": 1e9},
        flops=1e9,
        flops_source="compiler cost analysis",
        collectives=[Collective("all-reduce", "ar.1", "f32[8]", 32.0, 4, 48.0, 1, "jit(step)/psum")],
        largest_arrays=[{"shape": "f32[8]", "bytes": 32, "op_name": "x"}],
    )


def test_store_and_load_round_trip(tmp_path):
    cache = PlanCache(tmp_path)
    key = cache.key("module @jit_step {}", {"topology": "v5e:2x2"})
    assert cache.load(key) is None
    cache.store(key, _step(), hlo_text="HloModule m")
    got = cache.load(key, need_hlo=True)
    assert got.reused and got.cache_key == key and got.compiled_at
    assert got.hlo_text == "HloModule m"
    want = _step()
    for field in ("memory", "cost", "flops", "flops_source", "compile_seconds", "largest_arrays", "collectives"):
        assert getattr(got, field) == getattr(want, field), field
    assert gzip.decompress((tmp_path / f"{key}.hlo.gz").read_bytes()) == b"HloModule m"


def test_keys_differ_by_program_and_target():
    cache = PlanCache("unused")
    base = cache.key("program", {"topology": "v5e:2x2"})
    assert base == cache.key("program", {"topology": "v5e:2x2"})
    assert base != cache.key("program ", {"topology": "v5e:2x2"})
    assert base != cache.key("program", {"topology": "v5e:2x4"})


def test_an_unreadable_entry_is_a_miss(tmp_path):
    cache = PlanCache(tmp_path)
    key = cache.key("p", {})
    cache.store(key, _step())
    (tmp_path / f"{key}.json").write_text("{not json")
    assert cache.load(key) is None
    cache.store(key, _step())  # overwritten
    entry = json.loads((tmp_path / f"{key}.json").read_text())
    entry["format"] = -1
    (tmp_path / f"{key}.json").write_text(json.dumps(entry))
    assert cache.load(key) is None


def test_default_directory_and_switch(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv(ENV, raising=False)
    assert default_cache_dir() == tmp_path / "gensim-jax" / "plans"
    assert plan_cache_from_env().directory == tmp_path / "gensim-jax" / "plans"
    assert plan_cache_from_env(tmp_path / "x").directory == tmp_path / "x"
    assert plan_cache_from_env(enabled=False) is None
    monkeypatch.setenv(ENV, str(tmp_path / "y"))
    assert plan_cache_from_env().directory == tmp_path / "y"
    monkeypatch.setenv(ENV, "off")
    assert plan_cache_from_env() is None and plan_cache_from_env(tmp_path) is None


@pytest.fixture(scope="module")
def build():
    return all_pairs_build(32, 64, 32)


def _plan(build, batch, topology, cache):
    sb = build(batch)
    return planning.plan_step(sb.fn, sb.args, topology=topology, experiment="mlp", config="test", cache=cache)


@pytest.mark.slow
def test_a_repeated_plan_reuses_the_compile_and_a_changed_one_compiles(build, tmp_path):
    cache = PlanCache(tmp_path)
    first = _plan(build, 64, "v5e:2x2", cache)
    assert first["compile_cache"]["reused"] is False and first["compile_cache"]["directory"] == str(tmp_path)
    assert "compiled in" in first.to_text().splitlines()[0]
    second = _plan(build, 64, "v5e:2x2", cache)
    assert second["compile_cache"]["reused"] is True
    assert second["compile_cache"]["key"] == first["compile_cache"]["key"]
    assert second["compile_cache"]["compiled_at"] == first["compile_cache"]["compiled_at"]
    assert "reused a compile from " in second.to_text().splitlines()[0]
    # the same figures as the compile's
    for field in ("memory_per_device_bytes", "flops_per_device", "hbm_bytes_per_device", "collectives", "fits"):
        assert second[field] == first[field], field
    # a changed program (batch) and a changed target (topology) miss, and are stored beside it
    other_batch = _plan(build, 128, "v5e:2x2", cache)
    other_topology = _plan(build, 64, "v5e:2x4", cache)
    assert other_batch["compile_cache"]["reused"] is False
    assert other_topology["compile_cache"]["reused"] is False
    keys = {r["compile_cache"]["key"] for r in (first, other_batch, other_topology)}
    assert len(keys) == 3 and len(list(tmp_path.glob("*.json"))) == 3
    # without a cache: compiled, and the report says no cache was used
    assert _plan(build, 64, "v5e:2x2", None)["compile_cache"] is None


@pytest.mark.slow
def test_the_command_reuses_a_compile_of_another_process(tmp_path):
    args = ["plan", "gaussian_mixture", "--topology", "v5e:2x2", "--json", "--cache-dir", str(tmp_path)]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    env.pop(ENV, None)
    reports = []
    for extra in ([], [], ["--batch-size", "128"], ["--no-cache"]):
        proc = subprocess.run(
            [sys.executable, "-m", "gensim_jax.commands", *args, *extra],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stderr
        reports.append(json.loads(proc.stdout))
    first, second, other, off = reports
    assert first["compile_cache"]["reused"] is False
    assert second["compile_cache"]["reused"] is True
    assert second["memory_per_device_bytes"] == first["memory_per_device_bytes"]
    assert other["compile_cache"]["reused"] is False
    assert off["compile_cache"] is None
