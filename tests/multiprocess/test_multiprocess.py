"""The cluster path on real processes: 2 processes x 2 CPU devices (gloo collectives) vs 1 process.

Every run is ``python -m tests.multiprocess.worker`` started by :mod:`tests.multiprocess.harness`
(``XLA_FLAGS`` must be set before jax is imported, so nothing here runs in the pytest process).
The worker trains a tiny model with :func:`gensim_jax.training.train` on a mesh of all devices of
all processes; each process loads only its rows of the deterministic global batch.  Checked:

a. GenSim regression (Beta-Bernoulli target, cosine) and SimCLR (NT-Xent, two views, BatchNorm
   head): 2 processes x 2 devices, 1 process x 4 devices and 1 process x 1 device give the same
   per-step losses, final parameters and BatchNorm statistics (1e-5);
b. a checkpoint written by 2 processes (FSDP: parameters split across the processes) resumes in
   1 process (replicated) and the reverse, and the resumed curve and final variables (exported by
   ``training.export_variables``, which gathers split leaves) equal the uninterrupted run;
c. SIGTERM (to both processes, or to one): both stop at the same step with a checkpoint (JAX's
   preemption sync manager, ``Checkpointer.reached_preemption``), and the resumed run finishes the
   uninterrupted curve;
d. SIGKILL of one process: the other exits with JAX's "another task died" error within the
   heartbeat timeout (no hang), and the run resumes from the last complete checkpoint.

All subprocesses share one persistent compilation cache (the test session's, so both pytest workers
and the other subprocess tests share it too), which halves the start-up of the later runs; every wait is bounded and every child is killed on the way
out.  The tests that took more than 30 s on the shared 2-core machine are marked ``slow``.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import jax
import numpy as np
import pytest

from gensim_jax.training import load_exported
from tests.multiprocess.harness import Cluster, run, worker_args

N = 20  # steps of every run
K = 10  # save/resume boundary of (b)
TOL = 1e-5
RUN_TIMEOUT = 150  # seconds for one run of the (loaded, 2-core) CI machine; far above the ~5-15 s it takes
HEARTBEAT = 6  # seconds after which JAX declares a silent process dead (test d's setting)


@pytest.fixture(scope="module")
def jax_env(tmp_path_factory) -> dict:
    """A persistent compilation cache shared by the subprocesses of this module: the test session's
    (tests/conftest.py; both pytest workers then share the compiled steps), else one of its own."""
    cache = os.environ.get("JAX_COMPILATION_CACHE_DIR") or tmp_path_factory.mktemp("jax_cache")
    return {
        "JAX_COMPILATION_CACHE_DIR": str(cache),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
    }


def train_run(root: Path, case: str, processes: int, devices: int, num_steps: int = N, env=None, **options):
    """One (possibly multi-process) run: ``(done records per case, by process; process 0's final variables
    per case; the ready records, by process)``."""
    results = run(
        worker_args(case, root, num_steps, out=root / "out", **options),
        processes=processes,
        devices=devices,
        timeout=RUN_TIMEOUT,
        env=env,
    )
    cases = case.split(",")
    done = {c: [r.done(c) for r in results] for c in cases}
    params = {c: exported(root / "out" / c) for c in cases}
    return done, params, [r.events("ready")[0] for r in results]


def exported(directory: Path) -> dict:
    """The variables of an export (``training.load_exported``) as ``{"params/hidden/kernel": array, ...}``."""
    _, variables, _ = load_exported(directory)
    return {
        "/".join(str(k.key) for k in path): np.asarray(v) for path, v in jax.tree_util.tree_leaves_with_path(variables)
    }


def max_diff(a: dict, b: dict) -> float:
    assert sorted(a) == sorted(b), (sorted(a), sorted(b))
    return max(float(np.max(np.abs(np.asarray(a[k], np.float64) - np.asarray(b[k], np.float64)))) for k in a)


def losses(record: dict) -> dict:
    return {int(k): v for k, v in record["losses"].items()}


def metrics_losses(workdir: Path) -> dict:
    """Per-step losses of ``metrics.jsonl`` (process 0's record of the whole run, across restarts)."""
    lines = [json.loads(x) for x in (workdir / "metrics.jsonl").read_text().splitlines() if x.strip()]
    steps = [r["step"] for r in lines if "loss" in r]
    assert steps == sorted(set(steps)), f"metrics.jsonl steps repeat or go back: {steps}"
    return {r["step"]: r["loss"] for r in lines if "loss" in r}


def assert_same_curve(got: dict, want: dict, steps) -> None:
    steps = list(steps)
    assert sorted(got) == steps, (sorted(got), steps)
    diff = max(abs(got[s] - want[s]) for s in steps)
    assert diff <= TOL * max(1.0, max(abs(want[s]) for s in steps)), (diff, got, want)


@pytest.fixture(scope="module")
def reference(tmp_path_factory, jax_env):
    """Uninterrupted runs of both cases in 1 process x 1 device: ``(losses, variables)`` per case."""
    root = tmp_path_factory.mktemp("ref_1x1")
    done, params, _ = train_run(root, "gensim,ntxent", 1, 1, env=jax_env)
    return {c: (losses(done[c][0]), params[c]) for c in done}


# --------------------------------------------------------------------------------------------
# a. 2 processes x 2 devices == 1 process x 4 devices == 1 process x 1 device
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("procs,devs", [(2, 2), (1, 4)], ids=["2procs-x-2devices", "1proc-x-4devices"])
def test_two_processes_equal_one_process(tmp_path, reference, jax_env, procs, devs):
    name = f"{procs}x{devs}"
    # one layout per test: a run of both cases against the 1 x 1 reference
    done, params, ready = train_run(tmp_path / name, "gensim,ntxent", procs, devs, env=jax_env)
    # the run really had this layout (the 2-process run: 4 devices, 2 local to each process)
    assert [(r["process_count"], r["devices"], r["local_devices"]) for r in ready] == [(procs, 4, devs)] * procs
    for case in ("gensim", "ntxent"):
        ref_losses, ref_params = reference[case]
        records = done[case]
        assert [r["process_index"] for r in records] == list(range(procs))
        # every process logged the same (global) losses and ends with the same variables
        assert all(r["losses"] == records[0]["losses"] for r in records), (name, case)
        assert len({r["digest"] for r in records}) == 1, (name, case, records)
        assert_same_curve(losses(records[0]), ref_losses, range(1, N + 1))
        assert_same_curve(metrics_losses(tmp_path / name / case), ref_losses, range(1, N + 1))
        assert max_diff(params[case], ref_params) <= TOL, (name, case)
        if case == "ntxent":  # the BatchNorm head's running statistics are global-batch statistics
            assert any(k.startswith("batch_stats/") for k in params[case])


# --------------------------------------------------------------------------------------------
# b. the process count changes between save and resume
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("first,second", [((2, 2), (1, 4)), ((1, 1), (2, 2))], ids=["2procs-then-1", "1proc-then-2"])
def test_checkpoint_resumes_across_process_counts(tmp_path, reference, jax_env, first, second):
    """The 2-process side runs FSDP over all 4 devices: each process holds (and writes) half of every
    parameter matrix and of its momentum; the 1-process side has them replicated."""
    case = "ntxent"  # BatchNorm statistics, momentum buffers and the step RNG all cross the change
    ref_losses, ref_params = reference[case]
    fsdp = lambda layout: 4 if layout[0] == 2 else 1  # noqa: E731
    done1, _, _ = train_run(tmp_path, case, *first, num_steps=K, checkpoint_every=5, fsdp=fsdp(first), env=jax_env)
    assert all(r["final_step"] == K and not r["preempted"] for r in done1[case])
    assert sorted(p.name for p in (tmp_path / case / "checkpoints").iterdir()) == ["10", "5"]
    done2, params2, _ = train_run(tmp_path, case, *second, checkpoint_every=5, fsdp=fsdp(second), env=jax_env)
    two = done1 if first[0] == 2 else done2
    # the 2-process run really split parameters across processes (what jax.device_get cannot read)
    assert all(r["params_split_across_processes"] > 0 for r in two[case]), two[case]
    for r in done2[case]:
        assert r["start_step"] == K and r["final_step"] == N
        assert_same_curve(losses(r), ref_losses, range(K + 1, N + 1))
    assert_same_curve(metrics_losses(tmp_path / case), ref_losses, range(1, N + 1))
    assert max_diff(params2[case], ref_params) <= TOL


# --------------------------------------------------------------------------------------------
# c. SIGTERM: all processes stop at one step with a checkpoint; the resumed run is exact
# --------------------------------------------------------------------------------------------

PAUSE_AT = 8  # the stream holds position 8 (the batch of step 9) until the test has sent SIGTERM


@pytest.mark.slow
@pytest.mark.parametrize("target", [None, 1], ids=["both", "only-process-1"])
def test_sigterm_stops_all_processes_at_one_step_and_resumes_exactly(tmp_path, reference, jax_env, target):
    case = "gensim"
    ref_losses, ref_params = reference[case]
    go = tmp_path / "agreed"
    args = worker_args(
        case,
        tmp_path,
        N,
        out=tmp_path / "out",
        checkpoint_every=5,
        pause_at=PAUSE_AT,
        pause_until=go,
        pause=RUN_TIMEOUT,
    )
    # TF_CPP_MIN_LOG_LEVEL=0: JAX's preemption sync manager logs (INFO) when the processes have agreed
    with Cluster(args, processes=2, devices=2, env={**jax_env, "TF_CPP_MIN_LOG_LEVEL": "0"}) as cluster:
        cluster.wait_for_event("paused", timeout=RUN_TIMEOUT)
        cluster.signal(signal.SIGTERM, process_id=target)
        # The agreement (every process posts the last step it checked, the stop step is the largest + 1)
        # takes one round trip through the coordination service; a loop that runs on meanwhile stops
        # later, or not at all if it reaches num_steps first (it then saves the final step as usual).
        # Hold the stream until it is done, so that the stop step is deterministic.
        cluster.wait_for_stderr("Preemption sync counter is set", timeout=RUN_TIMEOUT)
        go.touch()
        results = cluster.wait(timeout=RUN_TIMEOUT)
    assert [r.returncode for r in results] == [0, 0], [r.stderr[-2000:] for r in results]
    records = [r.done(case) for r in results]
    stop = PAUSE_AT + 1  # the steps checked before the pause: 1..PAUSE_AT
    assert [r["final_step"] for r in records] == [stop, stop], records
    assert all(r["preempted"] and r["stop_signal"] == "SIGTERM" for r in records), records
    assert str(stop) in {p.name for p in (tmp_path / case / "checkpoints").iterdir()}
    assert_same_curve(losses(records[0]), ref_losses, range(1, stop + 1))

    done, params, _ = train_run(tmp_path, case, 2, 2, checkpoint_every=5, env=jax_env)
    for r in done[case]:
        assert r["start_step"] == stop and r["final_step"] == N and not r["preempted"]
        assert_same_curve(losses(r), ref_losses, range(stop + 1, N + 1))
    assert_same_curve(metrics_losses(tmp_path / case), ref_losses, range(1, N + 1))
    assert max_diff(params[case], ref_params) <= TOL


# --------------------------------------------------------------------------------------------
# d. SIGKILL of one process: the other fails fast and clearly; resume from the last complete checkpoint
# --------------------------------------------------------------------------------------------

DIE_AT = 12  # the killed process dies when it asks for the batch of step 13 (checkpoints at 5 and 10)


@pytest.mark.parametrize(
    "victim",
    [
        pytest.param(1, id="kill-process-1", marks=pytest.mark.slow),  # waits a heartbeat
        pytest.param(0, id="kill-coordinator", marks=pytest.mark.slow),
    ],
)
def test_sigkill_of_one_process_fails_the_other_and_resumes(tmp_path, reference, jax_env, victim):
    case = "gensim"
    ref_losses, ref_params = reference[case]
    args = worker_args(
        case, tmp_path, N, checkpoint_every=5, die_at=DIE_AT, die_process=victim, heartbeat_timeout=HEARTBEAT
    )
    survivor = 1 - victim
    with Cluster(args, processes=2, devices=2, env=jax_env) as cluster:
        cluster.wait_for_event("dying", timeout=RUN_TIMEOUT, process_ids=[victim])
        # bounded: the survivor must be gone within the heartbeat timeout plus a margin for a loaded machine
        results = cluster.wait(timeout=HEARTBEAT + 40)
    assert results[victim].returncode == -signal.SIGKILL
    dead = results[survivor]
    assert dead.returncode != 0 and not dead.events("done")
    assert "JAX distributed service detected fatal errors" in dead.stderr, dead.stderr[-3000:]
    assert "another task died" in dead.stderr or "Connection reset by peer" in dead.stderr, dead.stderr[-3000:]

    ckpt_dir = tmp_path / case / "checkpoints"
    complete = sorted(int(p.name) for p in ckpt_dir.iterdir() if p.name.isdigit())
    assert complete and max(complete) <= DIE_AT, complete  # a save cut short stays a *.orbax-checkpoint-tmp
    done, params, _ = train_run(tmp_path, case, 2, 2, checkpoint_every=5, env=jax_env)
    for r in done[case]:
        assert r["start_step"] == max(complete) and r["final_step"] == N
        assert_same_curve(losses(r), ref_losses, range(max(complete) + 1, N + 1))
    assert_same_curve(metrics_losses(tmp_path / case), ref_losses, range(1, N + 1))
    assert max_diff(params[case], ref_params) <= TOL
