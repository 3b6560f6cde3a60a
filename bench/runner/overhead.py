"""The runner's overhead: steps/s of :func:`gensim_jax.training.train` against a bare ``jax.jit`` loop.

Both drive the SAME jitted step (the runner's :class:`~gensim_jax.training.runner.StepCache` step on
the run's mesh: an MLP 64 -> 512 -> 128 with GenSim regression onto the Beta-Bernoulli target over
all pairs of a batch of 512) over the same host batches.  The bare loop is
``for b in batches: state, m = step(state, shard_batch(b))`` over the same live host stream, with one
``block_until_ready`` at the end; the runner adds prefetching, metric windows, records and timing.
The runner's per-step cost is measured as the difference of an ``N``- and a ``2N``-step
``train()`` call divided by ``N``, so the fixed costs of a call (config record, restore attempt,
final checkpoint) cancel; they are reported separately as ``fixed_s``.  Target: runner steps/s
>= 0.9 x the bare loop's (``ratio = ours_s / reference_s <= 1 / 0.9``).

``--processes 2`` repeats the measurement with 2 local JAX processes of 1 CPU device each (gloo
collectives), every process feeding its half of each global batch.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

TARGET = 1 / 0.9


def _problem(batch: int, seed: int = 0):
    import numpy as np

    rng = np.random.default_rng(seed)
    features = (rng.random((4096, 24)) > 0.5).astype(np.float32)
    projection = rng.normal(size=(24, 64)).astype(np.float32)
    x = features @ projection

    def batches(position: int):
        i = position
        while True:
            idx = np.random.default_rng((seed, i)).choice(len(x), batch, replace=False)
            yield {"x": x[idx], "features": features[idx]}
            i += 1

    return batches


def _setup(batch: int):
    import jax
    import optax

    from gensim_jax.models import get_model
    from gensim_jax.training import BetaBernoulliTarget, GenSimRegression, create_train_state
    from gensim_jax.training.experiment import TrainConfig
    from gensim_jax.training.runner import StepCache, make_run_mesh

    mesh = make_run_mesh(TrainConfig(batch_size=batch))
    model = get_model("mlp", in_features=64, hidden=512, embed_dim=128)
    tx = optax.adam(1e-3)
    objective = GenSimRegression(target=BetaBernoulliTarget(), input_key="x")
    make_state = lambda: create_train_state(model, tx, jax.random.key(0))  # noqa: E731
    cache = StepCache(mesh)
    return mesh, make_state, objective, cache


def measure(batch: int = 512, steps: int = 200, repeats: int = 3, workdir: str | None = None) -> dict:
    """``{"bare_s", "runner_s", "fixed_s", ...}``: seconds per step of both loops (medians over repeats)."""
    import statistics

    import jax

    from gensim_jax import parallel
    from gensim_jax.training import train
    from gensim_jax.training.experiment import HostShard

    mesh, make_state, objective, cache = _setup(batch)
    rows = HostShard.of_this_process(batch).rows
    whole = _problem(batch)
    factory = lambda position: ({k: v[rows] for k, v in b.items()} for b in whole(position))  # noqa: E731
    step = cache.get(parallel.place_state(make_state(), mesh), objective)

    def bare(n: int) -> float:
        state = parallel.place_state(make_state(), mesh)
        t0 = time.perf_counter()
        for b in itertools.islice(factory(0), n):  # the same host stream, generated as it is consumed
            state, metrics = step(state, parallel.shard_batch(b, mesh))
        jax.block_until_ready((state, metrics))
        return time.perf_counter() - t0

    root = Path(workdir or tempfile.mkdtemp(prefix="runner_overhead_"))
    calls = iter(range(10**6))  # every process names its runs alike: checkpoints are written together

    def runner(n: int, tensorboard: bool = True) -> float:
        d = root / f"run{next(calls)}"
        if True:
            t0 = time.perf_counter()
            train(
                make_state(),
                objective,
                factory,
                num_steps=n,
                workdir=d,
                mesh=mesh,
                log_every=50,
                checkpoint_every=10**9,
                progress=False,
                step_fn=step,
                tensorboard=tensorboard,
            )
            return time.perf_counter() - t0

    bare(10), runner(10)  # compile and warm up
    bare_s, runner_s, plain_s, fixed_s = [], [], [], []
    for _ in range(repeats):  # N and 2N steps: the difference is the per-step cost
        b1, r1, p1 = bare(steps), runner(steps), runner(steps, tensorboard=False)
        b2, r2, p2 = bare(2 * steps), runner(2 * steps), runner(2 * steps, tensorboard=False)
        bare_s.append((b2 - b1) / steps)
        runner_s.append((r2 - r1) / steps)
        plain_s.append((p2 - p1) / steps)
        fixed_s.append(r1 - steps * runner_s[-1])
    return {
        "bare_s": statistics.median(bare_s),
        "runner_s": statistics.median(runner_s),
        "runner_no_events_s": statistics.median(plain_s),
        "fixed_s": statistics.median(fixed_s),
        "batch": batch,
        "steps": steps,
        "processes": jax.process_count(),
        "devices": jax.device_count(),
    }


def _line(m: dict, label: str) -> dict:
    ratio = m["runner_s"] / m["bare_s"]
    return {
        "bench": "runner_overhead",
        "params": {
            "case": label,
            "batch": m["batch"],
            "steps": m["steps"],
            "processes": m["processes"],
            "devices": m["devices"],
        },
        "ours_s": round(m["runner_s"], 6),
        "reference": "bare jax.jit loop over the same step",
        "reference_s": round(m["bare_s"], 6),
        "ratio": round(ratio, 3),
        "target": round(TARGET, 3),
        "met": ratio <= TARGET,
        "runner_steps_per_s": round(1 / m["runner_s"], 1),
        "bare_steps_per_s": round(1 / m["bare_s"], 1),
        "fixed_s": round(m["fixed_s"], 3),
        # the share of steps/s kept with TensorBoard events on (target >= 0.98)
        "kept_with_events": round(m["runner_no_events_s"] / m["runner_s"], 3),
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure_processes(processes: int, batch: int, steps: int, timeout: float = 600.0) -> dict:
    """Run :func:`measure` in ``processes`` local JAX processes (1 CPU device each); process 0's result."""
    port = _free_port()
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS="--xla_force_host_platform_device_count=1")
    root = Path(__file__).resolve().parents[2]
    workdir = tempfile.mkdtemp(prefix="runner_overhead_mp_")
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bench.runner.overhead",
                "--worker",
                str(i),
                "--processes",
                str(processes),
                "--port",
                str(port),
                "--batch",
                str(batch),
                "--steps",
                str(steps),
                "--workdir",
                workdir,
            ],
            cwd=root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(processes)
    ]
    try:  # every wait bounded: a dead peer cannot hang the benchmark
        outs = [p.communicate(timeout=timeout) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    if any(p.returncode for p in procs):
        raise RuntimeError("a benchmark process failed: " + " | ".join(err[-500:] for _, err in outs))
    return json.loads(outs[0][0].strip().splitlines()[-1])


def run(quick: bool = False):
    """The suite's lines: 1 process (all local devices), then 2 local processes."""
    batch, steps = (128, 20) if quick else (512, 200)
    yield _line(measure(batch, steps, repeats=1 if quick else 3), "1 process")
    yield _line(measure_processes(2, batch, steps), "2 processes x 1 device")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--port", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--workdir", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        from gensim_jax import parallel

        parallel.initialize_distributed(
            f"127.0.0.1:{args.port}", args.processes, args.worker, initialization_timeout=120
        )
        print(json.dumps(measure(args.batch, args.steps, repeats=3, workdir=args.workdir)), flush=True)
        return 0
    from bench._harness import emit

    for line in run(quick=args.quick):
        emit(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
