"""Time limits, requeue, a killed task and scancel, end to end under the local SLURM cluster.

Each job runs scripts/slurm_train.sbatch with 2 tasks on 1 node on the held experiment
(tests/cluster/held_experiment.py: the tiny experiment, 20 steps a arm, checkpoints every 5 steps, whose
first arm's data stream holds once at step HOLD_AT until the scheduler's SIGTERM reaches JAX's
preemption service, or the test releases it), so every event lands mid-run whatever the machine's load.
Where the run completes, its results.json equals the uninterrupted one-process run (``reference``).
Each test prints its wall time and the steps lost (done before the event, not in the checkpoint the
next start resumed from); docs/SCALING.md ("Multi-host GPU with SLURM") records them.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from pathlib import Path

import pytest

from tests.cluster import slurm

pytestmark = pytest.mark.slow

HOLD_AT = 16  # the first arm's stream holds here (the loop runs a few prefetched steps behind it)
KILL_WAIT_S = 10  # slurm.conf's KillWait (scripts/slurm_local.sh): SIGTERM, then SIGKILL this much later


def _submit(tmp_path: Path, conf: str, options: list, *, hold: bool = True, workdir: str = "W") -> slurm.Job:
    submit = tmp_path / "submit"
    hold_dir = tmp_path / "hold"
    submit.mkdir(exist_ok=True)
    hold_dir.mkdir(exist_ok=True)
    extra = {"GENSIM_TEST_HOLD_DIR": str(hold_dir), "GENSIM_TEST_HOLD_AT": str(HOLD_AT)} if hold else {}
    env = slurm.job_env(conf, **extra)
    if not hold:
        for k in ("GENSIM_TEST_HOLD_DIR", "GENSIM_TEST_HOLD_AT"):
            env.pop(k, None)
    return slurm.Job(options, [str(slurm.HELD), "tiny", workdir], env=env, submit_dir=submit)


def _held(tmp_path: Path) -> list:
    return [tmp_path / "hold" / f"held.{i}" for i in range(2)]


def _pids(tmp_path: Path) -> list:
    return [int(p.read_text()) for p in _held(tmp_path)]


def _resumed_at(text: str, num_steps: int | None = None) -> list:
    """The steps each start of the job resumed from (``resuming WORKDIR: ARM/run0/checkpoints at step N``),
    leaving out arms already at ``num_steps`` (finished in an earlier allocation: nothing to resume)."""
    steps = [int(s) for s in re.findall(r"checkpoints at step (\d+)", text)]
    return [s for s in steps if s != num_steps]


def _stopped_at(text: str) -> list:
    """The steps the loop stopped and saved at after a SIGTERM (``train: SIGTERM at step S of N``)."""
    return [int(s) for s in re.findall(r"train: SIGTERM at step (\d+) of", text)]


def _gensim_steps_done(workdir: Path) -> int:
    """The last step the first arm logged (metrics.jsonl, process 0): what the run had done."""
    path = workdir / "gensim" / "run0" / "metrics.jsonl"
    steps = [json.loads(ln).get("step", 0) for ln in path.read_text().splitlines() if ln.strip()]
    return max(steps, default=0)


def _complete_checkpoints(workdir: Path) -> list:
    """The first arm's complete checkpoint steps (orbax renames ``<step>.orbax-checkpoint-tmp`` when done)."""
    d = workdir / "gensim" / "run0" / "checkpoints"
    return sorted(int(p.name) for p in d.iterdir() if p.name.isdigit()) if d.is_dir() else []


def _wait_gone(pids: list, timeout: float) -> float:
    """Seconds until none of ``pids`` runs; raises after ``timeout``."""
    t0 = time.monotonic()
    while any(slurm.alive(p) for p in pids):
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"still running {timeout} s later: {[p for p in pids if slurm.alive(p)]}")
        time.sleep(0.1)
    return time.monotonic() - t0


def _job_processes(job_id: str) -> list:
    """Processes whose environment names this job (SLURM_JOB_ID): what an orphan would be."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            env = (d / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"SLURM_JOB_ID={job_id}".encode() in env and slurm.alive(int(d.name)):
            found.append(int(d.name))
    return found


def _assert_equals_reference(workdir: Path, reference: dict) -> None:
    result = json.loads((workdir / "results.json").read_text())
    assert result["devices"]["process_count"] == 2
    assert slurm.differences(result, reference) == []


def test_slurm_requeue_mid_run_resumes(slurm_conf, reference, tmp_path):
    t0 = time.monotonic()
    job = _submit(tmp_path, slurm_conf, ["--time=5"])
    try:
        job.wait_for_files(_held(tmp_path), timeout=240)
        t_event = time.monotonic()
        done = slurm._slurm(["scontrol", "requeue", job.id], job.env)
        assert done.returncode == 0, done.stderr
        info = job.wait("COMPLETED", timeout=300, restarts=1)
    finally:
        job.end()
    wall = time.monotonic() - t0
    out = job.text()
    workdir = tmp_path / "submit" / "W"
    assert int(info["Restarts"]) == 1
    # both tasks got SIGTERM, agreed on a step, saved it; the next start resumed there: no step lost
    assert sorted((tmp_path / "hold" / f"released.{i}").read_text() for i in range(2)) == ["notice", "notice"]
    stopped, resumed = _stopped_at(out), _resumed_at(out)
    assert len(stopped) == 1 and resumed == stopped, out[-3000:]
    assert "WARNING:absl" not in out and "preemption sync point" not in out, out[-3000:]
    _assert_equals_reference(workdir, reference)
    print(
        f"requeue: {wall:.1f} s from sbatch to COMPLETED ({time.monotonic() - t_event:.1f} s after the requeue, "
        f"begin time moved {job.begin_times_moved}x); stopped at step {stopped[0]}, resumed from {resumed[0]}: "
        f"{stopped[0] - resumed[0]} steps lost"
    )


def test_slurm_time_limit_signal_saves_and_requeues_itself(slurm_conf, reference, tmp_path):
    # a 2-minute limit with --signal=TERM@60: slurmctld checks time limits every 30 s and signals when the
    # time left is under the warning time + 30 s, so SIGTERM comes 30 to 60 s after the start (and 60 s
    # or more before the limit), after JAX's start-up (its preemption notifier comes with
    # jax.distributed.initialize, before the first step; the tasks reach HOLD_AT about 17-20 s after the
    # start), mostly while the stream holds at HOLD_AT; the run cannot finish in that allocation, the job
    # requeues itself, and a later allocation finishes it
    t0 = time.monotonic()
    job = _submit(tmp_path, slurm_conf, ["--time=2", "--signal=TERM@60"])
    try:
        info = job.wait("COMPLETED", timeout=480, restarts=1)
    finally:
        job.end()
    wall = time.monotonic() - t0
    out = job.text()
    restarts = int(info["Restarts"])
    assert restarts >= 1 and out.count("stopped before the end of the run; requeueing it") == restarts, out[-3000:]
    # on a busy machine the signal can come in the second arm: the next start then lists the first arm, done,
    # beside the second arm's step (seen under load: gensim at 20 of 20, simclr at 18)
    stopped, resumed = _stopped_at(out), _resumed_at(out, reference["config"]["num_steps"])
    # every allocation but the last stopped at a step, and the next one resumed there: no step lost
    assert len(stopped) == restarts and resumed == stopped, out[-3000:]
    _assert_equals_reference(tmp_path / "submit" / "W", reference)
    released = sorted(p.read_text() for p in (tmp_path / "hold").glob("released.*"))
    print(
        f"time limit: {wall:.1f} s from sbatch to COMPLETED over {restarts + 1} allocations (begin time moved "
        f"{job.begin_times_moved}x); stopped at {stopped}, resumed from {resumed}: 0 steps lost; holds released "
        f"by {released}"
    )


def test_slurm_sigkill_of_one_task_ends_the_other_and_the_next_start_resumes(slurm_conf, reference, tmp_path):
    t0 = time.monotonic()
    job = _submit(tmp_path, slurm_conf, ["--time=5"])
    try:
        job.wait_for_files(_held(tmp_path), timeout=240)
        pids = _pids(tmp_path)
        workdir = tmp_path / "submit" / "W"
        t_kill = time.monotonic()
        os.kill(pids[1], signal.SIGKILL)
        gone = _wait_gone(pids, timeout=60)  # --kill-on-bad-exit: srun ends task 0 at once
        # what the killed run left: its last logged step, its complete checkpoints (nothing writes any more)
        done_before = _gensim_steps_done(workdir)
        complete = _complete_checkpoints(workdir)
        info = job.wait("FAILED", timeout=120)
    finally:
        job.end()
    assert info["ExitCode"] != "0:0"
    assert _job_processes(job.id) == []
    # the next start (a resubmission of the same command, without the hold) resumes from the last complete
    # checkpoint (saved every 5 steps; a step the killed run was still writing is not read)
    again = _submit(tmp_path, slurm_conf, ["--time=5"], hold=False)
    try:
        again.wait("COMPLETED", timeout=300)
    finally:
        again.end()
    resumed = _resumed_at(again.text())
    assert complete and resumed == [complete[-1]], (complete, again.tail())
    _assert_equals_reference(tmp_path / "submit" / "W", reference)
    print(
        f"SIGKILL of task 1: both tasks gone {gone:.1f} s after the kill, job FAILED "
        f"({info['ExitCode']}); the next start resumed from step {resumed[0]} after {done_before} logged steps: "
        f"{done_before - resumed[0]} steps lost; {time.monotonic() - t0:.1f} s in all ({time.monotonic() - t_kill:.1f} s "
        "from the kill to the resubmitted run's end)"
    )


def test_slurm_scancel_ends_every_task_within_the_grace_time(slurm_conf, tmp_path):
    job = _submit(tmp_path, slurm_conf, ["--time=5"])
    try:
        job.wait_for_files(_held(tmp_path), timeout=240)
        pids = _pids(tmp_path)
        done = slurm._slurm(["scancel", job.id], job.env)
        assert done.returncode == 0, done.stderr
        # SIGTERM to every task, SIGKILL KillWait later; the margin is for slurmd's own steps on a busy machine
        gone = _wait_gone(pids, timeout=KILL_WAIT_S + 50)
        info = job.wait("CANCELLED", timeout=60)
    finally:
        job.end()
    assert info["JobState"] == "CANCELLED"
    assert _job_processes(job.id) == []  # no orphan: nothing of the job runs any more
    released = sorted(
        (tmp_path / "hold" / f"released.{i}").read_text()
        for i in range(2)
        if (tmp_path / "hold" / f"released.{i}").exists()
    )
    stopped = _stopped_at(job.text())
    print(
        f"scancel: every task gone {gone:.1f} s after scancel (KillWait {KILL_WAIT_S} s); holds released by "
        f"{released}; saved at {stopped or 'no step (killed before the save)'}"
    )
