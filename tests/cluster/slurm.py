"""Submit, watch and always end SLURM jobs of the local one-node cluster (``scripts/slurm_local.sh``).

Every wait is bounded; :meth:`Job.end` (``scancel``) runs in a ``finally`` of each test. The jobs run
``scripts/slurm_train.sbatch`` with the counts a local cluster has (2 tasks on 1 node, CPU devices)
given on the ``sbatch`` command line, submitted from a directory other than the checkout.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

import pytest

from tests.multiprocess.harness import with_device_count

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "slurm_local.sh"
SBATCH = REPO / "scripts" / "slurm_train.sbatch"
HELD = REPO / "tests" / "cluster" / "held_experiment.py"
#: the local cluster's state directory (slurm.conf, logs) when the tests start it
STATE_DIR = Path(os.environ.get("GENSIM_SLURM_DIR", "/tmp/gensim-jax-slurm"))
#: tasks of a job, and CPU devices of each task (:func:`job_env`) and of the whole job
TASKS = 2
DEVICES_PER_TASK = 2
JOB_DEVICES = TASKS * DEVICES_PER_TASK
#: TASKS tasks on 1 node, 1 CPU each, no GPUs: the script's GPU options overridden on the command line
COUNTS = ["--nodes=1", f"--ntasks-per-node={TASKS}", "--gpus-per-node=0", "--cpus-per-task=1"]
#: seconds after which a requeued job may start again (see :meth:`Job.wait`)
REQUEUE_START_S = 5
END_STATES = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"}


def start_cluster() -> tuple[Optional[str], bool]:
    """Start the local cluster; ``(SLURM_CONF, started_here)``, or skip with the script's stated reason."""
    conf = str(STATE_DIR / "slurm.conf")
    env = {**os.environ, "GENSIM_SLURM_DIR": str(STATE_DIR)}
    running = subprocess.run(["bash", str(SCRIPT), "status"], env=env, capture_output=True, text=True, timeout=60)
    if running.returncode == 0:
        return conf, False
    done = subprocess.run(["bash", str(SCRIPT), "start"], env=env, capture_output=True, text=True, timeout=600)
    if done.returncode == 3:  # the script's "cannot start" exit: not root, no apt-get
        reason = [ln for ln in done.stderr.splitlines() if "cannot start" in ln]
        pytest.skip(f"no local SLURM cluster: {(reason or [done.stderr.strip()])[-1]}")
    if done.returncode != 0:
        pytest.fail(f"scripts/slurm_local.sh start failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return conf, True


def stop_cluster() -> None:
    env = {**os.environ, "GENSIM_SLURM_DIR": str(STATE_DIR)}
    subprocess.run(["bash", str(SCRIPT), "stop"], env=env, capture_output=True, text=True, timeout=120)


def job_env(conf: str, **extra: str) -> dict:
    """The submit environment: the checkout's package, its console script, 2 CPU devices a task."""
    console = Path(sys.executable).with_name("gensim-jax")
    env = dict(os.environ)
    env.update(
        SLURM_CONF=conf,
        PYTHONPATH=str(REPO) + os.pathsep + env.get("PYTHONPATH", ""),
        GENSIM_JAX=str(console) if console.exists() else "gensim-jax",
        JAX_PLATFORMS="cpu",
        XLA_FLAGS=with_device_count(env.get("XLA_FLAGS", ""), DEVICES_PER_TASK),
        TF_CPP_MIN_LOG_LEVEL="1",
        PYTHONUNBUFFERED="1",
    )
    for k in [k for k in env if k.startswith("SLURM_") and k != "SLURM_CONF"]:
        del env[k]  # a test run inside a SLURM job must not hand its own job's variables on
    env.update(extra)
    return env


def _slurm(args: list, env: dict, timeout: float = 30, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout, cwd=cwd)


class Job:
    """One ``sbatch scripts/slurm_train.sbatch ...`` job, submitted from ``submit_dir``."""

    def __init__(self, options: list, args: list, *, env: dict, submit_dir: Path):
        self.env = env
        self.output = Path(submit_dir) / "job.out"
        cmd = ["sbatch", "--parsable", *COUNTS, f"--output={self.output}", *options, str(SBATCH), *args]
        done = _slurm(cmd, env, timeout=60, cwd=submit_dir)
        if done.returncode != 0:
            raise RuntimeError(f"{shlex.join(cmd)} failed: {done.stderr}")
        self.id = done.stdout.strip().split(";")[0]
        self.submitted = time.monotonic()
        self._moved_for: set = set()  # the restart counts whose begin time was moved

    @property
    def begin_times_moved(self) -> int:
        """How many times :meth:`wait` moved the begin time of a requeued start."""
        return len(self._moved_for)

    def info(self) -> dict:
        """``scontrol show job -o``'s fields (JobState, Reason, Restarts, ExitCode, ...); {} when unknown."""
        done = _slurm(["scontrol", "show", "job", "-o", self.id], self.env)
        if done.returncode != 0:
            return {}
        fields = {}
        for item in done.stdout.split():
            key, _, value = item.partition("=")
            fields.setdefault(key, value)
        return fields

    def wait(self, states, *, timeout: float, restarts: Optional[int] = None) -> dict:
        """Poll until the job is in one of ``states`` (with at least ``restarts`` restarts); bounded.

        A requeued job is held by slurmctld until 2 minutes after the requeue (``Reason=BeginTime``);
        the wait moves its start, once per requeue, to :data:`REQUEUE_START_S` seconds later, as a
        scheduler with free nodes would start it. Not to now: slurmd refuses to launch a job within the
        second in which it revoked the job's previous allocation ("Job N already killed, do not launch
        batch job"; seen once the node could start it at once, its CPUs not all taken by that allocation).
        """
        states = {states} if isinstance(states, str) else set(states)
        deadline = time.monotonic() + timeout
        info: dict = {}
        while time.monotonic() < deadline:
            info = self.info()
            state = info.get("JobState")
            if state in states and (restarts is None or int(info.get("Restarts", 0)) >= restarts):
                return info
            if state in END_STATES and state not in states and (restarts is None or state != "COMPLETED"):
                raise AssertionError(f"job {self.id} ended {state} ({info.get('ExitCode')}):\n{self.tail()}")
            restarted = int(info.get("Restarts", 0))
            if state == "PENDING" and info.get("Reason") == "BeginTime" and restarted not in self._moved_for | {0}:
                _slurm(["scontrol", "update", f"jobid={self.id}", f"StartTime=now+{REQUEUE_START_S}"], self.env)
                self._moved_for.add(restarted)
            time.sleep(0.5)
        raise TimeoutError(f"job {self.id} not {sorted(states)} after {timeout} s (last: {info}):\n{self.tail()}")

    def wait_for_files(self, paths, *, timeout: float) -> None:
        """Poll until every path exists; fails early when the job ends first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(Path(p).exists() for p in paths):
                return
            if self.info().get("JobState") in END_STATES:
                raise AssertionError(f"job {self.id} ended before {[str(p) for p in paths]}:\n{self.tail()}")
            time.sleep(0.3)
        raise TimeoutError(f"{[str(p) for p in paths]} not there after {timeout} s:\n{self.tail()}")

    def text(self) -> str:
        return self.output.read_text(errors="replace") if self.output.exists() else ""

    def tail(self, n: int = 4000) -> str:
        return self.text()[-n:]

    def end(self) -> None:
        """``scancel`` (nothing if the job has ended already)."""
        _slurm(["scancel", self.id], self.env)


def train_one_process(experiment: Path, workdir: Path, sets: list, *, cwd: Path) -> dict:
    """The same config in one process (no scheduler) with the job's global device layout, its
    :data:`JOB_DEVICES` CPU devices: its results.json.

    The same layout makes the comparison about the processes alone: the batch is sharded over 4 devices
    either way, so the sums over devices agree up to the order of the cross-process all-reduce (measured:
    7.5e-6 relative at most over the tiny config's 40 losses). Against one device they differ by up to
    1.6e-4 (the GenSim arm's step 17 on an AVX-512 CPU; under 1e-4 on an AVX2 one): float rounding that
    the SGD steps carry on, which is the device count's effect, not the cluster's."""
    env = job_env("")
    env.pop("SLURM_CONF")
    for k in ("GENSIM_TEST_HOLD_DIR", "GENSIM_TEST_HOLD_AT"):
        env.pop(k, None)
    env["XLA_FLAGS"] = with_device_count(env.get("XLA_FLAGS", ""), JOB_DEVICES)
    cmd = [env["GENSIM_JAX"], "train", str(experiment), "--config", "tiny", "--workdir", str(workdir)]
    if sets:
        cmd += ["--set", *sets]
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((workdir / "results.json").read_text())


def _same_results():
    """scripts/same_results.py, the comparison of two runs' results.json (timings and provenance left out)."""
    spec = importlib.util.spec_from_file_location("same_results", REPO / "scripts" / "same_results.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def differences(a, b, rtol: float = 1e-4, atol: float = 1e-6) -> list:
    """Where two results.json trees differ (timings and devices left out; floats to ``rtol``)."""
    same = _same_results()
    return same.differences(same.strip_volatile(a), same.strip_volatile(b), rtol=rtol, atol=atol)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not count)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"
