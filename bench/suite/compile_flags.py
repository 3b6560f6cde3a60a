"""Compile time of the test suite's kind of programs under sets of XLA:CPU flags, each set in a fresh process.

The test suite compiles far more than it runs (tests/conftest.py). This bench measures what a flag set
does to that: for every program it makes the first call of a jitted function, splitting the call's time
into JAX's tracing, lowering to StableHLO and XLA's backend compile (``jax.monitoring`` events), then
times one more call. ``XLA_FLAGS`` is read once per process, so every flag set runs in its own
interpreter, with JAX's persistent compilation cache off; the sets alternate over ``--repeats`` rounds
and the medians are reported. The loss of each program is printed in full, so that a flag set that
changed a result beyond float rounding shows.

Programs (what the tests compile most often):

* ``step:<model>``: the library's training step (``make_train_step``, CrossEntropy, Adam) of a Flax
  encoder at 32 x 32 px, batch 4 (CORnet-S: batch 2);
* ``estimator``: :func:`gensim_jax.testing.estimate_log_similarity` of a 5-feature Beta-Bernoulli model,
  32 pairs, 20,000 samples (tests/testing/test_shipped_kernels.py);
* ``eager``: small jnp operations outside any jit (``x * 2 + 1`` and its sum, ``tanh``, a slice) on 150
  shapes, one program per operation and shape: what most tests compile (``compiles`` counts them, so
  ``first_call_s / compiles`` is the cost of one).

Flag sets: ``default`` (none), ``level0`` (``--xla_backend_optimization_level=0``) and ``tests`` (the test
session's, :data:`TESTS`: level 0 and XLA:CPU's loop emitters instead of its MLIR fusion emitters), each
set less the flags this jaxlib does not know (jaxlib 0.12 has no loop emitters: its ``tests`` is ``level0``).
``--also FLAG`` adds the set ``tests+FLAG`` (the session's flags and ``--FLAG``) for each FLAG given.
Results are in docs/performance_log.md ("The test loop", "The test loop, third pass").

Usage::

    python -m bench.suite.compile_flags [--repeats 2] [--sets default level0 tests] [--programs ...] [--quick]
    python -m bench.suite.compile_flags --programs eager --sets tests --also xla_cpu_use_xnnpack=false
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import TEST_XLA_FLAGS as TESTS  # the test session's flags
from tests.conftest import xla_accepts

REPO = Path(__file__).resolve().parents[2]
FLAG_SETS = {"default": (), "level0": TESTS[:1], "tests": TESTS}
PROGRAMS = ("step:cornet_z", "step:resnet18", "step:cornet_s", "estimator")
OTHER_PROGRAMS = ("eager",)
QUICK_PROGRAMS = ("step:cornet_z",)
#: JAX's compile-phase events (``jax.monitoring``) and the names this bench and bench.suite.session_profile give them.
COMPILE_EVENTS = {
    "/jax/core/compile/jaxpr_trace_duration": "trace_s",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower_s",
    "/jax/core/compile/backend_compile_duration": "compile_s",
}


def _step_program(model: str, quick: bool):
    import jax.numpy as jnp
    import numpy as np
    import optax

    from gensim_jax.models import get_model
    from gensim_jax.training import create_train_state, make_train_step
    from gensim_jax.training.objectives import CrossEntropy

    size, batch = (16, 2) if quick else (32, 2 if model == "cornet_s" else 4)
    rng = np.random.default_rng(0)
    data = {
        "image": jnp.asarray(rng.standard_normal((batch, size, size, 3)).astype(np.float32)),
        "label": jnp.asarray(rng.integers(0, 10, batch), jnp.int32),
    }
    state = create_train_state(
        get_model(model, num_classes=10), optax.adam(1e-3), 0, example_input=jnp.zeros((1, size, size, 3))
    )
    step = make_train_step(CrossEntropy())
    holder = {"state": state}

    def call():
        holder["state"], metrics = step(holder["state"], data)
        return float(metrics["loss"])

    return call


def _estimator_program(quick: bool):
    import jax
    import numpy as np

    from gensim_jax.testing import beta_bernoulli_model, estimate_log_similarity, sample_pairs

    model = beta_bernoulli_model(5, np.array([0.5, 1.0, 2.0, 0.7, 3.0]), np.array([1.5, 1.0, 0.5, 2.0, 1.0]))
    x1, x2 = sample_pairs(model, jax.random.key(0), 32)
    samples = 2_000 if quick else 20_000

    def call():
        est = estimate_log_similarity(model, x1, x2, jax.random.key(1), samples)
        return float(np.mean(est.log_similarity))

    return call


def _eager_program(quick: bool):
    import jax.numpy as jnp

    shapes = range(1, 11 if quick else 151)

    def call():
        total = 0.0
        for n in shapes:
            x = jnp.ones((n, 3))
            total += float((x * 2 + 1).sum()) + float(jnp.tanh(x)[: n // 2 + 1].sum())
        return total

    return call


def _program(name: str, quick: bool):
    if name == "estimator":
        return _estimator_program(quick)
    if name == "eager":
        return _eager_program(quick)
    return _step_program(name.split(":")[1], quick)


def measure(program: str, quick: bool = False) -> dict:
    """In this process: the first call of ``program`` split into trace, lower and compile seconds, the
    first call's wall time, one more call's wall time, and the loss (or mean estimate) of the first call."""
    import jax.monitoring

    call = _program(program, quick)
    totals = dict.fromkeys(COMPILE_EVENTS.values(), 0.0)
    hits, compiles = [], []

    def listen(event, duration, **_):
        if event in COMPILE_EVENTS:
            totals[COMPILE_EVENTS[event]] += duration
        if COMPILE_EVENTS.get(event) == "compile_s":
            compiles.append(duration)

    def count_hits(event, **_):
        if event == "/jax/compilation_cache/cache_hits":
            hits.append(event)

    jax.monitoring.register_event_duration_secs_listener(listen)
    jax.monitoring.register_event_listener(count_hits)
    t0 = time.perf_counter()
    value = call()
    first = time.perf_counter() - t0
    jax.monitoring.unregister_event_duration_listener(listen)
    jax.monitoring.unregister_event_listener(count_hits)
    t0 = time.perf_counter()
    call()
    again = time.perf_counter() - t0
    return {
        "program": program,
        **{k: round(v, 3) for k, v in totals.items()},
        "compiles": len(compiles),
        "first_call_s": round(first, 3),
        "call_s": round(again, 4),
        "value": repr(value),
        "persistent_cache_hits": len(hits),
        "xla_flags_seen": os.environ.get("XLA_FLAGS", ""),
    }


def run_in_fresh_interpreter(module: str, args: list, xla_flags: str, *, what: str, timeout: float = 900) -> list:
    """``python -m module ARGS`` in a fresh interpreter with ``XLA_FLAGS=xla_flags``, CPU devices and the
    persistent compilation cache off; the JSON lines it printed. ``what`` names the run in an error."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_COMPILATION_CACHE")}
    env.update(
        XLA_FLAGS=xla_flags,
        JAX_PLATFORMS="cpu",
        JAX_ENABLE_COMPILATION_CACHE="false",
        PYTHONPATH=str(REPO) + os.pathsep + env.get("PYTHONPATH", ""),
        TF_CPP_MIN_LOG_LEVEL="3",
    )
    done = subprocess.run(
        [sys.executable, "-m", module, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout
    )
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def _child(flag_set: str, xla_flags: str, programs, quick: bool) -> list[dict]:
    """Run ``programs`` in a fresh interpreter with ``XLA_FLAGS=xla_flags`` (those of ``flag_set``)."""
    args = ["--child", *programs] + (["--quick"] if quick else [])
    return run_in_fresh_interpreter("bench.suite.compile_flags", args, xla_flags, what=f"flag set {flag_set!r}")


def run(sets=tuple(FLAG_SETS), programs=PROGRAMS, repeats: int = 2, quick: bool = False, also=()) -> list[dict]:
    """One JSON line per (program, flag set): medians over ``repeats`` alternated rounds; each flag of
    ``also`` (``name=value``, no leading dashes) adds the set ``tests+name=value``."""
    unknown = [s for s in sets if s not in FLAG_SETS]
    if unknown:
        raise ValueError(f"flag sets must be among {sorted(FLAG_SETS)}; got {unknown}")
    flag_sets = {s: FLAG_SETS[s] for s in sets} | {f"tests+{f}": (*TESTS, f"--{f}") for f in also}
    sets = tuple(flag_sets)
    xla_flags = {s: " ".join(xla_accepts(f)) for s, f in flag_sets.items()}
    rows: dict = {}
    for r in range(repeats):
        order = list(sets) if r % 2 == 0 else list(reversed(sets))
        for s in order:
            for row in _child(s, xla_flags[s], programs, quick):
                rows.setdefault((row["program"], s), []).append(row)
    lines = []
    for program in programs:
        base = rows[(program, sets[0])]
        for s in sets:
            got = rows[(program, s)]
            med = {
                k: round(statistics.median(g[k] for g in got), 4)
                for k in (*COMPILE_EVENTS.values(), "compiles", "first_call_s", "call_s")
            }
            line = {"bench": "compile_flags", "program": program, "flags": s, "xla_flags": xla_flags[s]}
            line.update(med, values=sorted({g["value"] for g in got}), repeats=len(got), quick=quick)
            line.update(
                persistent_cache_hits=sum(g["persistent_cache_hits"] for g in got),
                xla_flags_seen=sorted({g["xla_flags_seen"] for g in got}),
            )
            if s != sets[0]:
                line["compile_vs_" + sets[0]] = round(
                    med["compile_s"] / statistics.median(g["compile_s"] for g in base), 3
                )
            lines.append(line)
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", nargs="+", choices=tuple(FLAG_SETS), default=list(FLAG_SETS))
    ap.add_argument(
        "--programs", nargs="+", choices=PROGRAMS + OTHER_PROGRAMS, help="default: every step and the estimator"
    )
    ap.add_argument(
        "--also", nargs="+", default=[], metavar="FLAG", help="add the set tests+FLAG (name=value, no dashes)"
    )
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="one small program, tiny sizes (smoke run)")
    ap.add_argument("--child", nargs="+", metavar="PROGRAM", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        for program in a.child:
            print(json.dumps(measure(program, a.quick)), flush=True)
        return 0
    if a.repeats < 1:
        ap.error(f"--repeats must be >= 1; got {a.repeats}")
    programs = a.programs or (QUICK_PROGRAMS if a.quick else PROGRAMS)
    for line in run(tuple(a.sets), tuple(programs), a.repeats, a.quick, tuple(a.also)):
        print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
