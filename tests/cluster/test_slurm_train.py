"""``sbatch scripts/slurm_train.sbatch`` on the local one-node cluster: 2 tasks equal one process.

The job is submitted from a directory other than the checkout and runs ``gensim-jax train`` through
``srun`` (the console script of this environment, ``GENSIM_JAX``); its results.json equals a
one-process run of the same config on the same 4 devices on every number but the timings and the
process count.
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from tests.cluster import slurm

pytestmark = pytest.mark.slow


def test_slurm_sbatch_two_tasks_equal_one_process(slurm_conf, reference, tmp_path):
    submit = tmp_path / "submit"
    submit.mkdir()
    t0 = time.monotonic()
    job = slurm.Job(["--time=5"], [str(slurm.HELD), "tiny", "W"], env=slurm.job_env(slurm_conf), submit_dir=submit)
    try:
        info = job.wait("COMPLETED", timeout=300)
    finally:
        job.end()
    print(f"job {job.id}: {time.monotonic() - t0:.1f} s from sbatch to COMPLETED")
    assert info["ExitCode"] == "0:0"
    result = json.loads((submit / "W" / "results.json").read_text())  # WORKDIR relative to the submit directory
    assert result["devices"]["process_count"] == 2 and result["devices"]["device_count"] == 4
    assert reference["devices"]["process_count"] == 1 and reference["devices"]["device_count"] == slurm.JOB_DEVICES
    assert slurm.differences(result, reference) == []
    out = job.text()
    # one progress stream, from process 0; none of absl's per-process warnings
    assert out.count("trained in") == 1 and out.count("gensim run 0 (seed 0)") == 1, out[-3000:]
    assert "WARNING:absl" not in out and "preemption sync point" not in out, out[-3000:]
    assert "Traceback" not in out, out[-3000:]
    assert "NOT RUN" not in slurm.SBATCH.read_text()


def test_slurm_smoke_job_prints_processes_devices_and_an_all_reduce(slurm_conf, tmp_path):
    """The first check on a cluster (docs/SCALING.md): ``srun gensim-jax info --distributed``."""
    env = slurm.job_env(slurm_conf)
    cmd = ["srun", *slurm.COUNTS, "--time=2", env["GENSIM_JAX"], "info", "--distributed"]
    done = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    decoder, text, found = json.JSONDecoder(), done.stdout, []
    while text.strip():
        obj, end = decoder.raw_decode(text.lstrip())
        found.append(obj)
        text = text.lstrip()[end:]
    assert sorted(o["process_index"] for o in found) == [0, 1]
    for o in found:
        assert o["process_count"] == 2 and o["device_count"] == 4 and o["local_device_count"] == 2
        assert o["all_reduce"] == {"sum": 6.0, "expected": 6.0, "ok": True}
