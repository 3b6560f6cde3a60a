"""How the cost of compiling one more small program grows with the programs a process keeps alive.

A pytest worker runs a thousand tests or more, and the jitted functions and JAX's per-shape caches of
eager operations keep every program they compiled alive for the rest of the session. This bench
compiles ``--programs`` distinct small jitted functions (``tanh(x) * i + 1`` on a new shape each) in one
process, keeps each one alive, and prints, per window of ``--window`` programs, the milliseconds a
program took to trace, lower to StableHLO and compile (``jax.monitoring``), and in all. Each mode runs in
a fresh interpreter with the test session's XLA flags (tests/conftest.py) and JAX's persistent cache off:

* ``fresh``: JAX as it is, a new MLIR context for every lowering (each kept program keeps its own alive);
* ``reuse``: the test session's :func:`tests.conftest.reuse_mlir_contexts` (a context serves 200
  lowerings of a thread).

Measured on the 2-core AVX2 machine (docs/performance_log.md, "The test loop, fourth pass";
docs/bench_results/2026-11-29_live_programs.jsonl): lowering grows from 22 ms to 71 ms a program over 2,400
kept programs with fresh contexts, and stays at 4-6 ms with reused ones.

Usage::

    python -m bench.suite.live_programs [--programs 2400] [--window 400] [--modes fresh reuse] [--quick]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from bench.suite.compile_flags import COMPILE_EVENTS, run_in_fresh_interpreter
from tests.conftest import TEST_XLA_FLAGS, xla_accepts

MODES = ("fresh", "reuse")


def measure(mode: str, programs: int, window: int) -> list:
    """In this process: one row per window of ``window`` programs (their mean milliseconds)."""
    import jax
    import jax.monitoring
    import jax.numpy as jnp
    from jax._src.interpreters import mlir

    made = [0]  # MLIR contexts created, under either mode
    create = mlir.make_ir_context

    def counted():
        made[0] += 1
        return create()

    mlir.make_ir_context = counted
    if mode == "reuse":
        from tests.conftest import reuse_mlir_contexts

        assert reuse_mlir_contexts(), "this JAX has no jax._src.interpreters.mlir.make_ir_context to reuse"
    totals = dict.fromkeys(COMPILE_EVENTS.values(), 0.0)

    def listen(event, duration, **_):
        if event in COMPILE_EVENTS:
            totals[COMPILE_EVENTS[event]] += duration

    jax.monitoring.register_event_duration_secs_listener(listen)
    kept, rows = [], []
    t0 = time.perf_counter()
    for i in range(1, programs + 1):
        f = jax.jit(lambda x, i=i: jnp.tanh(x) * i + 1.0)
        f(jnp.ones((i % 97 + 1, i // 97 + 1), jnp.float32)).block_until_ready()
        kept.append(f)  # the program stays alive, as a test session's do
        if i % window == 0:
            ms = lambda s: round(s / window * 1e3, 1)  # noqa: E731
            rows.append(
                {
                    "bench": "suite_live_programs",
                    "mode": mode,
                    "kept_programs": i,
                    "contexts_made": made[0],
                    "ms_per_program": ms(time.perf_counter() - t0),
                    **{k.replace("_s", "_ms"): ms(v) for k, v in totals.items()},
                }
            )
            totals = dict.fromkeys(totals, 0.0)
            t0 = time.perf_counter()
    return rows


def run_mode(mode: str, programs: int, window: int) -> list:
    """``measure`` in a fresh interpreter with the session's XLA flags, no persistent cache."""
    args = ["--child", mode, "--programs", str(programs), "--window", str(window)]
    xla_flags = " ".join(xla_accepts(TEST_XLA_FLAGS))
    return run_in_fresh_interpreter("bench.suite.live_programs", args, xla_flags, what=mode, timeout=3600)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=2400)
    ap.add_argument("--window", type=int, default=400)
    ap.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    ap.add_argument("--quick", action="store_true", help="60 programs in windows of 20 (smoke run)")
    ap.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.quick:
        a.programs, a.window = 60, 20
    if a.programs < a.window or a.window < 1:
        ap.error(f"--programs ({a.programs}) must be at least --window ({a.window}), which must be positive")
    if a.child:
        for row in measure(a.child, a.programs, a.window):
            print(json.dumps(row), flush=True)
        return 0
    for mode in a.modes:
        for row in run_mode(mode, a.programs, a.window):
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
