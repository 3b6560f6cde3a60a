"""Parallelism: sharded steps (1x8, 2x4 FSDP) equal the single-device step; mesh helpers.

The 8-device comparison runs in a subprocess (tests/_parallel_worker.py) because XLA_FLAGS must be
set before jax is imported, and this pytest process has already imported jax with one CPU device.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from gensim_jax import parallel
from tests.multiprocess.harness import with_device_count

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_sharded_steps_equal_the_single_device_step():
    """One subprocess (8 CPU devices) runs every layout; each must match the single-device run."""
    xla_flags = with_device_count(os.environ.get("XLA_FLAGS", ""), 8)
    env = dict(os.environ, XLA_FLAGS=xla_flags, JAX_PLATFORMS="cpu", PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, str(REPO / "tests" / "_parallel_worker.py")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    cases = ["gensim/1x8", "gensim/2x4", "ntxent_bn/1x8", "ntxent_bn/2x4"]
    assert sorted(results) == sorted(cases)
    for case in cases:
        r = results[case]
        assert r["loss"] <= 1e-5 * max(1.0, abs(r["loss_value"])), (case, r)
        assert r["params"] <= 1e-5, (case, r)
        assert r.get("batch_stats", 0.0) <= 1e-6, (case, r)
    # the layouts really distribute: FSDP splits parameter leaves, every layout spans 8 devices
    assert results["gensim/1x8"]["fsdp_split_leaves"] == 0
    assert results["gensim/2x4"]["fsdp_split_leaves"] > 0 and results["ntxent_bn/2x4"]["fsdp_split_leaves"] > 0
    assert all(v["param_devices"] == 8 for v in results.values())


def test_make_mesh_validates_sizes():
    mesh = parallel.make_mesh()
    assert mesh.axis_names == ("data", "fsdp") and mesh.devices.shape == (jax.device_count(), 1)
    with pytest.raises(ValueError, match="fsdp"):
        parallel.make_mesh(fsdp=jax.device_count() + 1)
    with pytest.raises(ValueError, match="does not match"):
        parallel.make_mesh(data=jax.device_count() + 1)


def test_leaf_sharding_rules_on_a_one_device_mesh():
    mesh = parallel.make_mesh()
    assert parallel.leaf_sharding((512, 512), mesh, fsdp=True).spec == parallel.replicated(mesh).spec


def test_process_batch_slice():
    assert parallel.process_batch_slice(12, 1, 3) == slice(4, 8)
    assert parallel.process_batch_slice(12) == slice(0, 12)
    with pytest.raises(ValueError, match="multiple of the 3 processes"):
        parallel.process_batch_slice(10, 0, 3)


def test_host_shards_partition_every_global_batch_in_stream_order():
    """Every process count splits global batch ``s`` into the positions ``s G .. (s+1) G - 1`` in order
    (a loop over processes, against numpy's arange); the data pipelines' StreamIndex and
    process_batch_slice give the same rows and positions."""
    from gensim_jax.data.indexing import StreamIndex

    G = 12
    for count in (1, 2, 3, 4, 6, 12):
        shards = [parallel.HostShard(i, count, G) for i in range(count)]
        rows = np.concatenate([np.arange(G)[sh.rows] for sh in shards])
        np.testing.assert_array_equal(rows, np.arange(G))
        for step in (0, 1, 5):
            got = np.concatenate([sh.positions(step) for sh in shards])
            np.testing.assert_array_equal(got, np.arange(step * G, (step + 1) * G))
        for i, sh in enumerate(shards):
            assert sh.batch == G // count and parallel.process_batch_slice(G, i, count) == sh.rows
            assert sh.pipeline_kwargs == {"batch_size": G // count, "process_index": i, "process_count": count}
            index = StreamIndex(5, G // count, seed=0, process_index=i, process_count=count)
            np.testing.assert_array_equal(index.positions(7), sh.positions(7))
    assert parallel.HostShard.of_this_process(G) == parallel.HostShard(0, 1, G)
    with pytest.raises(ValueError, match="index < count"):
        parallel.HostShard(2, 2, 16)
    with pytest.raises(ValueError, match="step must be non-negative"):
        parallel.HostShard(0, 1, 4).positions(-1)


def test_host_shard_keeps_its_public_names():
    """Forks import it from gensim_jax.training (and the experiment interface module): one class."""
    from gensim_jax.training import HostShard
    from gensim_jax.training.experiment import HostShard as HostShardOfExperiment

    assert HostShard is parallel.HostShard is HostShardOfExperiment


def test_shard_batch():
    mesh = parallel.make_mesh()
    b = {"x": np.arange(8.0).reshape(4, 2), "y": np.arange(4)}
    g = parallel.shard_batch(b, mesh)
    np.testing.assert_array_equal(np.asarray(g["x"]), b["x"])
    with pytest.raises(ValueError, match="leading batch axis"):
        parallel.shard_batch({"s": np.float32(1.0)}, mesh)


def test_initialize_distributed_is_a_no_op_on_one_machine(monkeypatch):
    for k in (
        "SLURM_NTASKS",
        "OMPI_COMM_WORLD_SIZE",
        "JAX_COORDINATOR_ADDRESS",
        "TPU_WORKER_HOSTNAMES",
        "MEGASCALE_COORDINATOR_ADDRESS",
    ):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("SLURM_NTASKS", "1")
    info = parallel.initialize_distributed()
    assert info["process_count"] == 1 and info["devices"] == jax.device_count()


@pytest.mark.slow
def test_cpu_only_without_accelerators_decides_from_the_machine(tmp_path):
    """A fresh process: no TPU node and no GPU plug-in -> CPU only (when libtpu is installed);
    an accelerator node, a GPU plug-in or JAX_PLATFORMS set -> JAX decides."""
    import importlib.util
    import subprocess
    import sys

    (tmp_path / "accel0").write_text("")
    code = (
        "import sys, jax; from gensim_jax.parallel import cpu_only_without_accelerators as f\n"
        "env = {}\n"
        "none = (str(sys.argv[1]) + '/nothing*',)\n"
        "accel = (str(sys.argv[1]) + '/accel*',)\n"
        "print(f(env, accel, ()), f({'JAX_PLATFORMS': 'cuda'}, none, ()), f(env, none, ('json',)))\n"
        "print(f(env, none, ()), jax.config.jax_platforms)\n"
        "platforms = [d.platform for d in jax.devices()]\n"
        "print(f(env, none, ()), platforms)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "False False False"  # a TPU node, JAX_PLATFORMS set, a (stand-in) GPU plug-in
    if importlib.util.find_spec("libtpu") is not None:
        assert lines[1] == "True cpu"
        assert "TPU_ACCELERATOR_TYPE" not in out.stderr  # libtpu's start-up warnings never ran
    else:
        assert lines[1].startswith("False")
    assert lines[2] == "False ['cpu']"  # a second call, after the backend started, leaves it alone
